import assert from 'node:assert/strict';
import { InvalidArgumentError } from 'commander';
import { index, indexAfter } from '../../src/starters/repair-commands.ts';
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

describe('repair-queue CLI: the index a new queue starts from', () => {
  it('is one past the highest repair/<index> an earlier queue left; other ids are not entries', () => {
    assert.equal(indexAfter([]), 1);
    assert.equal(indexAfter(['repair/3', 'repair/12', 'repair/7', 'repair/12/lift', 'repair-queue', 'repair/012']), 13);
  });
  it('skips an id no entry can have (past MAX_INDEX, an unsafe integer), so a planted workflow cannot use the indexes up', () => {
    assert.equal(indexAfter(['repair/4', `repair/${MAX_INDEX + 1}`, 'repair/9999999999999999', `repair/${'9'.repeat(400)}`]), 5);
    assert.equal(indexAfter([`repair/${MAX_INDEX}`]), MAX_INDEX + 1);
  });
});
