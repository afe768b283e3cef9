// A Temporal namespace as a real installation finds it: created by hand, without tend's search
// attributes. `tend doctor` names what is missing, `tend setup temporal` registers it (or prints
// the commands), and tend connects with only TEMPORAL_* variables or only a temporal CLI profile.
// The repair queue of another task queue is refused, not waited on.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { runTend, TendProcess } from '../harness/cli.ts';
import { testPort } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { temporalCli } from '../harness/temporal.ts';
import { waitFor } from '../harness/wait.ts';

describe('tend setup temporal and doctor on a namespace without tend', function () {
  this.timeout(10 * 60_000);
  const namespace = `tend-setup-${Date.now()}`;
  const dir = mkdtempSync(join(tmpdir(), 'tend-setup-'));
  /** A configuration without a temporal section: the connection comes from the environment or a profile. */
  const config = join(dir, 'config.yaml');
  /** The environment without any TEMPORAL_* variable of the test's own (nor a profile in HOME). */
  const bare = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg') };
    for (const k of Object.keys(env)) if (k.startsWith('TEMPORAL_')) delete env[k];
    return env;
  };
  const onlyEnv = () => ({ ...bare(), TEMPORAL_ADDRESS: sandbox().temporalAddress, TEMPORAL_NAMESPACE: namespace });
  let worker: TendProcess | undefined;

  before(async () => {
    writeFileSync(config, `kubernetes: { kubeconfig: ${JSON.stringify(sandbox().tendKubeconfig)} }\nhttp: { address: "127.0.0.1:${testPort(19470)}" }\n`);
    await temporalCli(['operator', 'namespace', 'create', '--namespace', namespace]);
  });

  after(async () => {
    await worker?.stop();
  });

  it('doctor names a namespace that does not exist, and where its name came from', async () => {
    const r = await runTend(['doctor', '-c', config, '--timeout', '5'], { env: { ...onlyEnv(), TEMPORAL_NAMESPACE: `${namespace}-missing` } });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`has no namespace "${namespace}-missing" \\(the namespace from TEMPORAL_NAMESPACE\\)`));
    assert.match(r.stderr, /temporal operator namespace create --namespace/);
  });

  it('doctor names each missing search attribute and the commands that add them', async () => {
    const r = await runTend(['doctor', '-c', config, '--timeout', '5'], { env: onlyEnv() });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`namespace ${namespace} at ${sandbox().temporalAddress} is missing what tend needs`));
    assert.match(r.stderr, /search attribute TendCapability: not registered/);
    assert.match(r.stderr, /search attribute TendTarget: not registered/);
    assert.match(r.stderr, /search attribute TendNode: not registered/);
    assert.match(r.stderr, /tend setup temporal/);
  });

  it('setup temporal --print prints the temporal CLI commands and changes nothing', async () => {
    const r = await runTend(['setup', 'temporal', '-c', config, '--print'], { env: onlyEnv() });
    assert.equal(r.code, 0, r.stderr);
    const address = sandbox().temporalAddress;
    assert.deepEqual(r.stdout.trim().split('\n'), [
      `temporal operator search-attribute create --address ${address} --namespace ${namespace} --name TendCapability --type Keyword`,
      `temporal operator search-attribute create --address ${address} --namespace ${namespace} --name TendTarget --type Keyword`,
      `temporal operator search-attribute create --address ${address} --namespace ${namespace} --name TendNode --type Keyword`,
    ]);
    const { stdout } = await temporalCli(['operator', 'search-attribute', 'list', '--namespace', namespace, '-o', 'json']);
    assert.ok(!stdout.includes('TendCapability'), stdout);
  });

  it('setup temporal registers them through the operator service; a second run has nothing to do', async () => {
    const r = await runTend(['setup', 'temporal', '-c', config], { env: onlyEnv() });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`registered TendCapability, TendTarget, TendNode in namespace ${namespace}`));
    const { stdout } = await temporalCli(['operator', 'search-attribute', 'list', '--namespace', namespace, '-o', 'json']);
    assert.match(stdout, /TendCapability/);
    assert.match(stdout, /TendTarget/);
    assert.match(stdout, /TendNode/);
    const again = await runTend(['setup', 'temporal', '-c', config], { env: onlyEnv() });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /has every search attribute tend needs/);
  });

  it('doctor connects with only TEMPORAL_* variables set', async () => {
    worker = new TendProcess(['worker', '-c', config], onlyEnv());
    await waitFor('the worker to start', () => worker!.logs.includes('worker started') || worker!.exited, { timeoutMs: 180_000 });
    assert.ok(!worker.exited, worker.output);
    assert.match(worker.logs, new RegExp(`worker started .*temporal=${sandbox().temporalAddress.replace(/\./g, '\\.')}`));
    const r = await runTend(['doctor', '-c', config, '--timeout', '60'], { env: onlyEnv(), timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).workerTaskQueue, 'tend', r.stdout);
  });

  it('doctor connects with only a temporal CLI profile', async () => {
    const profiles = join(dir, 'temporal.toml');
    writeFileSync(profiles, `[profile.default]\naddress = "127.0.0.1:1"\n\n[profile.sandbox]\naddress = "${sandbox().temporalAddress}"\nnamespace = "${namespace}"\n`);
    const env = { ...bare(), TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: 'sandbox' };
    const r = await runTend(['doctor', '-c', config, '--timeout', '60'], { env, timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).workerTaskQueue, 'tend', r.stdout);
    // The profile "default" is another server: without TEMPORAL_PROFILE tend goes there, and says where it came from.
    const other = await runTend(['doctor', '-c', config, '--timeout', '5'], { env: { ...env, TEMPORAL_PROFILE: '' } });
    assert.equal(other.code, 1);
    assert.match(other.stderr, /cannot reach Temporal at 127\.0\.0\.1:1 \(from address of temporal CLI profile "default" in .*temporal\.toml\)/);
  });

  it('a repair-queue command refuses a queue another task queue runs, naming both, instead of waiting', async () => {
    const connection = await Connection.connect({ address: sandbox().temporalAddress });
    const client = new Client({ connection, namespace });
    try {
      // No worker polls this task queue: a command that reached the queue would wait for ever.
      await client.workflow.start('repairQueueWorkflow', {
        taskQueue: 'tend-elsewhere', workflowId: 'repair-queue', args: [{ entries: [], nextIndex: 1, enabled: true, closing: {} }],
      });
      // add checks its request against the configuration before connecting: this one can run reboot on qemu.
      const withRepair = join(dir, 'with-repair.yaml');
      writeFileSync(withRepair, `${readFileSync(config, 'utf8')}repair:\n  repair_procedures:\n    - machine_types: [qemu]\n` +
        '      repair_operations:\n        - operation: reboot\n          repair_steps: [{ repair_command: [echo] }]\n          health_check_command: [echo, "true"]\n');
      for (const verb of [['list'], ['is-enabled'], ['add', 'reboot', 'qemu', '10.0.0.1']]) {
        const r = await runTend(['repair-queue', ...verb, '-c', withRepair], { env: onlyEnv(), timeoutMs: 60_000 });
        assert.equal(r.code, 1, `${verb.join(' ')}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /runs on task queue "tend-elsewhere", but this configuration's task queue is "tend"/);
      }
    } finally {
      await client.workflow.getHandle('repair-queue').terminate('test over').catch(() => undefined);
      await connection.close();
    }
  });
});
