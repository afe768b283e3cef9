import assert from 'node:assert/strict';
import { InvalidArgumentError } from 'commander';
import { index } from '../../src/starters/repair-commands.ts';

describe('repair-queue CLI: INDEX', () => {
  it('takes an index as the queue writes it, dropping leading zeros', () => {
    assert.equal(index('3'), '3');
    assert.equal(index('007'), '7');
    assert.equal(index('9999999999999999'), '9999999999999999');
  });
  it('refuses what no entry can have, quoting it as typed (never as 1e+23)', () => {
    for (const bad of ['0', '00', '99999999999999999999999', '10000000000000000', '-1', '1.5', 'x', '']) {
      assert.throws(() => index(bad), (err: Error) => err instanceof InvalidArgumentError && err.message.includes(`(got "${bad}")`), bad);
    }
  });
});
