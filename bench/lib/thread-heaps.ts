// Heap snapshots of every thread of a running Node.js process started with --inspect: its main
// thread and its worker threads (tend's worker runs its workflows in one), through the inspector
// protocol (NodeWorker attaches to each worker thread; HeapProfiler writes the snapshot in chunks).
// For the benchmarks that look for what a process holds at its peak.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

interface Message { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { message: string } }

/** The inspector's WebSocket address, from the "Debugger listening on ws://..." line Node.js prints on stderr. */
export function inspectorAddress(stderr: string): string | undefined {
  return /Debugger listening on (ws:\/\/\S+)/.exec(stderr)?.[1];
}

/**
 * Writes DIR/<label>-main.heapsnapshot and DIR/<label>-thread-N.heapsnapshot (one per worker
 * thread, N from 1) and returns their paths. The process pauses while each is taken.
 */
export async function snapshotThreads(address: string, dir: string, label: string): Promise<string[]> {
  const ws = new WebSocket(address);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error(`cannot reach the inspector at ${address}`)), { once: true });
  });
  let next = 1;
  const waiting = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  const chunks = new Map<string, string[]>(); // session ('' for the main thread) -> snapshot chunks
  const workerSessions: string[] = [];
  const workerReplies = new Map<string, Map<number, (m: Message) => void>>();
  const onMessage = (m: Message, session: string) => {
    if (m.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.get(session)?.push(String(m.params!.chunk));
    if (m.id !== undefined) {
      if (session === '') {
        const w = waiting.get(m.id);
        waiting.delete(m.id);
        if (m.error) w?.reject(new Error(m.error.message));
        else w?.resolve(m);
      } else {
        workerReplies.get(session)?.get(m.id)?.(m);
      }
    }
  };
  ws.addEventListener('message', (ev) => {
    const m = JSON.parse(String(ev.data)) as Message;
    if (m.method === 'NodeWorker.attachedToWorker') workerSessions.push(String(m.params!.sessionId));
    if (m.method === 'NodeWorker.receivedMessageFromWorker') onMessage(JSON.parse(String(m.params!.message)) as Message, String(m.params!.sessionId));
    else onMessage(m, '');
  });
  const call = (method: string, params: Record<string, unknown> = {}) => new Promise<Message>((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    ws.send(JSON.stringify({ id, method, params }));
  });
  const callIn = (session: string, method: string, params: Record<string, unknown> = {}) => new Promise<Message>((resolve) => {
    const id = next++;
    if (!workerReplies.has(session)) workerReplies.set(session, new Map());
    workerReplies.get(session)!.set(id, resolve);
    void call('NodeWorker.sendMessageToWorker', { sessionId: session, message: JSON.stringify({ id, method, params }) });
  });
  try {
    await call('NodeWorker.enable', { waitForDebuggerOnStart: false });
    // The attachments arrive as events just after the answer.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const written: string[] = [];
    chunks.set('', []);
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    written.push(join(dir, `${label}-main.heapsnapshot`));
    await writeFile(written.at(-1)!, chunks.get('')!.join(''));
    for (const [i, session] of workerSessions.entries()) {
      chunks.set(session, []);
      await callIn(session, 'HeapProfiler.collectGarbage');
      await callIn(session, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      written.push(join(dir, `${label}-thread-${i + 1}.heapsnapshot`));
      await writeFile(written.at(-1)!, chunks.get(session)!.join(''));
    }
    return written;
  } finally {
    ws.close();
  }
}
