// What tend (and the controllers the invariants need) wrote, read from the
// kube-apiserver audit log: the API server's own record, which tend cannot
// make up or leave out. See docs/faults.md.
import { open, stat } from 'node:fs/promises';

/** One completed write request, as the audit log has it. */
export interface Write {
  /** When kube-apiserver received it (epoch ms). */
  at: number;
  /** When it answered (epoch ms). */
  done: number;
  user: string;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** The HTTP status it was answered with. */
  code: number;
  /** The request body, when the policy records it (level Request). */
  body?: unknown;
}

export const ok = (w: Write) => w.code >= 200 && w.code < 300;

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestObject?: unknown;
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

/** One line of the audit log (JSON format) as a Write; undefined for anything else. */
export function parseAuditLine(line: string): Write | undefined {
  if (!line.startsWith('{')) return undefined;
  let e: AuditEvent;
  try {
    e = JSON.parse(line) as AuditEvent;
  } catch {
    return undefined;
  }
  if (e.stage !== 'ResponseComplete' || !e.verb || !e.objectRef?.resource) return undefined;
  const at = Date.parse(e.requestReceivedTimestamp ?? '');
  const done = Date.parse(e.stageTimestamp ?? '');
  if (Number.isNaN(at) || Number.isNaN(done)) return undefined;
  return {
    at, done,
    user: e.user?.username ?? '',
    verb: e.verb,
    apiGroup: e.objectRef.apiGroup ?? '',
    resource: e.objectRef.resource,
    subresource: e.objectRef.subresource,
    namespace: e.objectRef.namespace,
    name: e.objectRef.name,
    code: e.responseStatus?.code ?? 0,
    body: e.requestObject,
  };
}

/** Reads the audit log from a remembered offset on. */
export class AuditLog {
  readonly path: string;
  constructor(path: string) {
    this.path = path;
  }

  /** Where the log ends now: what a round reads from later. */
  async mark(): Promise<number> {
    return stat(this.path).then((s) => s.size, () => 0);
  }

  /** Every write logged since `from` (a mark). */
  async since(from: number): Promise<Write[]> {
    const size = await this.mark();
    // Rotated (see --audit-log-maxsize): read the new file from its start.
    const start = size < from ? 0 : from;
    if (size === start) return [];
    const fh = await open(this.path, 'r');
    try {
      const buf = Buffer.alloc(size - start);
      await fh.read(buf, 0, buf.length, start);
      const text = buf.toString('utf8');
      // A line still being written is left for later.
      const complete = text.slice(0, text.lastIndexOf('\n') + 1);
      return complete.split('\n').map(parseAuditLine).filter((w): w is Write => w !== undefined);
    } finally {
      await fh.close();
    }
  }
}
