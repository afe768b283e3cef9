// The App workflow's message readers (src/apps/messages.ts): an appChanged hint
// and a restart request, each checked by the one message check, ignored or
// refused with a reason that names the field and shows what came, bounded.
import assert from 'node:assert/strict';
import { appChangedOf, restartRequestProblem } from '../../src/apps/messages.ts';
import { MAX_RESTART_TIMEOUT_SECONDS } from '../../src/apps/types.ts';

const uid = '9bcc2287-1cd8-4738-9a99-b6e80d0cf741';
let deep: unknown = 1;
for (let i = 0; i < 5000; i++) deep = [deep];

describe('App messages: appChanged', () => {
  const cases: { name: string; payload: unknown; taken?: object; ignored?: RegExp }[] = [
    { name: 'a generation', payload: { generation: 3 }, taken: { generation: 3 } },
    { name: 'a generation, a UID and a stop at it', payload: { generation: 2, uid, stoppedGeneration: 2 }, taken: { generation: 2, uid, stoppedGeneration: 2 } },
    { name: 'generation 0', payload: { generation: 0 }, taken: { generation: 0 } },
    { name: 'no payload', payload: undefined, ignored: /^appChanged signal ignored: its payload must be an object like \{"generation":3,"uid":"\.\.\."\}$/ },
    { name: 'a list', payload: [3], ignored: /its payload must be an object.*\(got \[3\]\)$/ },
    { name: 'a generation in text', payload: { generation: '3' }, ignored: /^appChanged signal ignored: generation: generation must be a whole number \(got "3"\)$/ },
    { name: 'a negative generation', payload: { generation: -1 }, ignored: /generation: generation must be a whole number \(got -1\)$/ },
    { name: 'a generation past the safe integers', payload: { generation: 2 ** 53 }, ignored: /generation must be a whole number/ },
    { name: 'an empty UID', payload: { generation: 1, uid: '' }, ignored: /uid: uid must be a UID of at most 128 characters \(got ""\)$/ },
    { name: 'a UID too long', payload: { generation: 1, uid: 'u'.repeat(129) }, ignored: /uid must be a UID of at most 128 characters \(got "u+…/ },
    { name: 'a stop past the generation', payload: { generation: 2, stoppedGeneration: 3 }, ignored: /^appChanged signal ignored: stoppedGeneration must be at most generation \(got 3 and 2\)$/ },
    // Dropped, as it always was (a run that took one replays the same way); the restart update, a command, refuses one.
    { name: 'a field it does not take', payload: { generation: 2, command: 'x' }, taken: { generation: 2 } },
    { name: 'nested deep', payload: { generation: 1, uid: deep }, ignored: /^appChanged signal ignored: refused unread: nested deeper than 2 levels$/ },
    { name: 'many fields', payload: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])), ignored: /refused unread: more than 16 values/ },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.taken ? 'taken' : 'ignored'}`, () => {
      const r = appChangedOf(c.payload);
      if (c.taken) assert.deepEqual(r, c.taken);
      else {
        assert.ok('ignored' in r, `taken: ${JSON.stringify(r)}`);
        assert.match(r.ignored, c.ignored!);
        assert.ok(r.ignored.length < 400, `${r.ignored.length} characters`);
      }
    });
  }
});

describe('App messages: restart', () => {
  const cases: { name: string; req: unknown; problem?: RegExp }[] = [
    { name: 'absent', req: undefined },
    { name: 'null', req: null },
    { name: 'empty', req: {} },
    { name: 'rolling with a timeout', req: { strategy: 'rolling', timeoutSeconds: 300 } },
    { name: 'the longest timeout', req: { timeoutSeconds: MAX_RESTART_TIMEOUT_SECONDS } },
    { name: 'a strategy it does not know', req: { strategy: 'sideways' }, problem: /^restart refused: strategy: strategy must be stop-start or rolling \(got "sideways"\)$/ },
    { name: 'a timeout of 0', req: { timeoutSeconds: 0 }, problem: /timeoutSeconds: timeoutSeconds must be a whole number from 1 to \d+ \(got 0\)$/ },
    { name: 'a timeout past the bound', req: { timeoutSeconds: MAX_RESTART_TIMEOUT_SECONDS + 1 }, problem: /timeoutSeconds must be a whole number from 1/ },
    { name: 'a fractional timeout', req: { timeoutSeconds: 1.5 }, problem: /timeoutSeconds must be a whole number from 1/ },
    { name: 'text', req: 'rolling', problem: /^restart refused: the request must be an object like \{"strategy":"rolling","timeoutSeconds":300\} \(got "rolling"\)$/ },
    { name: 'a field it does not take', req: { strategy: 'rolling', command: ['sh'] }, problem: /^restart refused: Unrecognized key: "command"$/ },
    { name: 'nested deep', req: deep, problem: /^restart refused: refused unread: nested deeper than 2 levels$/ },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.problem ? 'refused' : 'taken'}`, () => {
      const problem = restartRequestProblem(c.req);
      if (!c.problem) assert.equal(problem, undefined);
      else assert.match(problem ?? '(taken)', c.problem);
    });
  }
});
