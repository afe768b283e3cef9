// The App e2e tests' shared fixture: a namespace of their own, an apps configuration for it, and
// `tend run` on it, started before the tests (and again by those that stop it) and stopped after.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TendProcess } from './cli.ts';
import { admin, deleteNamespace, tempNamespace } from './kube.ts';
import { waitFor } from './wait.ts';
import { writeAppsConfig } from './apps.ts';

export interface AppsTend {
  /** The test namespace (set once `before` ran). */
  ns: string;
  config: string;
  tend: TendProcess | undefined;
  /** Starts `tend run`, returning once it watches Apps and its worker runs. */
  start(): Promise<void>;
}

/** Registers the before and after hooks of a describe block whose tests run against `tend run`. */
export function appsTend(label: string): AppsTend {
  let dir = '';
  const fixture: AppsTend = {
    ns: '',
    config: '',
    tend: undefined,
    async start() {
      const tend = new TendProcess(['run', '--config', fixture.config], { TEND_LOG_LEVEL: 'info' });
      fixture.tend = tend;
      await waitFor('tend to watch Apps', () => tend.output.includes('watching Apps') && tend.output.includes('worker started'), { timeoutMs: 60_000 });
    },
  };
  before(async () => {
    fixture.ns = await tempNamespace(admin(), label);
    dir = await mkdtemp(join(tmpdir(), `tend-${label}-`));
    fixture.config = await writeAppsConfig(dir, [fixture.ns]);
    await fixture.start();
  });
  after(async () => {
    await fixture.tend?.stop();
    if (fixture.ns) await deleteNamespace(admin(), fixture.ns);
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return fixture;
}
