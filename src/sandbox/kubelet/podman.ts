// The podman command line, as the podman runtime uses it: run, inspect, stop,
// remove, and find the containers a kubelet left. Every call is bounded in
// time. CONTAINERS_CONF is the caller's, else the project's own settings
// (deploy/containers/containers.conf: runc, ulimits below the hard limits).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { InspectedState } from './podman-spec.ts';

const projectContainersConf = fileURLToPath(new URL('../../../deploy/containers/containers.conf', import.meta.url));
/** A podman call that takes longer than this is taken as failed (a stop waits its grace period on top). */
const CALL_TIMEOUT_MS = 60_000;

export interface Inspected {
  Id: string;
  State: InspectedState;
}

export class Podman {
  private readonly env: NodeJS.ProcessEnv;
  private readonly command: string;

  constructor(command = 'podman') {
    this.command = command;
    this.env = { ...process.env };
    if (!this.env.CONTAINERS_CONF && existsSync(projectContainersConf)) this.env.CONTAINERS_CONF = projectContainersConf;
  }

  /** Starts a container (detached); its full id. */
  async run(args: string[]): Promise<string> {
    return (await this.call(args)).trim();
  }

  /** The state of containers by id or name; those podman does not know are left out. */
  async inspect(ids: string[]): Promise<Inspected[]> {
    if (ids.length === 0) return [];
    try {
      return JSON.parse(await this.call(['container', 'inspect', ...ids])) as Inspected[];
    } catch (err) {
      // Some of them gone: podman prints what it found and fails; ask one at a time.
      if (ids.length === 1) return [];
      const each = await Promise.all(ids.map((id) => this.inspect([id])));
      if (each.every((e) => e.length === 0)) throw err;
      return each.flat();
    }
  }

  /** SIGTERM, and SIGKILL after `seconds`. */
  async stop(id: string, seconds: number): Promise<void> {
    await this.call(['stop', '--ignore', '--time', String(seconds), id], seconds * 1000);
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.call(['rm', '--force', '--ignore', '--time', '0', ...ids]);
  }

  /** Ids of every container (running or not) with this label. */
  async withLabel(label: string): Promise<string[]> {
    const out = await this.call(['ps', '--all', '--quiet', '--no-trunc', '--filter', `label=${label}`]);
    return out.split('\n').map((s) => s.trim()).filter((s) => s !== '');
  }

  private call(args: string[], extraMs = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(this.command, args, { env: this.env, timeout: CALL_TIMEOUT_MS + extraMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`podman ${args[0]}: ${stderr.trim().split('\n').slice(-3).join(' ') || err.message}`));
        else resolve(stdout);
      });
    });
  }
}
