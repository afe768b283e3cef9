// The modes a worker acts in (`mode: act | observe`, src/config/mode.ts), kept
// up to date without a restart: the worker reads its configuration again on
// SIGHUP and every few seconds (a file, or the ConfigMap it came from), and a
// changed mode applies to the next write of every running workflow: windows,
// countdowns and queue entries are workflow state and go on as they were.
// Only `mode` is applied this way; any other change is logged as needing a
// restart. A configuration that no longer validates is logged and ignored:
// the last good modes stay.
import { isDeepStrictEqual } from 'node:util';
import { ConfigError } from '../config/errors.ts';
import { modesOf, type Mode, type ModeCapability } from '../config/mode.ts';
import { log } from '../log.ts';
import { configReloads, modeGauge } from '../metrics/registry.ts';
import type { ModeGate } from './gate.ts';

/** How often the configuration is read again. */
export const RELOAD_INTERVAL_MS = 3000;

export interface ModeStateOptions {
  /** Reads the configuration again (undefined: the modes never change). */
  reload?: () => Promise<ModesInput>;
  intervalMs?: number;
  /** Listen for SIGHUP (default true). */
  sighup?: boolean;
  /** Set tend_mode (default true). */
  metrics?: boolean;
}

/** What the modes are read from: the whole configuration, or its sections. */
export type ModesInput = Parameters<typeof modesOf>[0];

/**
 * The configuration without its modes: what needs a restart when it changes.
 * The cluster flags (--kubeconfig, --context) are set on the command line, not
 * in the file: left out too.
 */
function withoutModes(c: ModesInput): unknown {
  const strip = (s: object | undefined) => (s === undefined ? undefined : { ...s, mode: undefined });
  const { kubernetes, ...rest } = c as ModesInput & { kubernetes?: object };
  return {
    ...rest, kubernetes: kubernetes && { ...kubernetes, kubeconfig: undefined, context: undefined },
    mode: undefined, weeder: strip(c.weeder), taintReplacement: strip(c.taintReplacement), apps: strip(c.apps), repair: strip(c.repair), nodeRepair: strip(c.nodeRepair),
  };
}

export class ModeState implements ModeGate {
  private modes: Record<ModeCapability, Mode>;
  private readonly base: unknown;
  private readonly opts: ModeStateOptions;
  private timer?: NodeJS.Timeout;
  private reading?: Promise<void>;
  private readonly onHup = () => void this.reloadNow('SIGHUP');
  private restartNoted = false;

  constructor(initial: ModesInput, opts: ModeStateOptions = {}) {
    this.modes = modesOf(initial);
    this.base = withoutModes(initial);
    this.opts = opts;
    this.gauge();
  }

  mode(capability: ModeCapability): Mode {
    return this.modes[capability];
  }

  all(): Record<ModeCapability, Mode> {
    return { ...this.modes };
  }

  start(): void {
    if (!this.opts.reload) return;
    this.timer = setInterval(() => void this.reloadNow('interval'), this.opts.intervalMs ?? RELOAD_INTERVAL_MS);
    this.timer.unref();
    if (this.opts.sighup !== false) process.on('SIGHUP', this.onHup);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    process.off('SIGHUP', this.onHup);
  }

  /** Reads the configuration now and applies its modes; resolves when done (one read at a time). */
  reloadNow(why: string): Promise<void> {
    if (!this.opts.reload) return Promise.resolve();
    this.reading ??= this.readOnce(why).finally(() => { this.reading = undefined; });
    return this.reading;
  }

  private async readOnce(why: string): Promise<void> {
    let next: ModesInput;
    try {
      next = await this.opts.reload!();
    } catch (err) {
      configReloads.inc({ result: 'invalid' });
      const problems = err instanceof ConfigError ? err.message : (err as Error).message;
      log.error({ trigger: why, err: problems }, 'configuration: could not read it again; the last good modes stay');
      return;
    }
    const modes = modesOf(next);
    const changed = (Object.keys(modes) as ModeCapability[]).filter((c) => modes[c] !== this.modes[c]);
    const restart = !isDeepStrictEqual(withoutModes(next), this.base);
    if (restart && !this.restartNoted) {
      log.warn({ trigger: why }, 'configuration changed beyond `mode`: restart tend to apply it (only modes apply at once)');
      this.restartNoted = true;
    } else if (!restart) {
      this.restartNoted = false;
    }
    if (changed.length === 0) {
      configReloads.inc({ result: restart ? 'restart' : 'unchanged' });
      return;
    }
    for (const c of changed) log.warn({ capability: c, from: this.modes[c], to: modes[c], trigger: why }, `mode changed: ${c} now ${modes[c] === 'act' ? 'acts' : 'observes (records what it would do, writes nothing)'}`);
    this.modes = modes;
    configReloads.inc({ result: 'changed' });
    this.gauge();
  }

  private gauge(): void {
    if (this.opts.metrics === false) return;
    for (const [capability, mode] of Object.entries(this.modes)) {
      modeGauge.set({ capability, mode: 'act' }, mode === 'act' ? 1 : 0);
      modeGauge.set({ capability, mode: 'observe' }, mode === 'observe' ? 1 : 0);
    }
  }
}
