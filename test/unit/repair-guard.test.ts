// The per-entry guard across replicas (src/repair/guard.ts): its decision as a
// table, and two workers on different hosts (two state folders, one Node)
// never running a command on the machine at once; a retried attempt takes the
// end of the run it was cut off from instead of running it again.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { parseConfig } from '../../src/config/load.ts';
import { createRepairActivities, type CommandResult } from '../../src/activities/repair.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import {
  decideGuard, GUARD_ANNOTATION, GUARD_TTL_MS, parseGuard, releaseGuard, renewGuard, takeGuard, type GuardAccess, type GuardDecision, type GuardRecord, type Want,
} from '../../src/repair/guard.ts';

const me = { host: 'h1', pid: 10, start: '100', id: 'me' };
const other = { host: 'h2', pid: 20, start: '200', id: 'other' };
const want: Want = { entry: '7', step: 1, kind: 'repair_command', run: 4, holder: me };
const held = (more: Partial<GuardRecord> = {}): GuardRecord => ({ entry: '7', step: 1, kind: 'repair_command', run: 3, holder: other, until: 2000, ...more });

describe('repair guard: decision', () => {
  const NOW = 1000;
  const rows: { situation: string; found: GuardRecord | undefined; want?: Partial<Want>; alive?: boolean; expect: GuardDecision['op']; exitCode?: number | null }[] = [
    { situation: 'no guard', found: undefined, expect: 'take' },
    { situation: 'released by the run this attempt was cut off from', found: held({ until: 0, exitCode: 2 }), want: { cutOffRun: 3 }, expect: 'adopt', exitCode: 2 },
    { situation: 'released by it, killed (no exit code)', found: held({ until: 0, exitCode: null }), want: { cutOffRun: 3 }, expect: 'adopt', exitCode: null },
    { situation: 'released by an earlier run (not cut off)', found: held({ until: 0, exitCode: 1 }), expect: 'take' },
    { situation: 'released by another step\'s run of that number', found: held({ until: 0, step: 0 }), want: { cutOffRun: 3 }, expect: 'take' },
    { situation: 'released by another entry', found: held({ until: 0, entry: '8' }), want: { cutOffRun: 3 }, expect: 'take' },
    { situation: 'held by this very activity run', found: held({ holder: me }), expect: 'take' },
    { situation: 'held, lapsed', found: held({ until: NOW }), expect: 'take' },
    { situation: 'held by a gone process on this host', found: held({ holder: { ...other, host: 'h1' } }), alive: false, expect: 'take' },
    { situation: 'held by a live process on this host', found: held({ holder: { ...other, host: 'h1' } }), alive: true, expect: 'wait' },
    { situation: 'held by another host\'s worker', found: held(), alive: false, expect: 'wait' },
    { situation: 'held by another entry on the same machine', found: held({ entry: '8' }), expect: 'wait' },
  ];
  for (const r of rows) {
    it(`${r.situation}: ${r.expect}`, () => {
      const d = decideGuard(r.found, { ...want, ...r.want }, NOW, () => r.alive ?? true);
      assert.equal(d.op, r.expect);
      if (d.op === 'adopt') assert.equal(d.exitCode, r.exitCode);
      if (d.op === 'wait') assert.equal(d.until, 2000);
    });
  }

  it('a foreign or broken annotation is no guard (taken over); a huge one is not parsed', () => {
    for (const v of [undefined, '', 'x', '{}', '[]', 'null', JSON.stringify({ ...held(), step: 'a' }), `{"a":"${'x'.repeat(3000)}"}`]) assert.equal(parseGuard(v), undefined, v);
    assert.deepEqual(parseGuard(JSON.stringify(held())), held());
  });
});

/** One Node's annotations and resourceVersion, with compare-and-swap writes, as kube-apiserver keeps them. */
class FakeNode {
  rv = 1;
  annotations: Record<string, string> = {};
  readonly name: string;
  readonly address: string;
  constructor(name: string, address: string) {
    this.name = name;
    this.address = address;
  }
  node(): k8s.V1Node {
    return { metadata: { name: this.name, uid: 'u1', resourceVersion: String(this.rv), annotations: { ...this.annotations } }, status: { addresses: [{ type: 'InternalIP', address: this.address }] } };
  }
  patch(body: { metadata?: { resourceVersion?: string; annotations?: Record<string, string | null> } }): k8s.V1Node {
    if (body.metadata?.resourceVersion !== undefined && body.metadata.resourceVersion !== String(this.rv)) throw Object.assign(new Error('conflict'), { code: 409 });
    for (const [k, v] of Object.entries(body.metadata?.annotations ?? {})) {
      if (v === null) delete this.annotations[k];
      else this.annotations[k] = v;
    }
    this.rv++;
    return this.node();
  }
  access(): GuardAccess {
    return {
      read: async () => ({ resourceVersion: String(this.rv), value: this.annotations[GUARD_ANNOTATION] }),
      write: async (rv, value) => {
        try {
          this.patch({ metadata: { resourceVersion: rv, annotations: { [GUARD_ANNOTATION]: value } } });
          return true;
        } catch {
          return false;
        }
      },
    };
  }
  kube(): KubeClients {
    const core = {
      listNode: async () => ({ items: [this.node()] }),
      readNode: async () => this.node(),
      patchNode: async ({ body }: { body: Parameters<FakeNode['patch']>[0] }) => this.patch(body),
    };
    return { core } as unknown as KubeClients;
  }
}

describe('repair guard: take, renew, release', () => {
  const aliveHere = () => true;

  it('of two takers one holds it; the other waits until it is released, then takes it', async () => {
    const n = new FakeNode('n1', '10.0.0.1');
    let now = 1000;
    const sleep = async (ms: number) => {
      now += ms;
    };
    const a = await takeGuard(n.access(), want, { now: () => now, aliveHere, sleep });
    assert.ok('taken' in a);
    let waited = '';
    const b = takeGuard(n.access(), { ...want, entry: '8', holder: other }, { now: () => now, aliveHere, sleep: async (ms) => {
      await sleep(ms);
      if (now > 5000) await releaseGuard(n.access(), a.taken, 0);
    }, onWait: (why) => (waited = why) });
    const got = await b;
    assert.ok('taken' in got && got.taken.entry === '8');
    assert.match(waited, /entry 7's repair_command of step 1 \(run 4\) holds it on worker h1 \(pid 10\)/);
    assert.ok(now > 5000 && now < 1000 + GUARD_TTL_MS, 'taken when released, before it would have lapsed');
  });

  it('renewed while ours; lost once another took it after it lapsed; gone with the Node', async () => {
    const n = new FakeNode('n1', '10.0.0.1');
    const a = await takeGuard(n.access(), want, { aliveHere, sleep: async () => undefined });
    assert.ok('taken' in a);
    assert.equal(await renewGuard(n.access(), a.taken), 'renewed');
    n.annotations[GUARD_ANNOTATION] = JSON.stringify({ ...a.taken, holder: other });
    assert.equal(await renewGuard(n.access(), a.taken), 'lost');
    assert.equal(await renewGuard({ read: async () => undefined, write: async () => true }, a.taken), 'gone');
  });
});

describe('repair guard: two workers on two hosts, one machine', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'tend-repair-guard-'));
  const times = join(dir, 'times');
  const config = (state: string) => parseConfig(`
repair:
  state_dir: ${join(dir, state)}
  repair_procedures:
    - machine_types: [sim]
      repair_operations:
        - operation: slow
          repair_steps:
            - { repair_command: [sh, -c, 'echo start $(date +%s%N) >> ${times}; sleep 1; echo end $(date +%s%N) >> ${times}; exit 6'] }
          health_check_command: [sh, -c, 'echo true']
`, 'c.yaml').repair;

  it('never at once: two entries of one machine, on two workers, run one after the other', async () => {
    writeFileSync(times, '');
    const node = new FakeNode('n1', '10.0.0.9');
    const one = createRepairActivities(node.kube(), config('one'));
    const two = createRepairActivities(node.kube(), config('two'));
    const key = { address: '10.0.0.9', machine_type: 'sim', operation: 'slow', step: 0, kind: 'repair_command' as const };
    const results = await Promise.all([
      new MockActivityEnvironment().run(one.repairRunCommand, { ...key, index: '1' }),
      new MockActivityEnvironment().run(two.repairRunCommand, { ...key, index: '2' }),
    ]) as CommandResult[];
    assert.deepEqual(results.map((r) => r.exitCode), [6, 6]);
    const lines = readFileSync(times, 'utf8').trim().split('\n').map((l) => l.split(' ') as [string, string]);
    assert.deepEqual(lines.map((l) => l[0]), ['start', 'end', 'start', 'end'], 'one after the other');
    assert.ok(BigInt(lines[2]![1]) >= BigInt(lines[1]![1]));
    // Released with the exit code.
    assert.equal(parseGuard(node.annotations[GUARD_ANNOTATION])?.until, 0);
    assert.equal(parseGuard(node.annotations[GUARD_ANNOTATION])?.exitCode, 6);
  });

  it('a retried attempt on another host waits for the run it was cut off from and takes its end, not running it again', async () => {
    writeFileSync(times, '');
    const node = new FakeNode('n1', '10.0.0.9');
    const first = createRepairActivities(node.kube(), config('first'));
    const retry = createRepairActivities(node.kube(), config('retry'));
    const key = { index: '3', address: '10.0.0.9', machine_type: 'sim', operation: 'slow', step: 0, kind: 'repair_command' as const };
    const running = new MockActivityEnvironment().run(first.repairRunCommand, key);
    while (!readFileSync(times, 'utf8').includes('start')) await new Promise((r) => setTimeout(r, 20));
    // The attempt Temporal retried after the first one's heartbeats stopped reaching it: it knows run 1 started.
    const again: CommandResult = await new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { run: 1, startedAt: new Date().toISOString() } })
      .run(retry.repairRunCommand, key);
    await running;
    assert.equal(again.exitCode, 6);
    assert.equal(again.cutOff?.adopted, true);
    assert.deepEqual(readFileSync(times, 'utf8').trim().split('\n').map((l) => l.split(' ')[0]), ['start', 'end'], 'ran once');
  });
});
