// src/log.ts: the two formats of tend's log lines (docs/logging.md), the SDK's lines through the
// same logger (src/workers/runtime.ts), and --log-format / TEND_LOG_FORMAT (src/starters/cli.ts).
// The logger writes to stderr, so each case runs in a fresh process and reads what it wrote.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { logFormat, setLogFormat, textLine } from '../../src/log.ts';
import { buildProgram } from '../../src/starters/cli.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'src/starters/cli.ts');
const logModule = JSON.stringify(join(root, 'src/log.ts'));
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const TEXT_TIME = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`;

/** Runs `body` (an ES module's statements, `log` and `setLogFormat` in scope) in a fresh Node.js; its exit code and output. */
function run(body: string, env: Record<string, string> = {}) {
  // process.exit: the SDK's Runtime, once installed, keeps a process alive.
  const script = `const { log, setLogFormat } = await import(${logModule});\n${body}\nlog.flush();\nprocess.exit(0);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root, encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEND_LOG_LEVEL: 'trace', TEND_LOG_FORMAT: 'json', ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, lines: r.stderr.split('\n').filter((l) => l !== '') };
}

const RECORD = "log.info({ address: '0.0.0.0:9464', port: 9464, ready: true, peer: null, nested: { a: 'x y', b: [1, 2] } }, 'serving /metrics');";

describe('log: the JSON format', () => {
  it('writes each level by its name and the time in ISO-8601 UTC, milliseconds included', () => {
    const before = Date.now();
    const r = run("for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) log[level]({ n: 1 }, `a ${level} line`);");
    const after = Date.now();
    assert.equal(r.lines.length, 6, r.stderr);
    const records = r.lines.map((l) => JSON.parse(l) as { level: unknown; time: unknown; msg: string; pid: unknown; n: number });
    assert.deepEqual(records.map((e) => e.level), ['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
    for (const e of records) {
      assert.match(String(e.time), ISO_UTC);
      const t = Date.parse(String(e.time));
      assert.ok(t >= before - 5 && t <= after + 5, `${String(e.time)} not between the process's start and end`);
      assert.equal(e.msg, `a ${String(e.level)} line`);
      assert.equal(typeof e.pid, 'number');
      assert.equal(e.n, 1);
    }
  });

  it('begins each line with the level and the time, then the fields as given', () => {
    const [line] = run(RECORD).lines;
    assert.match(line!, /^\{"level":"info","time":"[^"]+","pid":\d+,"address":"0\.0\.0\.0:9464","port":9464,"ready":true,"peer":null,"nested":\{"a":"x y","b":\[1,2\]\},"msg":"serving \/metrics"\}$/);
  });
});

describe('log: lines at exit', () => {
  it('every line is written when the logging call returns: all there, in order, at process.exit', () => {
    // The CLI ends with process.exit. A write left to Node.js's thread pool (which a pbkdf2 keeps
    // busy here) would be lost then, or come after the lines behind it.
    for (const format of ['json', 'text']) {
      const r = run(`const { pbkdf2 } = await import('node:crypto');
        pbkdf2('busy', 'salt', 1_000_000, 64, 'sha512', () => undefined);
        for (let i = 0; i < 5; i++) log.info({ i }, 'line');
        process.exit(0);`, { TEND_LOG_FORMAT: format, UV_THREADPOOL_SIZE: '1' });
      const numbers = r.lines.map((l) => Number(/"i":(\d+)|\bi=(\d+)/.exec(l)?.slice(1).find((n) => n !== undefined)));
      assert.deepEqual(numbers, [0, 1, 2, 3, 4], `${format}: ${r.stderr}`);
    }
  });
});

describe('log: the text format', () => {
  it('writes one line a record: time, level, message, then key=value fields', () => {
    const r = run(RECORD, { TEND_LOG_FORMAT: 'text' });
    assert.equal(r.lines.length, 1, r.stderr);
    assert.match(r.lines[0]!, new RegExp(`^${TEXT_TIME} INFO  serving /metrics address=0\\.0\\.0\\.0:9464 port=9464 ready=true peer=null nested\\.a="x y" nested\\.b=\\[1,2\\]$`));
    assert.doesNotMatch(r.lines[0]!, /pid=/);
  });

  it('keeps a record with newlines in its message and an error with its stack on one line', () => {
    const r = run("log.error({ err: new Error('boom\\nsecond line') }, 'failed\\nto start');", { TEND_LOG_FORMAT: 'text' });
    assert.equal(r.lines.length, 1, r.stderr);
    assert.match(r.lines[0]!, new RegExp(`^${TEXT_TIME} ERROR failed\\\\nto start err\\.type=Error err\\.message="boom\\\\nsecond line" err\\.stack="Error: boom\\\\nsecond line\\\\n    at `));
  });

  it('textLine: bare values where unambiguous, JSON-quoted otherwise; nested objects as dotted keys', () => {
    const cases: { record: Record<string, unknown>; line: string }[] = [
      { record: { time: 'T', level: 'warn', msg: 'm' }, line: 'T WARN  m' },
      { record: { time: 'T', level: 'info', msg: 'm', pid: 7, hostname: 'h', a: 'b' }, line: 'T INFO  m a=b' },
      { record: { time: 'T', level: 'info', msg: 'm', s: 'two words', q: 'say "hi"', eq: 'k=v', e: '', bs: 'a\\b', tab: 'a\tb' },
        line: 'T INFO  m s="two words" q="say \\"hi\\"" eq="k=v" e="" bs="a\\\\b" tab="a\\tb"' },
      { record: { time: 'T', level: 'debug', msg: 'm', n: 1.5, t: false, z: null, list: ['a', 1], o: { p: { q: 1 } }, none: {} },
        line: 'T DEBUG m n=1.5 t=false z=null list=["a",1] o.p.q=1 none={}' },
      { record: { time: 'T', level: 'error', msg: 'line\none\u0007', 'odd key': 1 }, line: 'T ERROR line\\none\\u0007 "odd key"=1' },
      { record: { time: 'T', level: 'info', msg: '' , a: 1 }, line: 'T INFO  a=1' },
    ];
    for (const { record, line } of cases) assert.equal(textLine(record), line, JSON.stringify(record));
  });
});

describe('log: credentials are masked alike in both formats', () => {
  const PEM = '-----BEGIN PRIVATE KEY-----\\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgabcdefghijklmnop\\n-----END PRIVATE KEY-----';
  const JWT = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ';
  const secrets = ['env-secret-KEY-51', 'field-secret-KEY-52', 'hdr-secret-53', 'msg-token-54', 'MIGHAgEAMBMG', JWT.split('.')[1]!];
  const body = `
    log.error({ err: new Error('connect failed with env-secret-KEY-51 and ${JWT}'), config: { temporal: { apiKey: 'field-secret-KEY-52' } },
      headers: { authorization: 'Bearer hdr-secret-53' } }, 'failed: env-secret-KEY-51, token=msg-token-54');
    log.warn({ key: '${PEM}' }, 'read a key');
    log.warn({ cut: '${PEM.slice(0, 70)}', after: 'kept' }, 'a key cut short');
  `;
  const env = { MY_SERVICE_API_KEY: 'env-secret-KEY-51' };

  for (const format of ['json', 'text']) {
    it(`${format}: no credential appears, and each line has as many masks as the JSON line`, () => {
      const r = run(body, { ...env, TEND_LOG_FORMAT: format });
      const json = run(body, { ...env, TEND_LOG_FORMAT: 'json' });
      assert.equal(r.lines.length, 3, r.stderr);
      for (const secret of secrets) assert.ok(!r.stderr.includes(secret), `${secret} in ${r.stderr}`);
      const masks = (line: string) => line.split('[redacted]').length - 1;
      assert.deepEqual(r.lines.map(masks), json.lines.map(masks));
      assert.ok(r.lines.every((l) => masks(l) > 0), r.stderr);
    });
  }

  it('json: a PEM block cut short leaves the line JSON, the fields after it kept', () => {
    const r = run(body, { ...env, TEND_LOG_FORMAT: 'json' });
    const cut = JSON.parse(r.lines[2]!) as { cut: string; after: string; msg: string };
    assert.equal(cut.cut, '-----BEGIN PRIVATE KEY----- [redacted] -----END PRIVATE KEY-----');
    assert.equal(cut.after, 'kept');
    assert.equal(cut.msg, 'a key cut short');
  });
});

describe("log: the Temporal SDK's lines", () => {
  it('go through the same logger: same levels, times and format, stamped when the SDK wrote them', () => {
    const script = (format: string) => run(`
      const { installRuntime } = await import(${JSON.stringify(join(root, 'src/workers/runtime.ts'))});
      const { LogTimestamp, Runtime } = await import('@temporalio/worker');
      installRuntime();
      Runtime.instance().logger.warn('from the core', { [LogTimestamp]: 1_700_000_000_123_456_789n, sdkComponent: 'core', task_queue: 'tend' });
      // The SDK buffers its lines (100 ms) before handing them on.
      Runtime.instance().flushLogs();
    `, { TEND_LOG_FORMAT: format, TEND_LOG_LEVEL: 'info' });
    const json = script('json');
    const line = json.lines.find((l) => l.includes('from the core'));
    assert.ok(line, json.stderr);
    const entry = JSON.parse(line) as Record<string, unknown>;
    assert.equal(entry.level, 'warn');
    assert.equal(entry.time, '2023-11-14T22:13:20.123Z');
    assert.equal(entry.source, 'temporal-core');
    assert.equal(entry.taskQueue, 'tend');
    const text = script('text');
    assert.ok(text.lines.includes('2023-11-14T22:13:20.123Z WARN  from the core taskQueue=tend source=temporal-core'), text.stderr);
  });
});

describe('log: choosing the format', () => {
  it('TEND_LOG_FORMAT with a bad value: one line naming the variable and the formats, exit 2', () => {
    const r = spawnSync(process.execPath, [cli, '--version'], { encoding: 'utf8', env: { ...process.env, TEND_LOG_FORMAT: 'yaml' } });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, 'tend: TEND_LOG_FORMAT: "yaml" is not a log format (one of: text, json)\n');
  });

  it('--log-format with a bad value: one line naming the option and the formats, exit 2, nothing run', () => {
    for (const args of [['run', '--log-format', 'yaml'], ['--log-format=yaml', 'run']]) {
      const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...process.env, TEND_LOG_FORMAT: '' }, timeout: 30_000 });
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr, 'tend: --log-format: "yaml" is not a log format (one of: text, json)\n');
      assert.equal(r.stdout, '');
    }
  });

  it('--log-format sets the format for the command, given before or after its name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tend-log-format-'));
    const config = join(dir, 'tend.yaml');
    writeFileSync(config, 'apps:\n  namespaces: [demo]\n');
    const was = logFormat();
    const print = console.log;
    // config validate prints its description: not this test's.
    console.log = () => undefined;
    try {
      for (const [args, expected] of [
        [['config', 'validate', config, '--log-format', 'text'], 'text'],
        [['--log-format=json', 'config', 'validate', config], 'json'],
        [['--log-format', 'text', 'config', 'validate', config], 'text'],
      ] as const) {
        setLogFormat(expected === 'text' ? 'json' : 'text');
        await (await buildProgram([...args])).parseAsync([...args], { from: 'user' });
        assert.equal(logFormat(), expected, args.join(' '));
      }
    } finally {
      console.log = print;
      setLogFormat(was);
    }
  });

  it('the command named after `--log-format VALUE` is the one whose module is loaded', async () => {
    const program = await buildProgram(['--log-format', 'text', 'weeder', 'list']);
    const weeder = program.commands.find((c) => c.name() === 'weeder');
    assert.ok(weeder?.commands.some((c) => c.name() === 'list'), 'tend weeder list is there');
  });

  it('by default: text when stderr is a terminal, JSON when it is not', () => {
    const probe = `const { log } = await import(${logModule}); log.info({ a: 1 }, 'hello');`;
    const piped = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8', env: { ...process.env, TEND_LOG_FORMAT: '' } });
    assert.match(piped.stderr, /^\{"level":"info",.*"msg":"hello"\}\n$/);
    // script(1) runs the command on a terminal of its own and copies what it writes to stdout.
    const command = [process.execPath, '--input-type=module', '-e', probe].map((w) => `'${w.replace(/'/g, "'\\''")}'`).join(' ');
    const tty = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', env: { ...process.env, TEND_LOG_FORMAT: '' } });
    assert.equal(tty.status, 0, tty.stderr);
    assert.match(tty.stdout, new RegExp(`^${TEXT_TIME} INFO  hello a=1\\r?\\n$`));
  });
});
