// `npm run faults -- [CAPABILITY...] [--rounds N] [--seed S]`: the fault run.
// On a sandbox of its own (or a running one it reuses, with kube-apiserver's
// audit log turned on), with tend's worker and watcher as separate processes
// talking to kube-apiserver through a proxy, it drives each capability's
// scenario round after round, injects one fault per round at a random moment,
// and checks the capability's invariants over what the API server recorded.
// Prints a table, and exits 1 if any invariant was violated. See docs/faults.md.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pkiPaths } from '../src/sandbox/certs.ts';
import { ApiProxy } from './proxy.ts';
import { CAPABILITIES, FAULT_KINDS, faultPlan, formatReport, rng, type Capability, type FaultKind, type RoundRecord } from './report.ts';
import { auditedSandbox } from './sandbox.ts';
import { endRun, endRunning, scenarioFor } from './scenarios.ts';
import { Fault, openWorld, Tend } from './world.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const usage = `usage: npm run faults -- [CAPABILITY...] [--rounds N] [--seed S] [--faults KIND,...]
                       [--state-dir DIR] [--port-offset N] [--report FILE] [--down]
  CAPABILITY: ${CAPABILITIES.join(', ')} (default: all)
  KIND: ${FAULT_KINDS.join(', ')} (default: all)`;

function fail(message: string): never {
  console.error(`faults: ${message}\n${usage}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      rounds: { type: 'string', default: '5' },
      seed: { type: 'string' },
      faults: { type: 'string' },
      'state-dir': { type: 'string', default: join(repo, '.tend', 'faults') },
      'port-offset': { type: 'string', default: '50' },
      report: { type: 'string' },
      down: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
} catch (err) {
  fail((err as Error).message);
}
const { values: opts, positionals } = parsed;
if (opts.help) {
  console.log(usage);
  process.exit(0);
}
const unknown = positionals.filter((p) => !(CAPABILITIES as readonly string[]).includes(p));
if (unknown.length) fail(`no capability named ${unknown.join(', ')}`);
const capabilities = (positionals.length ? CAPABILITIES.filter((c) => positionals.includes(c)) : [...CAPABILITIES]) as Capability[];
const rounds = Number(opts.rounds);
if (!Number.isInteger(rounds) || rounds < 1) fail(`--rounds must be a positive whole number (got "${opts.rounds}")`);
const seed = opts.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(opts.seed);
if (!Number.isInteger(seed)) fail(`--seed must be a whole number (got "${opts.seed}")`);
const kinds = (opts.faults ? opts.faults.split(',').map((k) => k.trim()) : [...FAULT_KINDS]) as FaultKind[];
const badKinds = kinds.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
if (badKinds.length || !kinds.length) fail(`--faults: no fault kind named ${badKinds.join(', ') || '(none given)'}`);
const offset = Number(opts['port-offset']);
if (!Number.isInteger(offset) || offset < 0) fail(`--port-offset must be a whole number (got "${opts['port-offset']}")`);
const stateDir = resolve(opts['state-dir']);

const say = (m: string) => console.error(`[faults ${new Date().toISOString().slice(11, 19)}] ${m}`);
say(`seed ${seed} (repeat with --seed ${seed}); capabilities ${capabilities.join(', ')}; ${rounds} round(s) each`);

// The sandbox: reused when it runs, else started; its audit log on.
const { info, audit } = await auditedSandbox(stateDir, offset, say);
say(`sandbox ${stateDir}: kube-apiserver ${info.apiserver}, Temporal ${info.temporalAddress}; audit log ${audit.path}`);

const proxy = new ApiProxy(pkiPaths(join(stateDir, 'pki')), info.settings.ports.apiserver);
const proxyPort = await proxy.start();
const dir = join(stateDir, 'fault-runs', new Date().toISOString().replace(/[:.]/g, '-'));
await mkdir(dir, { recursive: true, mode: 0o700 });
const world = await openWorld(info, proxy, proxyPort, audit, dir, say);
say(`tend talks to kube-apiserver through https://127.0.0.1:${proxyPort}; its logs go to ${dir}`);

const random = rng(seed);
const records: RoundRecord[] = [];
for (const capability of capabilities) {
  const scenario = scenarioFor(capability);
  const mine = kinds.filter((k) => scenario.watcher || k !== 'kill-watcher');
  const plan = faultPlan(rounds, mine.length ? mine : kinds, random);
  say(`${capability}: setting up`);
  let tend: Tend | undefined;
  try {
    const config = await scenario.setup(world);
    tend = new Tend(config, dir, capability, scenario.watcher, { worker: 19400 + offset, watcher: 19401 + offset });
    tend.start();
    for (let i = 0; i < rounds; i++) {
      // Each round starts with tend up: a part killed by the last round's fault may still be starting (bundling its workflows).
      await tend.serving(300_000);
      const t0 = Date.now();
      const fault = new Fault(world, tend, plan[i]!, random, scenario.windowMs, scenario.writes);
      const record: RoundRecord = { capability, round: i + 1, violations: [], notes: [], durationMs: 0 };
      say(`${capability} round ${i + 1}/${rounds}: fault ${fault.kind}`);
      try {
        const r = await scenario.round(world, fault, random);
        record.violations = r.violations;
        record.notes = r.notes;
      } catch (err) {
        record.error = (err as Error).message;
        fault.cancel();
      }
      record.fault = await fault.done(0).catch(() => undefined);
      fault.cancel();
      // A part that died by itself (not the fault's kill, which starts it again) is a finding too.
      for (const part of tend.parts) {
        if (!part.running) {
          record.notes.push(`tend ${part.part} was not running at the end of the round (see ${part.log}); started again`);
          part.start();
        }
      }
      record.durationMs = Date.now() - t0;
      records.push(record);
      const f = record.fault;
      say(`${capability} round ${i + 1}: ${(record.durationMs / 1000).toFixed(0)} s; fault ${f ? `${f.kind}${f.injected ? '' : ' (not triggered)'} at +${(f.atMs / 1000).toFixed(1)} s: ${f.detail}` : '-'}; `
        + `${record.violations.length + (record.error ? 1 : 0)} violation(s)`);
      for (const n of record.notes) say(`  note: ${n}`);
      for (const v of record.violations) say(`  VIOLATION ${v.invariant}: ${v.detail}`);
      if (record.error) say(`  ROUND FAILED: ${record.error}`);
    }
  } catch (err) {
    records.push({ capability, round: 0, violations: [], notes: [], durationMs: 0, error: `setting up: ${(err as Error).message}` });
    say(`${capability}: ${(err as Error).message}`);
  } finally {
    await endRun(world, capability).catch((err: Error) => say(`${capability}: ending its workflows: ${err.message}`));
    await tend?.stop();
    // What the watcher started again between endRun and its stop (a coordinator its resync found gone).
    await endRunning(world, capability).catch((err: Error) => say(`${capability}: ending its workflows: ${err.message}`));
    await scenario.teardown(world).catch(() => undefined);
  }
}

const report = formatReport(records, seed);
console.log(`\n${report}`);
console.log(`\nrepeat: npm run faults -- ${capabilities.join(' ')} --rounds ${rounds} --seed ${seed}${opts.faults ? ` --faults ${opts.faults}` : ''} --state-dir ${stateDir}`);
if (opts.report) await writeFile(opts.report, JSON.stringify({ seed, capabilities, rounds, records }, null, 2));
await proxy.stop();
await world.temporal.connection.close();
if (opts.down) {
  const { down } = await import('../src/sandbox/sandbox.ts');
  await down(stateDir, { progress: (m) => say(`sandbox: ${m}`) });
}
const violations = records.reduce((n, r) => n + r.violations.length + (r.error ? 1 : 0), 0);
process.exit(violations ? 1 : 0);
