// Every configured duration, timeout and interval has an upper bound, and every configured name
// that becomes part of an id or a label a length bound: the bound is accepted, one past it is
// refused by a problem naming the setting, its line and the bound. Past 2^31 - 1 ms Node fires a
// timer at once, so no bound may reach it.
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/load.ts';
import { configError } from '../harness/config-error.ts';
import { REPAIR_NAME_MAX } from '../../src/config/bounds.ts';
import { REPAIR_KEY_MAX } from '../../src/repair/messages.ts';

/** A configuration with one setting written as `value`; `line` is the line it is on. */
interface Case {
  setting: string;
  doc: (value: string) => string;
  line: number;
  /** The largest value accepted, as written. */
  bound: string;
  /** The smallest value refused, as written. */
  over: string;
  /** What the refusal says (the bound, in the setting's unit). */
  says: string;
  /** The bound in milliseconds, for a duration (checked below Node's timer limit). */
  ms?: number;
}

const weeder = (field: string) => (value: string) =>
  `weeder:\n  ${field}: ${value}\n  servicesAndDependantSelectors: { etcd: { podSelectors: [ { matchLabels: { app: x } } ] } }\n`;

/** A repair section; `at` places the field on the step, the operation, the procedure or the section. */
const repair = (at: 'step' | 'operation' | 'procedure' | 'section', field: string) => (value: string) => [
  'repair:',
  '  repair_procedures:',
  `    - machine_types: [${at === 'procedure' ? value : 'qemu'}]`,
  '      repair_operations:',
  `        - operation: ${at === 'operation' && field === 'operation' ? value : 'reboot'}`,
  ...(at === 'operation' && field !== 'operation' ? [`          ${field}: ${value}`] : []),
  '          repair_steps:',
  '            - repair_command: [reboot]',
  ...(at === 'step' ? [`              ${field}: ${value}`] : []),
  '          health_check_command: [check]',
  ...(at === 'section' ? [`  ${field}: ${value}`] : []),
  '',
].join('\n');

const taint = (field: string) => (value: string) =>
  `taintReplacement:\n  podSelector: { matchLabels: { app: fdb } }\n  ${field}: ${value}\n`;

const taintKey = (value: string) =>
  `taintReplacement:\n  podSelector: { matchLabels: { app: fdb } }\n  taintReplacementOptions:\n    - key: example.org/maintenance\n      durationInSeconds: ${value}\n`;

const temporal = (field: string) => (value: string) => `temporal:\n  ${field}: ${value}\n`;

const DAY = 86_400;
const WEEK = 7 * DAY;

const durations: Case[] = [
  { setting: 'weeder.watchDuration', doc: weeder('watchDuration'), line: 2, bound: '24h', over: '24h0m0.001s', says: 'at most 24h (a day)', ms: DAY * 1000 },
  ...(['command_timeout_seconds', 'command_interval', 'watch_seconds'] as const).map((field): Case => ({
    setting: `repair.repair_procedures[0].repair_operations[0].repair_steps[0].${field}`, doc: repair('step', field), line: 8,
    bound: String(DAY), over: String(DAY + 1), says: `at most ${DAY} seconds (a day)`, ms: DAY * 1000,
  })),
  ...(['command_timeout_seconds', 'success_command_timeout'] as const).map((field): Case => ({
    setting: `repair.repair_procedures[0].repair_operations[0].${field}`, doc: repair('operation', field), line: 6,
    bound: String(DAY), over: String(DAY + 1), says: `at most ${DAY} seconds (a day)`, ms: DAY * 1000,
  })),
  ...(['evict_interval', 'eviction_timeout_seconds'] as const).map((field): Case => ({
    setting: `repair.${field}`, doc: repair('section', field), line: 9,
    bound: String(DAY), over: String(DAY + 1), says: `at most ${DAY} seconds (a day)`, ms: DAY * 1000,
  })),
  { setting: 'taintReplacement.taintReplacementTimeSeconds', doc: taint('taintReplacementTimeSeconds'), line: 3, bound: String(DAY), over: String(DAY + 1), says: `at most ${DAY} seconds (a day)`, ms: DAY * 1000 },
  { setting: 'taintReplacement.failureDetectionTimeSeconds', doc: taint('failureDetectionTimeSeconds'), line: 3, bound: String(WEEK), over: String(WEEK + 1), says: `at most ${WEEK} seconds (a week)`, ms: WEEK * 1000 },
  {
    setting: 'taintReplacement.taintReplacementOptions[0].durationInSeconds', doc: taintKey, line: 5, bound: String(WEEK), over: String(WEEK + 1),
    says: `at most ${WEEK} seconds (a week), or 9223372036854775807 to ignore the key`, ms: WEEK * 1000,
  },
];

const names: Case[] = [
  { setting: 'temporal.taskQueue', doc: temporal('taskQueue'), line: 2, bound: 'q'.repeat(200), over: 'q'.repeat(201), says: 'at most 200 characters' },
  { setting: 'repair.taskQueue', doc: repair('section', 'taskQueue'), line: 9, bound: 'q'.repeat(200), over: 'q'.repeat(201), says: 'at most 200 characters' },
  { setting: 'temporal.namespace', doc: temporal('namespace'), line: 2, bound: 'n'.repeat(255), over: 'n'.repeat(256), says: 'at most 255 characters' },
  { setting: 'repair.repair_procedures[0].repair_operations[0].operation', doc: repair('operation', 'operation'), line: 5, bound: 'o'.repeat(REPAIR_NAME_MAX), over: 'o'.repeat(REPAIR_NAME_MAX + 1), says: 'at most 63 characters' },
  { setting: 'repair.repair_procedures[0].machine_types[0]', doc: repair('procedure', 'machine_types'), line: 3, bound: 'm'.repeat(REPAIR_NAME_MAX), over: 'm'.repeat(REPAIR_NAME_MAX + 1), says: 'at most 63 characters' },
];

describe('config: bounds', () => {
  for (const c of [...durations, ...names]) {
    it(`${c.setting}: ${c.bound.length > 20 ? `${c.bound.length} characters` : c.bound} is taken, ${c.over.length > 20 ? `${c.over.length}` : c.over} refused naming the bound`, () => {
      parseConfig(c.doc(c.bound), 'bounds.yaml');
      const err = configError(() => parseConfig(c.doc(c.over), 'bounds.yaml'));
      assert.equal(err.problems.length, 1, err.message);
      const [problem] = err.problems;
      assert.equal(problem!.path, c.setting, err.message);
      assert.equal(problem!.line, c.line, err.message);
      assert.ok(problem!.message.includes(c.says), `"${problem!.message}" does not say "${c.says}"`);
      assert.match(err.message, new RegExp(`config bounds\\.yaml: .*\\n  - ${c.setting.replace(/[.[\]]/g, '\\$&')}: .*\\(line ${c.line}\\)`));
    });
  }

  it('keeps every duration bound below the longest timer Node keeps (2^31 - 1 ms)', () => {
    for (const c of durations) assert.ok(c.ms! < 2 ** 31 - 1, `${c.setting}: ${c.ms} ms`);
  });

  it("still reads FDB's int64 maximum as an ignored taint key, and the largest safe integer alike", () => {
    for (const ignored of ['9223372036854775807', String(Number.MAX_SAFE_INTEGER)]) {
      const c = parseConfig(taintKey(ignored), 'bounds.yaml').taintReplacement!;
      assert.equal(c.taintReplacementOptions[0]!.durationInSeconds, Number.MAX_SAFE_INTEGER, ignored);
    }
    configError(() => parseConfig(taintKey(String(Number.MAX_SAFE_INTEGER - 1)), 'bounds.yaml'));
  });

  it('refuses a task queue name with spaces or control characters, in temporal as in repair', () => {
    for (const doc of [temporal('taskQueue'), repair('section', 'taskQueue')]) {
      const err = configError(() => parseConfig(doc('"my queue"'), 'bounds.yaml'));
      assert.match(err.problems[0]!.message, /without spaces or control characters/);
    }
  });

  it('names retries as counts, not seconds', () => {
    const err = configError(() => parseConfig(repair('section', 'evict_retries')('"3"'), 'bounds.yaml'));
    assert.equal(err.problems[0]!.path, 'repair.evict_retries');
    assert.match(err.problems[0]!.message, /^must be a whole number \(got "3"\)$/);
  });
});

describe('config bounds agree with the messages that carry them', () => {
  it('a machine type or operation the configuration takes fits the repair queue add update', () => {
    assert.equal(REPAIR_NAME_MAX, REPAIR_KEY_MAX);
  });
});
