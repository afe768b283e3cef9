// The configuration's limits: its size (the file, a ConfigMap's text, each fromFile), an empty
// configuration, YAML's nesting and aliases, and every value a refusal echoes, bounded.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config/errors.ts';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { CONFIG_MAX_BYTES } from '../../src/config/size.ts';
import { runTend } from '../harness/cli.ts';
import { configError } from '../harness/config-error.ts';

/** The ConfigError `promise` is rejected with. */
async function refusal(promise: Promise<unknown>): Promise<ConfigError> {
  const err = await promise.then(() => assert.fail('expected a ConfigError'), (e: unknown) => e);
  assert.ok(err instanceof ConfigError, String(err));
  return err;
}

const LONG = 10_000;
/** The longest a refusal of one problem may be: its words bounded, whatever it was given. */
const SHORT = 1_000;

describe('config limits', function () {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-config-size-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const file = async (name: string, text: string | Buffer) => {
    const p = join(dir, name);
    await writeFile(p, text);
    return p;
  };
  /** Valid YAML past the bound: a comment line repeated. */
  const big = (bytes: number) => `temporal: {}\n${'# padding padding padding padding padding padding padding padding\n'.repeat(Math.ceil(bytes / 66))}`;

  describe('size', () => {
    it('refuses a file past 1 MiB before reading it, naming its size and the bound', async () => {
      const p = await file('big.yaml', big(CONFIG_MAX_BYTES + 1));
      const err = await refusal(loadConfig({ file: p }));
      assert.equal(err.problems.length, 1);
      assert.match(err.message, /is \d+ bytes, past the most tend reads \(1 MiB, 1048576 bytes/);
      assert.ok(err.message.startsWith(`config ${p}:`), err.message);
    });

    it('reads a file of just under 1 MiB', async () => {
      const text = big(CONFIG_MAX_BYTES - 200);
      assert.ok(Buffer.byteLength(text) <= CONFIG_MAX_BYTES);
      const p = await file('under.yaml', text);
      assert.equal((await loadConfig({ file: p })).temporal.taskQueue, 'tend');
    });

    it('refuses the text of a ConfigMap key past 1 MiB (counted in bytes)', () => {
      // 400,000 three-byte characters: under the bound in characters, past it in bytes.
      const err = configError(() => parseConfig(`temporal: {}\n# ${'€'.repeat(400_000)}\n`, 'configmap tend-system/tend-config'));
      assert.match(err.message, /^config configmap tend-system\/tend-config: is \d+ bytes, past the most tend reads/);
    });

    it('refuses a fromFile past 1 MiB, naming it', async () => {
      await file('cluster.yml', `repair:\n${big(CONFIG_MAX_BYTES + 1)}`);
      const p = await file('with-from-file.yaml', 'repair: { fromFile: cluster.yml }\n');
      const err = await refusal(loadConfig({ file: p }));
      assert.equal(err.problems[0]?.path, 'repair.fromFile');
      assert.match(err.problems[0]!.message, /^cluster\.yml: is \d+ bytes, past the most tend reads/);
    });

    it('tend config validate refuses a 50 MB file at once, exit 2', async function () {
      this.timeout(60_000);
      const p = await file('huge.yaml', Buffer.alloc(50 * 1024 * 1024, '#'));
      const started = Date.now();
      const r = await runTend(['config', 'validate', p], { timeoutMs: 30_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /is 52428800 bytes, past the most tend reads/);
      assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
    });
  });

  describe('an empty configuration', () => {
    for (const [name, text] of [['an empty file', ''], ['a file of comments', '# nothing here\n\n'], ['a lone ---', '---\n'], ['null', 'null\n']] as const) {
      it(`refuses ${name}, naming the file`, async () => {
        const p = await file('empty.yaml', text);
        const err = await refusal(loadConfig({ file: p }));
        assert.match(err.message, new RegExp(`^config ${p}: holds no settings .*write \\{\\}$`));
      });
    }

    it('takes {} as every default', async () => {
      const p = await file('defaults.yaml', '{}\n');
      assert.equal((await loadConfig({ file: p })).temporal.address, 'localhost:7233');
    });

    it('tend config validate exits 2 on an empty file', async () => {
      const p = await file('empty-cli.yaml', '# nothing\n');
      const r = await runTend(['config', 'validate', p]);
      assert.equal(r.code, 2, r.stdout);
      assert.match(r.stderr, /holds no settings/);
      assert.doesNotMatch(r.stdout, /config OK/);
    });
  });

  describe('YAML', () => {
    it('refuses nesting too deep as invalid YAML', () => {
      const err = configError(() => parseConfig(`temporal: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, 't'));
      assert.match(err.message, /invalid YAML at line 1/);
    });

    it('refuses a billion laughs', () => {
      let text = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
      for (let i = 1; i < 9; i++) text += `a${i}: &a${i} [${Array.from({ length: 10 }, () => `*a${i - 1}`).join(', ')}]\n`;
      const err = configError(() => parseConfig(text, 't'));
      assert.match(err.message, /invalid YAML: Excessive alias count/);
    });
  });

  describe('long values', () => {
    it('refuses a 10,000-character temporal.address for its length, echoing only its start', () => {
      const err = configError(() => parseConfig(`temporal: { address: "${'a'.repeat(LONG)}:7233" }\n`, 't'));
      assert.equal(err.problems.length, 1, err.message);
      assert.match(err.problems[0]!.message, /is 10005 characters long, past the most it may have \(259/);
      assert.doesNotMatch(err.message, /must be host:port/);
      assert.ok(err.message.length < SHORT, `${err.message.length} characters`);
    });

    it('bounds TEMPORAL_ADDRESS in its refusal too', () => {
      const was = process.env.TEMPORAL_ADDRESS;
      process.env.TEMPORAL_ADDRESS = `${'b'.repeat(LONG)}:7233`;
      try {
        const err = configError(() => parseConfig('temporal: {}\n', 't'));
        assert.match(err.message, /TEMPORAL_ADDRESS is "b+…: is 10005 characters long/);
        assert.ok(err.message.length < SHORT, `${err.message.length} characters`);
      } finally {
        if (was === undefined) delete process.env.TEMPORAL_ADDRESS;
        else process.env.TEMPORAL_ADDRESS = was;
      }
    });

    for (const [name, yaml] of [
      ['an unknown key', `temporal: { "${'k'.repeat(900)}": 1 }\n`],
      ['an explicit key', `temporal:\n  ? ${'k'.repeat(LONG)}\n  : 1\n`],
      ['a kubeconfig path', `kubernetes: { kubeconfig: "/${'p'.repeat(LONG)}" }\n`],
      ['a context', `kubernetes: { context: "${'c'.repeat(LONG)}" }\n`],
      ['an apiKeyEnv', `temporal: { apiKeyEnv: "${'E'.repeat(LONG)}" }\n`],
      ['a task queue', `temporal: { taskQueue: "${'q'.repeat(LONG)}" }\n`],
      ['a repair state_dir', `repair: { state_dir: "${'s'.repeat(LONG)}", repair_procedures: [] }\n`],
    ] as const) {
      it(`refuses ${name} of 10,000 characters with a refusal of bounded length`, () => {
        const err = configError(() => parseConfig(yaml, 't'));
        assert.ok(err.message.length < SHORT, `${err.message.length} characters: ${err.message.slice(0, 300)}`);
      });
    }

    it('says a long apiKeyEnv is too long, not that its characters are wrong', () => {
      const err = configError(() => parseConfig(`temporal: { apiKeyEnv: "${'9'.repeat(300)}" }\n`, 't'));
      assert.equal(err.problems.length, 1, err.message);
      assert.match(err.problems[0]!.message, /is 300 characters long, past the most it may have \(255\)/);
    });
  });
});
