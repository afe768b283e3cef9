// One pod run for real with podman (podman-spec.ts says which pods and how):
// its volumes laid out under the kubelet's pods folder, its ServiceAccount
// token asked for with the TokenRequest API, its containers started, watched
// (exits, restarts under the kubelet's back-off) and probed for readiness, and
// stopped when the pod goes. Its state reads as the simulation's (a PodSim),
// so that pods.ts reports it with the same status code as a simulated pod.
//
// What it does not do, being a sandbox's: init containers (such a pod waits
// in CreateContainerConfigError), liveness and startup probes (only readiness
// is probed), ConfigMap and Secret updates after the start, token renewal
// (an hour), and the kubelet's own API (no `kubectl logs` or `exec`: `podman
// logs` the container). Every pod shares the host's network: two pods with the
// same port on one host cannot both listen, and during a roll the new pod's
// probe may be answered by the old pod until it stops.
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from '../../kube/client.ts';
import { errorMessage, isNotFound } from '../../kube/api.ts';
import type { Logger } from '../../log.ts';
import { inBackoffSince, nextBackoff } from './backoff.ts';
import { CRASH_LOOP_REASON, restartPolicyOf } from './lifecycle.ts';
import type { ContainerSim, PodSim, Termination, Timing } from './lifecycle.ts';
import type { Podman } from './podman.ts';
import {
  containerEnv, containerMounts, containerName, envParts, probeSucceeded, probeTally, probeUrl, restarts, runArgs, safeRelativePath, sourcesNeeded,
  endOfInspected, volumeLayouts,
} from './podman-spec.ts';
import type { PodPlace, PodSources, ProbeTally } from './podman-spec.ts';
import { goDuration } from './time.ts';

/** How often the containers' states are read from podman. */
const POLL_MS = 1000;
/** A container whose configuration cannot be made (a missing ConfigMap) is tried again after this. */
const CONFIG_RETRY_MS = 2000;
/** The token's life, as the kubelet asks for it (an hour and a bit). */
const TOKEN_SECONDS = 3607;

/** What every pod run for real shares: the kubelet's `--run-images` and where things are. */
export interface PodmanRuntime {
  /** Image prefixes: a pod whose every image starts with one of them runs for real. */
  prefixes: string[];
  podman: Podman;
  clients: KubeClients;
  /** Each pod's files (volumes, env files) go in a folder of its uid here. */
  podsDir: string;
  /** kube-apiserver as the containers reach it (host network). */
  apiserver: Pick<PodPlace, 'apiserverHost' | 'apiserverPort'>;
  /** The cluster's CA certificate (PEM), mounted as ca.crt. */
  caCert: string;
  /** Label (key=value) marking the containers of this kubelet, so that its next start removes what it left. */
  kubeletLabel: string;
}

export interface PodmanPodOptions {
  pod: V1Pod;
  place: PodPlace;
  timing: Timing;
  log: Logger;
  /** The pod's state changed: report it. */
  onChange: () => void;
}

interface Slot {
  spec: V1Container;
  sim: ContainerSim;
  attempt: number;
  id?: string;
  probe?: string;
  /** When the readiness probe is next due (real ms). */
  probeAt: number;
  /** The readiness probe's results so far, for the container running now. */
  tally: ProbeTally;
  /** Back-off ends: start again then. */
  startAt?: number;
}

export class PodmanPod {
  private readonly o: PodmanPodOptions & PodmanRuntime & { dir: string };
  private readonly slots: Slot[];
  private readonly startTime = Date.now();
  private timer?: NodeJS.Timeout;
  private ticking = false;
  private stopped = false;
  private configured = false;

  constructor(runtime: PodmanRuntime, opts: PodmanPodOptions) {
    const o = { ...runtime, ...opts, dir: join(runtime.podsDir, opts.pod.metadata?.uid ?? 'unknown') };
    this.o = o;
    const initError = (o.pod.spec?.initContainers ?? []).length > 0 ? 'init containers are not run by the podman runtime' : undefined;
    this.slots = (o.pod.spec?.containers ?? []).map((spec) => ({
      spec,
      attempt: 0,
      probe: probeUrl(spec.readinessProbe, spec),
      probeAt: 0,
      tally: { ready: false, streak: 0 },
      sim: {
        name: spec.name, image: spec.image ?? '', role: 'app', readinessDelayMs: 0, restartCount: 0,
        state: initError ? { kind: 'waiting', reason: 'CreateContainerConfigError', message: initError } : { kind: 'waiting', reason: 'ContainerCreating' },
      },
    }));
    if (!initError) this.schedule(0);
  }

  /** The pod as the status code reads it. */
  snapshot(killed = false): PodSim {
    const p = this.o.pod;
    return {
      uid: p.metadata?.uid ?? '', namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '',
      restartPolicy: restartPolicyOf(p), startTime: this.startTime, containers: this.slots.map((s) => s.sim), killed,
    };
  }

  /** Stops the containers (SIGTERM, SIGKILL after `graceSeconds`), keeps how they ended, removes them and the pod's files. */
  async stop(graceSeconds: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const ids = this.slots.flatMap((s) => (s.id ? [s.id] : []));
    await Promise.allSettled(ids.map((id) => this.o.podman.stop(id, graceSeconds)));
    try {
      await this.poll(true);
    } catch (err) {
      this.o.log.warn({ err: errorMessage(err) }, 'cannot read the stopped containers');
    }
    for (const s of this.slots) {
      if (s.sim.state.kind === 'running') s.sim = { ...s.sim, state: { kind: 'terminated', exitCode: 137, reason: 'Error', startedAt: s.sim.state.startedAt, finishedAt: Date.now(), containerID: s.sim.state.containerID } };
    }
    await this.o.podman.remove(ids).catch((err: unknown) => this.o.log.warn({ err: errorMessage(err) }, 'cannot remove containers'));
    await rm(this.o.dir, { recursive: true, force: true });
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    let next = POLL_MS;
    try {
      if (!this.configured) {
        const problem = await this.configure();
        if (problem !== undefined) {
          this.setWaiting('CreateContainerConfigError', problem);
          next = CONFIG_RETRY_MS;
          return;
        }
        this.configured = true;
      }
      await this.poll(false);
      await this.startDue();
      await this.probe();
    } catch (err) {
      this.o.log.warn({ pod: this.key(), err: errorMessage(err) }, 'podman runtime: pod sync failed; trying again');
    } finally {
      this.ticking = false;
      this.o.onChange();
      this.schedule(next);
    }
  }

  private key(): string {
    return `${this.o.pod.metadata?.namespace}/${this.o.pod.metadata?.name}`;
  }

  private setWaiting(reason: string, message: string): void {
    for (const s of this.slots) {
      if (s.sim.state.kind !== 'running') s.sim = { ...s.sim, state: { kind: 'waiting', reason, message } };
    }
  }

  /** Reads what the pod refers to and lays out its volumes; a reason it cannot run yet. */
  private async configure(): Promise<string | undefined> {
    const sources = await this.readSources();
    if (typeof sources === 'string') return sources;
    const volumesDir = join(this.o.dir, 'volumes');
    const dirs = new Map<string, string>();
    for (const layout of volumeLayouts(this.o.pod, sources, this.o.place)) {
      if ('error' in layout) return layout.error;
      const dir = join(volumesDir, layout.name);
      await mkdir(dir, { recursive: true });
      // An emptyDir is the pod's to write, whatever user it runs as (the kubelet makes it 0777 too).
      await chmod(dir, layout.files.length === 0 ? 0o777 : 0o755);
      for (const f of layout.files) {
        if (!safeRelativePath(f.path)) return `volume ${layout.name}: bad path in item`;
        const file = join(dir, f.path);
        await mkdir(dirname(file), { recursive: true, mode: 0o755 });
        await writeFile(file, f.content, { mode: 0o644 });
      }
      dirs.set(layout.name, dir);
    }
    this.volumeDirs = dirs;
    this.sources = sources;
    return undefined;
  }

  private volumeDirs = new Map<string, string>();
  private sources?: PodSources;

  private async readSources(): Promise<PodSources | string> {
    const pod = this.o.pod;
    const namespace = pod.metadata?.namespace ?? 'default';
    const needed = sourcesNeeded(pod);
    const configMaps = new Map<string, Record<string, string>>();
    const secrets = new Map<string, Record<string, string>>();
    const read = async <T>(what: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await what();
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    };
    for (const name of needed.configMaps) {
      const cm = await read(() => this.o.clients.core.readNamespacedConfigMap({ name, namespace }));
      if (cm) configMaps.set(name, cm.data ?? {});
    }
    for (const name of needed.secrets) {
      const secret = await read(() => this.o.clients.core.readNamespacedSecret({ name, namespace }));
      if (secret) secrets.set(name, Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])));
    }
    let token: string | undefined;
    if (needed.token) {
      const audience = (pod.spec?.volumes ?? []).flatMap((v) => v.projected?.sources ?? []).find((p) => p.serviceAccountToken)?.serviceAccountToken?.audience;
      try {
        const answer = await this.o.clients.core.createNamespacedServiceAccountToken({
          name: pod.spec?.serviceAccountName ?? 'default',
          namespace,
          body: {
            spec: {
              audiences: audience ? [audience] : [],
              expirationSeconds: TOKEN_SECONDS,
              boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
            },
          },
        });
        token = answer.status?.token;
      } catch (err) {
        return `cannot get a token for ServiceAccount ${pod.spec?.serviceAccountName ?? 'default'}: ${errorMessage(err)}`;
      }
    }
    return { configMaps, secrets, token, caCert: this.o.caCert };
  }

  /** Reads the containers' states; a container that ended goes to back-off or starts again, as its pod's policy says. */
  private async poll(final: boolean): Promise<void> {
    const live = this.slots.filter((s) => s.id && s.sim.state.kind === 'running');
    if (live.length === 0) return;
    const found = new Map((await this.o.podman.inspect(live.map((s) => s.id!))).map((i) => [i.Id, i]));
    const now = Date.now();
    for (const s of live) {
      const inspected = found.get(s.id!);
      const containerID = `podman://${s.id}`;
      const ended: Termination | undefined = inspected
        ? endOfInspected(inspected.State, containerID)
        : { exitCode: 137, reason: 'ContainerStatusUnknown', message: 'The container could not be located', containerID };
      if (!ended) continue;
      this.o.log.info({ pod: this.key(), container: s.spec.name, exitCode: ended.exitCode }, 'podman runtime: container exited');
      if (final || !restarts(this.o.pod.spec?.restartPolicy, ended.exitCode)) {
        s.sim = { ...s.sim, state: { kind: 'terminated', ...ended } };
        continue;
      }
      await this.o.podman.remove([s.id!]).catch(() => undefined);
      s.id = undefined;
      const finishedAt = ended.finishedAt ?? now;
      const policy = this.o.timing.backoff;
      if (s.sim.backoff && inBackoffSince(policy, s.sim.backoff, finishedAt, now)) {
        const delay = s.sim.backoff.delayMs;
        s.startAt = finishedAt + delay;
        s.sim = {
          ...s.sim, lastState: ended,
          state: { kind: 'waiting', reason: CRASH_LOOP_REASON, message: `back-off ${goDuration(delay)} restarting failed container=${s.spec.name} pod=${this.o.pod.metadata?.name}` },
        };
      } else {
        s.startAt = now;
        s.sim = { ...s.sim, lastState: ended, state: { kind: 'waiting', reason: 'ContainerCreating' } };
      }
    }
  }

  /** Starts the containers that are due: first starts, and restarts whose back-off is over. */
  private async startDue(): Promise<void> {
    const now = Date.now();
    for (const s of this.slots) {
      if (s.sim.state.kind === 'waiting' && (s.startAt === undefined || s.startAt <= now)) await this.startContainer(s, now);
    }
  }

  private async startContainer(s: Slot, now: number): Promise<void> {
    const env = containerEnv(this.o.pod, s.spec, this.sources!, this.o.place);
    const mounts = containerMounts(s.spec, this.volumeDirs);
    const problem = 'error' in env ? env.error : 'error' in mounts ? mounts.error : undefined;
    if (problem !== undefined || 'error' in env || 'error' in mounts) {
      s.sim = { ...s.sim, state: { kind: 'waiting', reason: 'CreateContainerConfigError', message: problem } };
      return;
    }
    const parts = envParts(env.env);
    if ('error' in parts) {
      s.sim = { ...s.sim, state: { kind: 'waiting', reason: 'CreateContainerConfigError', message: parts.error } };
      return;
    }
    const restart = s.sim.lastState !== undefined;
    const attempt = restart ? s.attempt + 1 : s.attempt;
    const envFile = join(this.o.dir, 'env', `${s.spec.name}-${attempt}`);
    await mkdir(dirname(envFile), { recursive: true, mode: 0o700 });
    await writeFile(envFile, parts.file, { mode: 0o600 });
    const name = containerName(this.o.pod, s.spec, attempt);
    const grace = Math.min(this.o.pod.spec?.terminationGracePeriodSeconds ?? 30, 30);
    const args = runArgs({ pod: this.o.pod, container: s.spec, name, nodeName: this.o.place.nodeName, mounts, envFile, envArgs: parts.args, stopSeconds: grace });
    // The label that ties the container to this kubelet goes first, so a leftover is found even if the run fails half way.
    args.splice(1, 0, '--label', this.o.kubeletLabel);
    try {
      await this.o.podman.remove([name]);
      const id = await this.o.podman.run(args);
      s.id = id;
      s.attempt = attempt;
      s.startAt = undefined;
      const started = Date.now();
      s.probeAt = started + (s.spec.readinessProbe?.initialDelaySeconds ?? 0) * 1000;
      s.tally = { ready: false, streak: 0 };
      s.sim = {
        ...s.sim,
        restartCount: restart ? s.sim.restartCount + 1 : s.sim.restartCount,
        backoff: restart ? nextBackoff(this.o.timing.backoff, s.sim.backoff, s.sim.lastState?.finishedAt ?? now, now) : s.sim.backoff,
        state: { kind: 'running', startedAt: started, containerID: `podman://${id}`, readyAt: s.probe ? Number.POSITIVE_INFINITY : started },
      };
      this.o.log.info({ pod: this.key(), container: s.spec.name, id: id.slice(0, 12) }, 'podman runtime: container started');
    } catch (err) {
      // podman refused it (an image not present here, a bad argument): the kubelet's CreateContainerError.
      s.startAt = now + CONFIG_RETRY_MS;
      s.sim = { ...s.sim, state: { kind: 'waiting', reason: 'CreateContainerError', message: errorMessage(err) } };
    }
  }

  /** The readiness probes that are due: an HTTP GET on the host network, each at its period. */
  private async probe(): Promise<void> {
    const now = Date.now();
    await Promise.all(this.slots.map(async (s) => {
      const state = s.sim.state;
      if (state.kind !== 'running' || !s.probe || s.probeAt > now) return;
      const p = s.spec.readinessProbe;
      s.probeAt = now + Math.max(1000, (p?.periodSeconds ?? 10) * 1000 * this.o.timing.timeScale);
      let ok = false;
      try {
        const res = await fetch(s.probe, { signal: AbortSignal.timeout((p?.timeoutSeconds ?? 1) * 1000), redirect: 'manual' });
        await res.body?.cancel();
        ok = probeSucceeded(res.status);
      } catch {
        ok = false;
      }
      // Read again: the container may have been seen to exit while the probe ran.
      const current = s.sim.state;
      if (current.kind !== 'running' || current.containerID !== state.containerID) return;
      s.tally = probeTally(s.tally, ok, p);
      const readyAt = s.tally.ready ? current.startedAt : Number.POSITIVE_INFINITY;
      if (readyAt !== current.readyAt) s.sim = { ...s.sim, state: { ...current, readyAt } };
    }));
  }
}
