// The Temporal connection's settings: the config file's `temporal` section, then TEMPORAL_*
// variables, then the temporal CLI's profile, then tend's defaults; each bad value named by where
// it came from.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.ts';
import { resolveTemporal, temporalFileSchema, temporalOrigins, type TemporalConfig } from '../../src/config/schema.ts';

const dir = mkdtempSync(join(tmpdir(), 'tend-connection-'));
const toml = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

const profiles = toml('temporal.toml', `
[profile.default]
address = "profile-default:7233"
namespace = "ns-default"

[profile.cloud]
address = "cloud.example:7233"
namespace = "ns-cloud"
api_key = "profile-key"
[profile.cloud.tls]
server_name = "profile-server"
client_cert_path = "/profile/client.crt"
client_key_path = "/profile/client.key"

[profile.badaddress]
address = "http://nope"
`);

/** Resolves a file section (YAML-like object) against exactly `env` (HOME pointed at an empty folder). */
function resolve(file: Record<string, unknown>, env: Record<string, string>): TemporalConfig {
  const result = resolveTemporal(temporalFileSchema.parse(file), { HOME: join(dir, 'no-home'), ...env });
  if ('problems' in result) assert.fail(`problems: ${result.problems.map((p) => p.message).join('; ')}`);
  return result.temporal;
}

function problems(file: Record<string, unknown>, env: Record<string, string>): string[] {
  const result = resolveTemporal(temporalFileSchema.parse(file), { HOME: join(dir, 'no-home'), ...env });
  assert.ok('problems' in result, `expected problems, got ${JSON.stringify(result)}`);
  return result.problems.map((p) => `${p.path.join('.')}: ${p.message}`);
}

describe('Temporal connection: resolution order', () => {
  it("is tend's defaults when nothing gives a setting", () => {
    const t = resolve({}, {});
    assert.deepEqual(t, { address: 'localhost:7233', namespace: 'default', taskQueue: 'tend' });
    assert.equal(temporalOrigins(t)?.address, "tend's default");
  });

  it('reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TEMPORAL_API_KEY', () => {
    const t = resolve({}, { TEMPORAL_ADDRESS: 'env-host:7233', TEMPORAL_NAMESPACE: 'env-ns', TEMPORAL_API_KEY: 'env-key' });
    assert.equal(t.address, 'env-host:7233');
    assert.equal(t.namespace, 'env-ns');
    assert.equal(t.apiKey, 'env-key');
    assert.deepEqual(temporalOrigins(t), { address: 'TEMPORAL_ADDRESS', namespace: 'TEMPORAL_NAMESPACE', apiKey: 'TEMPORAL_API_KEY', tls: {} });
  });

  it('reads the profile "default" of TEMPORAL_CONFIG_FILE, and TEMPORAL_PROFILE chooses another', () => {
    assert.equal(resolve({}, { TEMPORAL_CONFIG_FILE: profiles }).address, 'profile-default:7233');
    const t = resolve({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud' });
    assert.equal(t.address, 'cloud.example:7233');
    assert.equal(t.namespace, 'ns-cloud');
    assert.equal(t.apiKey, 'profile-key');
    assert.match(temporalOrigins(t)!.address, /^address of temporal CLI profile "cloud" in .*temporal\.toml$/);
  });

  it('finds the default config file under XDG_CONFIG_HOME, else HOME/.config', () => {
    const xdg = join(dir, 'xdg');
    mkdirSync(join(xdg, 'temporalio'), { recursive: true });
    writeFileSync(join(xdg, 'temporalio', 'temporal.toml'), '[profile.default]\naddress = "xdg-host:7233"\n');
    assert.equal(resolve({}, { XDG_CONFIG_HOME: xdg }).address, 'xdg-host:7233');
    const home = join(dir, 'home');
    mkdirSync(join(home, '.config', 'temporalio'), { recursive: true });
    writeFileSync(join(home, '.config', 'temporalio', 'temporal.toml'), '[profile.default]\nnamespace = "home-ns"\n');
    assert.equal(resolve({}, { HOME: home }).namespace, 'home-ns');
  });

  it('takes each setting from the first source that has it: file, then environment, then profile', () => {
    const env = { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud', TEMPORAL_NAMESPACE: 'env-ns' };
    const t = resolve({ address: 'file-host:7233', taskQueue: 'q' }, env);
    assert.equal(t.address, 'file-host:7233');
    assert.equal(t.namespace, 'env-ns');
    assert.equal(t.apiKey, 'profile-key');
    assert.equal(t.taskQueue, 'q');
    const o = temporalOrigins(t)!;
    assert.equal(o.address, 'temporal.address in the config file');
    assert.equal(o.namespace, 'TEMPORAL_NAMESPACE');
    assert.match(o.apiKey!, /^api_key of temporal CLI profile "cloud"/);
  });

  it('an API key: the file\'s apiKey, else its apiKeyEnv, else TEMPORAL_API_KEY, else the profile\'s', () => {
    const env = { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud', TEMPORAL_API_KEY: 'env-key', MY_KEY: 'my-key' };
    assert.equal(resolve({ apiKey: 'file-key' }, env).apiKey, 'file-key');
    const saved = process.env.MY_KEY;
    process.env.MY_KEY = 'my-key'; // apiKeyEnv is read from the process's environment by the file's schema
    try {
      const t = resolve({ apiKeyEnv: 'MY_KEY' }, env);
      assert.equal(t.apiKey, 'my-key');
      assert.equal(t.apiKeyEnv, 'MY_KEY');
    } finally {
      if (saved === undefined) delete process.env.MY_KEY;
      else process.env.MY_KEY = saved;
    }
    assert.equal(resolve({}, env).apiKey, 'env-key');
    assert.equal(resolve({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud' }).apiKey, 'profile-key');
  });

  it('an empty variable counts as unset', () => {
    assert.equal(resolve({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_ADDRESS: '' }).address, 'profile-default:7233');
  });
});

describe('Temporal connection: TLS', () => {
  it("a `tls` in the file is the whole setting: the environment's and the profile's TLS fields are not mixed in", () => {
    const tls = { clientCertPath: '/file/c.crt', clientKeyPath: '/file/c.key' };
    const t = resolve({ tls }, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud', TEMPORAL_TLS_SERVER_NAME: 'env-name' });
    assert.deepEqual(t.tls, tls);
    assert.equal(resolve({ tls: false }, { TEMPORAL_TLS: 'true' }).tls, false);
  });

  it('without one, each TLS field comes from the environment, else the profile', () => {
    const t = resolve({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud', TEMPORAL_TLS_CLIENT_CERT_PATH: '/env/c.crt', TEMPORAL_TLS_CLIENT_KEY_PATH: '/env/c.key' });
    assert.deepEqual(t.tls, { serverName: 'profile-server', clientCertPath: '/env/c.crt', clientKeyPath: '/env/c.key' });
    const o = temporalOrigins(t)!.tls;
    assert.equal(o.clientCertPath, 'TEMPORAL_TLS_CLIENT_CERT_PATH');
    assert.match(o.serverName!, /^tls\.server_name of temporal CLI profile "cloud"/);
  });

  it('TEMPORAL_TLS=true is TLS with the system roots, false turns TLS off', () => {
    assert.equal(resolve({}, { TEMPORAL_TLS: 'true' }).tls, true);
    assert.equal(resolve({}, { TEMPORAL_TLS: 'false', TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'cloud' }).tls, false);
    assert.equal(resolve({}, {}).tls, undefined);
  });

  it('TEMPORAL_TLS as the temporal CLI reads it: TRUE, True, t and 1 are true, FALSE, f and 0 false, empty unset', () => {
    for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True']) assert.equal(resolve({}, { TEMPORAL_TLS: v }).tls, true, v);
    for (const v of ['0', 'f', 'F', 'FALSE', 'false', 'False']) assert.equal(resolve({}, { TEMPORAL_TLS: v }).tls, false, v);
    assert.equal(resolve({}, { TEMPORAL_TLS: '' }).tls, undefined);
  });

  it('takes PEM text from TEMPORAL_TLS_*_DATA', () => {
    const t = resolve({}, { TEMPORAL_TLS_CLIENT_CERT_DATA: 'CERT', TEMPORAL_TLS_CLIENT_KEY_DATA: 'KEY', TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'CA' });
    assert.deepEqual(t.tls, { clientCertData: 'CERT', clientKeyData: 'KEY', serverRootCAData: 'CA' });
  });
});

describe('Temporal connection: bad values name where they came from', () => {
  it('an address from TEMPORAL_ADDRESS', () => {
    assert.deepEqual(problems({}, { TEMPORAL_ADDRESS: 'localhost' }),
      ['address: TEMPORAL_ADDRESS is "localhost": must be host:port without a scheme, like localhost:7233 or my-namespace.a1b2c.tmprl.cloud:7233']);
  });

  it("an address from a profile: the profile's name and file", () => {
    const [p] = problems({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'badaddress' });
    assert.match(p!, /^address: address of temporal CLI profile "badaddress" in .*temporal\.toml is "http:\/\/nope": must be host:port/);
  });

  it('a bad value the file overrides is no problem', () => {
    assert.equal(resolve({ address: 'h:1' }, { TEMPORAL_ADDRESS: 'localhost' }).address, 'h:1');
  });

  it('a TEMPORAL_CONFIG_FILE that does not exist', () => {
    assert.deepEqual(problems({}, { TEMPORAL_CONFIG_FILE: join(dir, 'missing.toml') }),
      [`: TEMPORAL_CONFIG_FILE names ${join(dir, 'missing.toml')}, which does not exist`]);
  });

  it('a TEMPORAL_PROFILE the file does not have', () => {
    assert.deepEqual(problems({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'nope' }),
      [`: TEMPORAL_PROFILE is "nope", but ${profiles} has no profile "nope" ([profile.nope])`]);
  });

  it('a TEMPORAL_PROFILE without any config file', () => {
    const [p] = problems({}, { TEMPORAL_PROFILE: 'x' });
    assert.match(p!, /TEMPORAL_PROFILE is "x", but there is no temporal CLI config file .*; set TEMPORAL_CONFIG_FILE/);
  });

  it('a config file that is not TOML', () => {
    const bad = toml('bad.toml', '[profile.default\naddress = 1\n');
    const [p] = problems({}, { TEMPORAL_CONFIG_FILE: bad });
    assert.ok(p!.startsWith(`: temporal CLI config file ${bad}: `), p);
  });

  it('half a client certificate pair, named by its variable', () => {
    assert.deepEqual(problems({}, { TEMPORAL_TLS_CLIENT_CERT_PATH: '/c.crt' }),
      ["tls: TEMPORAL_TLS_CLIENT_CERT_PATH gives half of a client certificate pair; mutual TLS also needs a client key (TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA, or the profile's tls.client_key_path)"]);
  });

  it('a path and inline data for the same file', () => {
    const [p] = problems({}, { TEMPORAL_TLS_CLIENT_CERT_PATH: '/c.crt', TEMPORAL_TLS_CLIENT_CERT_DATA: 'x', TEMPORAL_TLS_CLIENT_KEY_PATH: '/k' });
    assert.match(p!, /client_cert_path and client_cert_data are both set; set one of them/);
  });

  it('host verification turned off, which tend does not do', () => {
    for (const v of ['true', 'TRUE', '1']) {
      const [p] = problems({}, { TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: v });
      assert.match(p!, /^tls: TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is set, but tend always verifies/, v);
    }
    assert.equal(resolve({}, { TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'false' }).tls, undefined);
  });

  it('a TEMPORAL_TLS or TEMPORAL_TLS_DISABLE_HOST_VERIFICATION that is no boolean, never read as false', () => {
    for (const name of ['TEMPORAL_TLS', 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION']) {
      for (const v of ['yes', 'maybe', 'on']) {
        assert.deepEqual(problems({}, { [name]: v }), [`tls: ${name} is "${v}": not a boolean (true or false; the temporal CLI also reads 1, t, TRUE, True, 0, f, FALSE, False)`]);
      }
    }
  });

  it('a profile value of the wrong type: a list for a name, a quoted tls.disabled', () => {
    const typed = toml('typed.toml', '[profile.default]\naddress = 7233\nnamespace = ["a"]\n[profile.default.tls]\ndisabled = "maybe"\n');
    const found = problems({}, { TEMPORAL_CONFIG_FILE: typed });
    assert.equal(found.length, 3, found.join('\n'));
    assert.match(found[0]!, /^: namespace of temporal CLI profile "default" in .*typed\.toml must be a string \(got a list\)$/);
    assert.match(found[1]!, /^: tls\.disabled of temporal CLI profile "default" in .*typed\.toml must be true or false, unquoted \(got "maybe"\)$/);
    assert.match(found[2]!, /^address: address of temporal CLI profile "default" in .*typed\.toml is "7233": .*expected string/);
  });

  it('the config loader reports them as problems of temporal, with the file name', () => {
    const saved = process.env.TEMPORAL_ADDRESS;
    process.env.TEMPORAL_ADDRESS = 'no-port';
    try {
      assert.throws(() => parseConfig('temporal: { taskQueue: q }\n', 'my.yaml'),
        /config my\.yaml: 1 problem:\n {2}- temporal\.address \(line 1\): TEMPORAL_ADDRESS is "no-port": must be host:port|config my\.yaml: 1 problem:\n {2}- temporal\.address: TEMPORAL_ADDRESS is "no-port"/);
      process.env.TEMPORAL_ADDRESS = 'env-host:7233';
      assert.equal(parseConfig('temporal: { taskQueue: q }\n', 'my.yaml').temporal.address, 'env-host:7233');
    } finally {
      if (saved === undefined) delete process.env.TEMPORAL_ADDRESS;
      else process.env.TEMPORAL_ADDRESS = saved;
    }
  });
});

describe('Temporal connection: an empty TEMPORAL_PROFILE', () => {
  it('is the profile "default", as when it is unset', () => {
    assert.equal(resolve({}, { TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: '' }).address, 'profile-default:7233');
  });
});
