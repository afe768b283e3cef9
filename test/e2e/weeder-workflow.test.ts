// The weeder workflow's two lanes on the real Temporal dev server, with its
// activity stubbed so that the test decides when each attempt returns (or
// never does, as when its worker died): what the workflow does with that is
// what is tested here. The real activity is tested end to end elsewhere.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';
import { installRuntime, workflowsPath } from '../../src/workers/worker.ts';
import type { WeedInput, WeedOutput } from '../../src/activities/weeder.ts';
import { armSignal, extendSignal, stopSignal, windowQuery } from '../../src/weeder/messages.ts';
import type { WeederInput, WeederResult } from '../../src/weeder/window.ts';

interface Call {
  input: WeedInput;
  /** Settles the attempt: what the activity returns. */
  reply(out: WeedOutput): void;
  settled: boolean;
}

describe('weeder workflow: the armed lane and the window lane', function () {
  this.timeout(120_000);
  const taskQueue = `weeder-workflow-${randomBytes(3).toString('hex')}`;
  const calls: Call[] = [];
  let worker: Worker;
  let running: Promise<void>;
  let client: Client;
  let nativeConnection: NativeConnection;

  before(async () => {
    installRuntime();
    nativeConnection = await NativeConnection.connect({ address: sandbox().temporalAddress });
    worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowsPath,
      activities: {
        // The configured window: 30 s for every Service here.
        weederSettings: async () => ({ watchDuration: { text: '30s', ms: 30_000 } }),
        // Waits for the test's reply; a cancelled attempt (stop signal, or the worker shutting down) ends.
        async weedDependants(input: WeedInput): Promise<WeedOutput> {
          const ctx = Context.current();
          const beat = setInterval(() => ctx.heartbeat(), 1000);
          try {
            return await Promise.race([
              new Promise<WeedOutput>((resolve) => {
                const call: Call = { input, settled: false, reply: (out) => { call.settled = true; resolve(out); } };
                calls.push(call);
              }),
              ctx.cancelled as Promise<never>,
            ]);
          } finally {
            clearInterval(beat);
          }
        },
      },
    });
    running = worker.run();
    client = new Client({ connection: await Connection.connect({ address: sandbox().temporalAddress }) });
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await nativeConnection?.close();
    await client?.connection.close();
  });

  const input = (service: string): WeederInput => ({
    namespace: 'ns', service,
  });
  const start = (service: string, signal: typeof armSignal | typeof extendSignal) => client.workflow.signalWithStart('weederWorkflow', {
    workflowId: `weeder/ns/${service}-${randomBytes(3).toString('hex')}`, taskQueue, args: [input(service)], signal, signalArgs: [{}],
  });
  const callFor = (service: string, lane: 'armed' | 'window', after = 0) => waitFor(`a ${lane} attempt for ${service}`, () =>
    calls.slice(after).find((c) => c.input.service === service && !c.settled && (c.input.openOnReady === true) === (lane === 'armed')));
  const pod = (name: string) => ({ name, uid: `uid-${name}`, containers: ['c'], owner: 'ReplicaSet/rs', at: new Date().toISOString() });

  it('armed: the activity that sees the Service ready opens the window from then, and the window lane carries on', async () => {
    const h = await start('seen', armSignal);
    const armed = await callFor('seen', 'armed');
    const before = calls.length;
    const readyAt = Date.now();
    armed.reply({ weeded: [pod('a')], reported: [], readyAt });
    const window = await callFor('seen', 'window', before);
    assert.deepEqual(window.input.handled, ['uid-a'], 'the window lane knows what the armed one weeded');
    const state = await h.query(windowQuery);
    assert.equal(state.openedAt, readyAt);
    assert.equal(state.armed, undefined);
    assert.equal(state.deadline, readyAt + 30_000);
    // What the Web UI shows as Current Details.
    const meta = await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    assert.match(meta.currentDetails ?? '', /Window open until .*Weeded: a\./s);
    await h.signal(stopSignal, { reason: 'done' });
    const result = await h.result() as WeederResult;
    assert.deepEqual(result.weeded.map((p) => p.name), ['a']);
    assert.ok(result.armedAt && result.openedAt === new Date(readyAt).toISOString());
  });

  it('armed: a lost armed activity does not hold up the window the watcher\'s transition opens', async () => {
    const h = await start('lost', armSignal);
    const armed = await callFor('lost', 'armed');
    // The armed attempt never returns (its worker died); the watcher sees the Service ready.
    await h.signal(extendSignal, { reason: 'not-ready -> ready' });
    const window = await callFor('lost', 'window');
    assert.ok(!armed.settled, 'the armed attempt is still out');
    window.reply({ weeded: [pod('b')], reported: [] });
    // The window lane goes on for the rest of the window while the armed one is still out.
    await callFor('lost', 'window', calls.indexOf(window) + 1);
    const state = await h.query(windowQuery);
    assert.deepEqual(state.weeded.map((p) => p.name), ['b']);
    assert.ok(state.armed, 'still armed: no activity has seen the Service ready yet');
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.equal(result.stopped, 'stop signal');
    assert.deepEqual(result.weeded.map((p) => p.name), ['b']);
  });

  it('armed again during a window: the armed lane runs beside the window lane', async () => {
    const h = await start('flap', extendSignal);
    const window = await callFor('flap', 'window');
    await h.signal(armSignal, { reason: 'ready -> not-ready' });
    const armed = await callFor('flap', 'armed');
    assert.ok(!window.settled, 'both lanes run side by side');
    assert.equal(armed.input.until, (await h.query(windowQuery)).armed!.until);
    window.reply({ weeded: [], reported: [] }); // its deadline: in the real activity, it returns then
    await h.signal(stopSignal, {});
    const result = await h.result() as WeederResult;
    assert.ok(result.openedAt && result.armedAt && result.openedAt < result.armedAt);
  });
});
