import assert from 'node:assert/strict';
import { InvalidArgumentError } from 'commander';
import { index } from '../../src/starters/repair-commands.ts';
import { MAX_INDEX } from '../../src/repair/messages.ts';

describe('repair-queue CLI: INDEX', () => {
  it('takes an index as the queue writes it, dropping leading zeros', () => {
    assert.equal(index('3'), '3');
    assert.equal(index('007'), '7');
    assert.equal(index(String(MAX_INDEX)), String(MAX_INDEX));
  });
  it('refuses what no entry can have, quoting it as typed (never as 1e+23)', () => {
    for (const bad of ['0', '00', '99999999999999999999999', '10000000000000000', String(MAX_INDEX + 1), '-1', '1.5', 'x', '']) {
      assert.throws(() => index(bad), (err: Error) => err instanceof InvalidArgumentError && err.message.includes(`(got "${bad}")`), bad);
    }
  });
  it('quotes a hostile INDEX bounded, its control characters escaped', () => {
    assert.throws(() => index(`\x1b[2J${'9'.repeat(500)}`), (err: Error) => err.message.length < 200 && err.message.includes('"\\u001b[2J'));
  });
});
