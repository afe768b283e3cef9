// The durable pause (`tend-safety`) on a real dev server: updates and signals
// change its state, its memo (what workers read with DescribeWorkflowExecution)
// and its Web UI details; bad input is refused (updates) or ignored (signals);
// and under a small history limit it continues as new with its state and memo.
// An impostor under the id (another type, another task queue) is refused by the
// readers, `tend pause`, `tend resume` and status, naming it, and sent nothing.
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Config } from '../../src/config/load.ts';
import {
  emptySafetyState, pauseSignal, pauseUpdate, resumeSignal, resumeUpdate, SAFETY_MEMO_KEY, SAFETY_WORKFLOW_ID, stateQuery, type SafetyState,
} from '../../src/safety/messages.ts';
import { describeReader, PauseState, type PauseCheck } from '../../src/safety/pause.ts';
import { confirmApplied, pause, pauseStatus, resume } from '../../src/starters/safety-commands.ts';
import { OperatorError } from '../../src/starters/cli-support.ts';
import { startWorkflowEnv, taskQueue, withWorker } from '../harness/workflow-env.ts';
import { waitFor } from '../harness/wait.ts';

/** Temporal suggests continue-as-new past SUGGEST events and terminates a run past ERROR. */
const SUGGEST = 40;
const ERROR = 150;

describe('the durable pause workflow (tend-safety)', function () {
  this.timeout(180_000);
  let env: TestWorkflowEnvironment;
  let tq: string;
  let since = '';

  before(async () => {
    env = await startWorkflowEnv({ historyLimit: { suggest: SUGGEST, error: ERROR } });
  });
  after(async () => {
    await env?.teardown();
  });
  beforeEach(async () => {
    await env.client.workflow.getHandle(SAFETY_WORKFLOW_ID).terminate('next test').catch(() => undefined);
    since = new Date().toISOString();
    tq = taskQueue('safety');
  });

  const start = (client: Client, id = SAFETY_WORKFLOW_ID) =>
    client.workflow.start('safetyWorkflow', { workflowId: id, taskQueue: tq, args: [{}] });
  const handle = (client: Client) => client.workflow.getHandle(SAFETY_WORKFLOW_ID);
  const memoOf = async (client: Client) => (await handle(client).describe()).memo?.[SAFETY_MEMO_KEY] as SafetyState | undefined;
  const detailsOf = async (client: Client) =>
    (await handle(client).query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
  const runs = async (client: Client) => {
    const out: { runId: string; status: string; length: number }[] = [];
    for await (const w of client.workflow.list({ query: `WorkflowId="${SAFETY_WORKFLOW_ID}" AND StartTime >= "${since}"` })) {
      out.push({ runId: w.runId, status: w.status.name, length: w.historyLength ?? 0 });
    }
    return out;
  };

  it('the pause update pauses the named capability, answers the new state and revision, and writes the memo and the details', async () => {
    await withWorker(env, tq, {}, async (client) => {
      await start(client);
      await waitFor('the first memo', () => memoOf(client));
      assert.equal((await memoOf(client))!.revision, 0);
      const s = await handle(client).executeUpdate(pauseUpdate, { args: [{ capabilities: ['taint'], reason: 'incident 42', by: 'alice@ops' }] });
      assert.equal(s.revision, 1);
      assert.equal(s.capabilities.taint.paused, true);
      assert.equal(s.capabilities.taint.reason, 'incident 42');
      assert.equal(s.capabilities.taint.by, 'alice@ops');
      assert.match(s.capabilities.taint.since ?? '', /^\d{4}-\d\d-\d\dT/);
      for (const c of ['weeder', 'apps', 'repair'] as const) assert.equal(s.capabilities[c].paused, false, c);
      // The memo is written in the same workflow task as the update's answer: there as soon as the update returns.
      assert.deepEqual(await memoOf(client), s);
      assert.deepEqual(await handle(client).query(stateQuery), s);
      assert.deepEqual(await describeReader(client.workflowService, env.namespace ?? 'default')(), s);
      const details = await detailsOf(client);
      assert.match(details, /taint paused since .* by alice@ops: incident 42/);
      assert.match(details, /Acting: weeder, apps, repair/);

      // Pausing again with another reason keeps `since`; a pause of all pauses all; resume of one, then of all.
      const again = await handle(client).executeUpdate(pauseUpdate, { args: [{ capabilities: ['taint'], reason: 'incident 43' }] });
      assert.equal(again.revision, 2);
      assert.equal(again.capabilities.taint.since, s.capabilities.taint.since);
      assert.equal(again.capabilities.taint.by, 'unknown');
      const all = await handle(client).executeUpdate(pauseUpdate, { args: [{ reason: 'freeze' }] });
      assert.deepEqual(Object.values(all.capabilities).map((p) => p.paused), [true, true, true, true]);
      const one = await handle(client).executeUpdate(resumeUpdate, { args: [{ capabilities: ['apps'] }] });
      assert.equal(one.capabilities.apps.paused, false);
      assert.equal(one.capabilities.taint.paused, true);
      const none = await handle(client).executeUpdate(resumeUpdate, { args: [{}] });
      assert.deepEqual(Object.values(none.capabilities).map((p) => p.paused), [false, false, false, false]);
      assert.equal(none.revision, 5);
      assert.deepEqual(await memoOf(client), none);
      assert.match(await detailsOf(client), /Nothing is paused/);
      // A resume that changes nothing leaves the revision alone.
      assert.equal((await handle(client).executeUpdate(resumeUpdate, { args: [{}] })).revision, 5);
    });
  });

  it('signals of the same names change the state and the memo (what the temporal CLI sends)', async () => {
    await withWorker(env, tq, {}, async (client) => {
      await start(client);
      await handle(client).signal(pauseSignal, { capabilities: ['taint', 'repair'], reason: 'incident 42' });
      const paused = await waitFor('the memo with taint and repair paused', async () => {
        const m = await memoOf(client);
        return m?.capabilities.taint.paused && m.capabilities.repair.paused ? m : undefined;
      });
      assert.equal(paused.revision, 1);
      assert.equal(paused.capabilities.weeder.paused, false);
      await handle(client).signal(resumeSignal, { capabilities: ['taint'] });
      const resumed = await waitFor('the memo with taint resumed', async () => {
        const m = await memoOf(client);
        return m?.revision === 2 ? m : undefined;
      });
      assert.equal(resumed.capabilities.taint.paused, false);
      assert.equal(resumed.capabilities.repair.paused, true);
    });
  });

  it('refuses bad updates with a message naming the problem, and ignores bad signals', async () => {
    await withWorker(env, tq, {}, async (client) => {
      await start(client);
      const refused = async (args: unknown, pattern: RegExp, update: typeof pauseUpdate | typeof resumeUpdate = pauseUpdate) => {
        await assert.rejects(handle(client).executeUpdate(update as typeof pauseUpdate, { args: [args as never] }), (err: unknown) => {
          assert.ok(err instanceof WorkflowUpdateFailedError, String(err));
          assert.match(err.cause?.message ?? '', pattern);
          return true;
        });
      };
      await refused({ capabilities: ['taint', 'nodes'], reason: 'x' }, /unknown capability "nodes" \(known: weeder, taint, apps, repair\)/);
      await refused({ capabilities: ['taint'], reason: 42 }, /reason: reason must be a string/);
      await refused({ capabilities: ['taint'] }, /reason/);
      await refused({ reason: '   ' }, /reason must not be empty/);
      await refused({ reason: 'x'.repeat(501) }, /reason is longer than 500 characters/);
      await refused({ reason: 'x', command: 'rm -rf /' }, /command/);
      await refused({ reason: 'x', namespace: 'kube-system' }, /namespace/);
      await refused('taint', /pause takes/);
      await refused({ capabilities: 'taint' }, /capabilities/, resumeUpdate);
      // Bad signals: ignored; a good one after them is taken, and it is the first change.
      await handle(client).signal(pauseSignal, { capabilities: ['nodes'], reason: 'x' } as never);
      await handle(client).signal(pauseSignal, { reason: 'x'.repeat(501) });
      await handle(client).signal('pause');
      await handle(client).signal(resumeSignal, { capabilities: ['taint'], selector: 'app=x' } as never);
      await handle(client).signal(pauseSignal, { capabilities: ['weeder'], reason: 'good' });
      const m = await waitFor('the good signal taken', async () => {
        const s = await memoOf(client);
        return s?.capabilities.weeder.paused ? s : undefined;
      });
      assert.equal(m.revision, 1, 'only the good signal changed the state');
      assert.deepEqual(Object.entries(m.capabilities).filter(([, p]) => p.paused).map(([c]) => c), ['weeder']);
    });
  });

  it('refuses to run under another workflow id, naming it by its prefix only', async () => {
    await withWorker(env, tq, {}, async (client) => {
      const other = await start(client, 'tend-safety-2');
      await assert.rejects(other.result(), (err: unknown) => err instanceof WorkflowFailedError && /runs as workflow id tend-safety only/.test(err.cause?.message ?? ''));
      const long = await start(client, `tend-safety-${'x'.repeat(900)}`);
      await assert.rejects(long.result(), (err: unknown) => {
        const message = (err as WorkflowFailedError).cause?.message ?? '';
        assert.match(message, /runs as workflow id tend-safety only \(got "tend-safety-x+…/);
        assert.ok(message.length < 300, `${message.length} characters`);
        return true;
      });
    });
  });

  it('a hand start carrying a state starts afresh: only tend-safety itself carries state into a run', async () => {
    await withWorker(env, tq, {}, async (client) => {
      const forged = { revision: 7, capabilities: { weeder: { paused: false }, taint: { paused: false }, apps: { paused: false }, repair: { paused: false } } };
      await client.workflow.start('safetyWorkflow', { workflowId: SAFETY_WORKFLOW_ID, taskQueue: tq, args: [{ state: forged }] });
      const m = await waitFor('the first memo', () => memoOf(client));
      assert.equal(m.revision, 0, 'the forged revision was taken');
      await handle(client).terminate('next');
      // Not even an object: nothing to carry, started afresh.
      await client.workflow.start('safetyWorkflow', { workflowId: SAFETY_WORKFLOW_ID, taskQueue: tq, args: ['state' as never] });
      assert.equal((await waitFor('the first memo', () => memoOf(client))).revision, 0);
    });
  });

  it('messages past the limits (deep, wide, huge) are refused by updates and ignored as signals, in short reasons, with no workflow task failing', async () => {
    await withWorker(env, tq, {}, async (client) => {
      await start(client);
      let deep: unknown = 'taint';
      for (let i = 0; i < 3000; i++) deep = [deep];
      const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`key${i}`, i]));
      const oneHugeKey = { reason: 'x', ['k'.repeat(300_000)]: 1 };
      const unknownKeys = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`${'u'.repeat(60)}${i}`, 1]));
      for (const [what, input, pattern] of [
        ['deep', { capabilities: deep, reason: 'x' }, /refused unread: nested deeper than 4 levels/],
        ['wide', { reason: 'x', ...wide }, /refused unread: more than 256 values in all/],
        ['a huge key', oneHugeKey, /refused unread: more than 16384 characters/],
        ['many unknown keys', { reason: 'x', ...unknownKeys }, /Unrecognized keys: "u+0", /],
      ] as const) {
        await assert.rejects(handle(client).executeUpdate(pauseUpdate, { args: [input as never] }), (err: unknown) => {
          assert.ok(err instanceof WorkflowUpdateFailedError, `${what}: ${String(err)}`);
          const message = err.cause?.message ?? '';
          assert.match(message, pattern, what);
          assert.ok(message.length < 1200, `${what}: a refusal of ${message.length} characters`);
          return true;
        });
        await handle(client).signal(pauseSignal, input as never);
      }
      await handle(client).signal(pauseSignal, { capabilities: ['apps'], reason: 'after the noise' });
      const m = await waitFor('the good signal taken', async () => {
        const x = await memoOf(client);
        return x?.capabilities.apps.paused ? x : undefined;
      });
      assert.equal(m.revision, 1, 'only the good signal changed the state');
      const failed = (await handle(client).fetchHistory()).events!.filter((e) => e.workflowTaskFailedEventAttributes);
      assert.deepEqual(failed, [], 'a workflow task failed');
    });
  });

  it('a cancel (the Web UI\'s button) does not drop the pause: it goes on in a new run with its state', async () => {
    await withWorker(env, tq, {}, async (client) => {
      await start(client);
      const s = await handle(client).executeUpdate(pauseUpdate, { args: [{ capabilities: ['apps'], reason: 'kept through a cancel' }] });
      const first = (await handle(client).describe()).runId;
      await handle(client).cancel();
      await waitFor('a new run after the cancel', async () => {
        const d = await handle(client).describe();
        return d.runId !== first && d.status.name === 'RUNNING';
      });
      assert.deepEqual(await handle(client).query(stateQuery), s);
      assert.deepEqual(await memoOf(client), s);
    });
  });

  it('continues as new before the history limit, carrying its state and its memo', async () => {
    await withWorker(env, tq, {}, async (client) => {
      await start(client);
      // Each change is a handful of events: 40 changes go far past SUGGEST, far below CHANGES_PER_RUN.
      const changes = 40;
      for (let i = 0; i < changes; i++) {
        if (i % 2) await handle(client).executeUpdate(resumeUpdate, { args: [{ capabilities: ['repair'] }] });
        else await handle(client).executeUpdate(pauseUpdate, { args: [{ capabilities: ['repair'], reason: `r${i}` }] });
      }
      await handle(client).signal(pauseSignal, { capabilities: ['taint'], reason: 'kept across runs', by: 'bob' });
      const all = await waitFor('two runs or more, the latest with the signal taken', async () => {
        const r = await runs(client);
        const m = await memoOf(client);
        return r.length >= 2 && m?.revision === changes + 1 ? r : undefined;
      });
      assert.deepEqual(all.filter((r) => r.status === 'TERMINATED'), [], 'a run was terminated (the history limit?)');
      assert.ok(all.every((r) => r.length <= ERROR), JSON.stringify(all));
      const desc = await handle(client).describe();
      assert.equal(desc.status.name, 'RUNNING');
      const s = await handle(client).query(stateQuery);
      assert.equal(s.revision, changes + 1);
      assert.equal(s.capabilities.taint.reason, 'kept across runs');
      assert.equal(s.capabilities.taint.by, 'bob');
      assert.equal(s.capabilities.repair.paused, false);
      assert.deepEqual(desc.memo?.[SAFETY_MEMO_KEY], s);
    });
  });

  describe('an impostor under tend-safety', () => {
    const config = () => ({ temporal: { namespace: env.namespace ?? 'default', taskQueue: tq } }) as unknown as Config;
    /** Starts `type` under tend-safety on a task queue no worker polls, its memo saying nothing is paused. */
    const startImpostor = (client: Client, type: string, queue = taskQueue('nobody-polls')) =>
      client.workflow.start(type, { workflowId: SAFETY_WORKFLOW_ID, taskQueue: queue, args: [{}], memo: { [SAFETY_MEMO_KEY]: emptySafetyState() } });
    const refusedNaming = (pattern: RegExp) => (err: unknown) => {
      assert.ok(err instanceof OperatorError, String(err));
      assert.match(err.message, pattern);
      return true;
    };
    /** What the impostor was sent: its events past the start (signals, updates). */
    const sentTo = async (client: Client) => (await handle(client).fetchHistory()).events!
      .filter((e) => e.workflowExecutionSignaledEventAttributes || e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateAdmittedEventAttributes);

    const failsClosed = async (client: Client, pattern: RegExp) => {
      await assert.rejects(describeReader(client.workflowService, env.namespace ?? 'default', { taskQueue: tq })(), pattern);
      const reader = new PauseState({ read: describeReader(client.workflowService, env.namespace ?? 'default', { taskQueue: tq }), metrics: false });
      await reader.refresh();
      for (const c of ['weeder', 'taint', 'apps', 'repair'] as const) {
        const check = reader.check(c);
        assert.equal(check.state, 'unknown', `${c}: ${JSON.stringify(check)}`);
        assert.match((check as Extract<PauseCheck, { state: 'unknown' }>).reason, pattern);
      }
    };

    it('of another type: readers fail closed naming it; pause, resume and status refuse naming it and send it nothing', async () => {
      const client = env.client;
      await startImpostor(client, 'notTheSafety');
      const named = /workflow tend-safety is of type "notTheSafety", not safetyWorkflow: not tend's/;
      await failsClosed(client, named);
      await assert.rejects(pause(client, config(), ['taint'], 'incident'), refusedNaming(new RegExp(`^pause: refused, nothing sent: ${named.source}.*terminate it`)));
      await assert.rejects(resume(client, config(), []), refusedNaming(new RegExp(`^resume: refused, nothing sent: ${named.source}`)));
      await assert.rejects(pauseStatus(client, tq), refusedNaming(new RegExp(`^pause status: refused: ${named.source}`)));
      assert.deepEqual(await sentTo(client), []);
    });

    it('of tend\'s type on another task queue: the same, naming the task queue', async () => {
      const client = env.client;
      await startImpostor(client, 'safetyWorkflow', 'elsewhere');
      const named = new RegExp(`workflow tend-safety runs on task queue "elsewhere", not on "${tq}": not tend's`);
      await failsClosed(client, named);
      await assert.rejects(pause(client, config(), [], 'incident'), refusedNaming(named));
      await assert.rejects(pauseStatus(client, tq), refusedNaming(named));
      assert.deepEqual(await sentTo(client), []);
    });

    it('a tend-safety that never answers (no worker runs it): pause and resume refuse within their bound instead of waiting for ever', async () => {
      // A worker has polled the task queue a moment ago (so the commands find one), then stops.
      await withWorker(env, tq, {}, () => waitFor('a poller on the task queue', async () =>
        ((await env.client.workflowService.describeTaskQueue({ namespace: env.namespace ?? 'default', taskQueue: { name: tq, kind: 1 }, taskQueueType: 1 }))
          .pollers ?? []).length > 0));
      const client = env.client;
      await start(client);
      const late = /: refused: tend-safety has not answered within 2 s; the change may still be applied/;
      const t0 = Date.now();
      await assert.rejects(pause(client, config(), ['taint'], 'incident', 2000), refusedNaming(new RegExp(`^pause${late.source}`)));
      await assert.rejects(resume(client, config(), [], 2000), refusedNaming(new RegExp(`^resume${late.source}`)));
      assert.ok(Date.now() - t0 < 20_000, `${Date.now() - t0} ms`);
    });

    it('started after tend\'s own answered a pause (in its place): the pause is refused as applied, naming it', async () => {
      await withWorker(env, tq, {}, async (client) => {
        const s = await pause(client, config(), ['repair'], 'incident 44');
        assert.equal(s.capabilities.repair.paused, true);
        assert.equal((await confirmApplied(client, config(), s, 'pause')).revision, s.revision);
        await handle(client).terminate('replaced by an impostor');
        await startImpostor(client, 'notTheSafety');
        await assert.rejects(confirmApplied(client, config(), s, 'pause'), refusedNaming(/^pause: refused: workflow tend-safety is of type "notTheSafety"/));
      });
    });
  });
});
