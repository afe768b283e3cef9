// The guard's release against a renewal under way (src/repair/guard.ts): a
// renewal whose write loses the race with the release must not take the guard
// again. If it did, the finished run would hold its machine until the guard
// lapsed, and a retry cut off from that run would then find it lapsed, not
// released, and run the command again instead of taking its exit code.
import assert from 'node:assert/strict';
import { decideGuard, parseGuard, releaseGuard, renewGuard, takeGuard, type GuardAccess, type GuardRecord, type Want } from '../../src/repair/guard.ts';

/** One Node's guard annotation with a resourceVersion, as the API server keeps it; `beforeRead` runs once, after the next read is taken. */
class FakeNode implements GuardAccess {
  rv = 1;
  value: string | undefined;
  beforeRead?: () => Promise<void>;
  read = async () => {
    const seen = { resourceVersion: String(this.rv), value: this.value };
    const hook = this.beforeRead;
    this.beforeRead = undefined;
    await hook?.();
    return seen;
  };
  write = async (resourceVersion: string, value: string | null) => {
    if (resourceVersion !== String(this.rv)) return false;
    this.value = value ?? undefined;
    this.rv++;
    return true;
  };
}

const worker = (id: string) => ({ host: 'h1', pid: 10, start: '100', id });

describe('repair guard: a renewal that crosses the release', () => {
  let node: FakeNode;
  let mine: GuardRecord;
  beforeEach(async () => {
    node = new FakeNode();
    const got = await takeGuard(node, { entry: '7', step: 0, kind: 'repair_command', run: 1, holder: worker('first') }, { aliveHere: () => true, sleep: async () => undefined });
    assert.ok('taken' in got);
    mine = got.taken;
  });

  it('read before the release, written after it: the guard stays released with the exit code', async () => {
    node.beforeRead = () => releaseGuard(node, mine, 0);
    assert.equal(await renewGuard(node, mine, 5_000), 'released');
    const found = parseGuard(node.value);
    assert.deepEqual({ until: found?.until, exitCode: found?.exitCode }, { until: 0, exitCode: 0 });
  });

  it('so the retry cut off from that run takes its exit code instead of running the command again', async () => {
    node.beforeRead = () => releaseGuard(node, mine, 0);
    await renewGuard(node, mine, 5_000);
    const retry: Want = { entry: '7', step: 0, kind: 'repair_command', run: 2, cutOffRun: 1, holder: { ...worker('retry'), host: 'h2' } };
    assert.deepEqual(decideGuard(parseGuard(node.value), retry, 10_000, () => true), { op: 'adopt', exitCode: 0 });
  });

  it('a renewal after the release writes nothing', async () => {
    await releaseGuard(node, mine, 3);
    const rv = node.rv;
    assert.equal(await renewGuard(node, mine), 'released');
    assert.equal(node.rv, rv);
  });
});
