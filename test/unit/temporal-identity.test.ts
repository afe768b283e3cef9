// Who runs under a well-known workflow id (src/temporal/identity.ts): tend's own
// when its type and task queue are what tend's workers run; otherwise an
// impostor, named by the id, the type or task queue found (cut short) and what
// was expected.
import assert from 'node:assert/strict';
import { foundOfDescription, impostor, type Expected, type Found } from '../../src/temporal/identity.ts';

describe('temporal identity: impostor()', () => {
  const expected: Expected = { type: 'safetyWorkflow', taskQueues: ['tend'] };
  const rows: { name: string; found: Found; expected?: Expected; reason?: RegExp }[] = [
    { name: 'tend\'s own', found: { type: 'safetyWorkflow', taskQueue: 'tend' } },
    { name: 'another type', found: { type: 'x', taskQueue: 'tend' }, reason: /^workflow tend-safety is of type "x", not safetyWorkflow: not tend's/ },
    { name: 'no type at all', found: { taskQueue: 'tend' }, reason: /is of type "", not safetyWorkflow/ },
    { name: 'another task queue', found: { type: 'safetyWorkflow', taskQueue: 'elsewhere' }, reason: /runs on task queue "elsewhere", not on "tend": not tend's/ },
    { name: 'no task queue', found: { type: 'safetyWorkflow', taskQueue: null }, reason: /runs on task queue "", not on "tend"/ },
    { name: 'any task queue when none is expected', found: { type: 'safetyWorkflow', taskQueue: 'elsewhere' }, expected: { type: 'safetyWorkflow' } },
    { name: 'one of several task queues', found: { type: 'safetyWorkflow', taskQueue: 'b' }, expected: { type: 'safetyWorkflow', taskQueues: ['a', 'b'] } },
    { name: 'the type is checked first', found: { type: 'x', taskQueue: 'elsewhere' }, reason: /of type "x"/ },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const r = impostor('tend-safety', row.found, row.expected ?? expected);
      if (!row.reason) return assert.equal(r, undefined);
      assert.match(r ?? '', row.reason);
    });
  }

  it('names what it found by a prefix only, and quotes control characters', () => {
    const r = impostor('tend-safety', { type: `${'y'.repeat(100_000)}`, taskQueue: 'tend' }, expected) ?? '';
    assert.ok(r.length < 300, `${r.length} characters`);
    const q = impostor('tend-safety', { type: 'safetyWorkflow', taskQueue: 'a\u0007\nb' }, expected) ?? '';
    assert.doesNotMatch(q, /[\u0000-\u001f]/);
    assert.match(q, /"a\\u0007\\nb"/);
  });
});

describe('temporal identity: foundOfDescription()', () => {
  it('takes the type and task queue of a raw DescribeWorkflowExecution answer, absent ones as undefined', () => {
    assert.deepEqual(foundOfDescription({ workflowExecutionInfo: { type: { name: 't' }, taskQueue: 'q' } }), { type: 't', taskQueue: 'q' });
    assert.deepEqual(foundOfDescription({ workflowExecutionInfo: { type: null, taskQueue: null } }), { type: undefined, taskQueue: undefined });
    assert.deepEqual(foundOfDescription({}), { type: undefined, taskQueue: undefined });
  });
});
