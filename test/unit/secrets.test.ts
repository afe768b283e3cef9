// src/log.ts (redact), src/config/load.ts and src/temporal/connection.ts: the places a credential could be written.
// No credential in what tend writes: the logger's masking, config errors, `config validate`'s
// description, and Temporal connection errors, each tried with a distinctive key.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describeConfig, parseConfig } from '../../src/config/load.ts';
import { redact, registerSecret } from '../../src/log.ts';
import { connectClient, UnreachableError } from '../../src/temporal/connection.ts';
import { configError } from '../harness/config-error.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

const PEM = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgabcdefghijklmnop\nqrstuvwxyzABCDEFGHIJKLMN\n-----END PRIVATE KEY-----';
const JWT = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ';


describe('secrets: redact', () => {
  it('masks a registered value wherever it appears, also inside a JSON string', () => {
    registerSecret('tend-secret-KEY-unit-"1"');
    const text = redact('failed: tend-secret-KEY-unit-"1" and {"msg":"tend-secret-KEY-unit-\\"1\\""}');
    assert.ok(!text.includes('tend-secret-KEY-unit'), text);
    assert.equal(text, 'failed: [redacted] and {"msg":"[redacted]"}');
  });

  it('masks PEM blocks, also JSON-escaped and cut off', () => {
    for (const text of [`key: ${PEM} end`, JSON.stringify({ msg: `read ${PEM}` }), `start ${PEM.slice(0, 60)}`]) {
      const out = redact(text);
      assert.ok(!out.includes('MIGHAgEAMBMG'), out);
      assert.match(out, /-----BEGIN PRIVATE KEY----- \[redacted\]/);
    }
  });

  it('masks bearer and basic credentials, JWTs, and fields named like credentials', () => {
    const cases: [string, string][] = [
      ['Authorization: Bearer abcdef123456', 'Bearer [redacted]'],
      ['authorization: Basic dXNlcjpwYXNz', 'Basic [redacted]'],
      [`token ${JWT} given`, 'token [redacted] given'],
      ['{"apiKey":"k-zyxwvutsrq"}', '{"apiKey":"[redacted]"}'],
      ['temporal: { apiKey: k-zyxwvutsrq }', 'apiKey: [redacted]'],
      ['TEMPORAL_API_KEY=k-zyxwvutsrq tend run', 'TEMPORAL_API_KEY=[redacted]'],
      ['client-key-data: LS0tLS1CRUdJTg==', 'client-key-data: [redacted]'],
      ['{\\"token\\":\\"abcdefgh\\"}', '{\\"token\\":\\"[redacted]\\"}'],
    ];
    for (const [text, expected] of cases) assert.ok(redact(text).includes(expected), `${text} -> ${redact(text)}`);
  });

  it('leaves what names a credential, and ordinary text, alone', () => {
    for (const text of [
      'temporal: { apiKeyEnv: TEMPORAL_API_KEY }',
      'temporal: localhost:7233, namespace default, task queue tend, no TLS, API key from $TEMPORAL_API_KEY',
      'cannot reach Temporal at 127.0.0.1:1 (namespace default): connection refused',
      'no worker answered on task queue "tend" within 30s',
      // A setting's dotted path, as tend's errors name it, is followed by the error, not a value.
      'temporal.apiKey: must not be empty',
      'weeder.dependants[0].selector.matchLabels.password: must be a label value',
    ]) assert.equal(redact(text), text);
  });

  it('registers credentials the environment holds under credential-like names, in a fresh process', async () => {
    const script = `
      const { log } = await import(${JSON.stringify(join(root, 'src/log.ts'))});
      const err = new Error('connect failed with key env-secret-KEY-42 and token ${JWT}');
      log.error({ err, config: { temporal: { apiKey: 'field-secret-KEY-43' } }, headers: { authorization: 'Bearer hdr-secret-44' } }, 'failed: env-secret-KEY-42');
      log.flush();
    `;
    const { stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, MY_SERVICE_API_KEY: 'env-secret-KEY-42', TEND_LOG_LEVEL: 'info' },
    });
    for (const secret of ['env-secret-KEY-42', 'field-secret-KEY-43', 'hdr-secret-44', JWT.split('.')[1]!]) {
      assert.ok(!stderr.includes(secret), `${secret} in ${stderr}`);
    }
    const line = JSON.parse(stderr.trim().split('\n').at(-1)!) as { msg: string; err: { stack: string } };
    assert.equal(line.msg, 'failed: [redacted]');
    assert.match(line.err.stack, /connect failed with key \[redacted\] and token \[redacted\]/);
  });
});

describe('secrets: configuration errors and description', () => {
  const KEY = 'tend-secret-KEY-cfg-1234';

  it('a file with an API key and another problem does not show the key', () => {
    const err = configError(() => parseConfig(`temporal:\n  apiKey: ${KEY}\n  adress: x:1\n`, 't'));
    assert.match(err.message, /temporal.adress: unknown field/);
    assert.ok(!err.message.includes(KEY) && !JSON.stringify(err.problems).includes(KEY), err.message);
  });

  it('the key in a broken YAML line, in the wrong type, or pasted into apiKeyEnv is not shown', () => {
    for (const yaml of [
      `temporal:\n  apiKey: "${KEY}-a\n  address: x\n`,
      `temporal:\n  apiKey: ${KEY}-b: x\n`,
      `temporal: { apiKey: [${KEY}-c] }\n`,
      `temporal: { apiKey: { ${KEY}-d: 1 } }\n`,
      `temporal:\n  apiKey: *${KEY}-e\n`,
      `temporal:\n  apiKeyEnv: ${KEY}-f\n`,
      `temporal:\n  apiKeyEnv: "${KEY}-g"\n  apiKey: x1234567\n`,
    ]) {
      const err = configError(() => parseConfig(yaml, 't'));
      assert.ok(!err.message.includes(KEY), `${yaml} -> ${err.message}`);
    }
  });

  it('config validate\'s description names where the key comes from, never the key', () => {
    process.env.TEND_TEST_SECRETS_KEY = KEY;
    try {
      const fromEnv = parseConfig('temporal: { apiKeyEnv: TEND_TEST_SECRETS_KEY }', 't');
      assert.equal(fromEnv.temporal.apiKey, KEY);
      assert.match(describeConfig(fromEnv), /API key from \$TEND_TEST_SECRETS_KEY/);
      const inline = parseConfig(`temporal: { apiKey: ${KEY}-inline }`, 't');
      assert.ok(!describeConfig(inline).includes(KEY));
      assert.ok(!describeConfig(fromEnv).includes(KEY));
    } finally {
      delete process.env.TEND_TEST_SECRETS_KEY;
    }
  });
});

describe('secrets: Temporal connection errors', () => {
  const KEY = 'tend-secret-KEY-conn-1234';

  it('an unreachable server: the address is named, the key is not', async () => {
    // Port 1 on the loopback: refused at once.
    const err = await connectClient({ address: '127.0.0.1:1', namespace: 'default', taskQueue: 'tend', apiKey: KEY, tls: false })
      .then(() => assert.fail('connected'), (e: unknown) => e);
    assert.ok(err instanceof UnreachableError, String(err));
    assert.match(err.message, /cannot reach Temporal at 127\.0\.0\.1:1/);
    assert.ok(!err.message.includes(KEY) && !String(err.stack).includes(KEY), err.message);
  });

  it('a missing mTLS file is named by its setting and path, and no key file is read into the error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tend-secrets-'));
    const crt = join(dir, 'tls.crt');
    await writeFile(crt, PEM);
    const err = await connectClient({
      address: '127.0.0.1:1', namespace: 'default', taskQueue: 'tend', apiKey: KEY,
      tls: { clientCertPath: crt, clientKeyPath: join(dir, 'tls.key') },
    }).then(() => assert.fail('connected'), (e: unknown) => e);
    assert.ok(err instanceof UnreachableError, String(err));
    assert.match(err.message, /temporal\.tls\.clientKeyPath .*tls\.key: file not found/);
    assert.ok(!err.message.includes('MIGHAgEAMBMG') && !err.message.includes(KEY), err.message);
  });
});
