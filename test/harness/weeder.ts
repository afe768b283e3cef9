// Helpers for the weeder's end-to-end tests: a tend config with a weeder
// section, the real temporal CLI, and pod-state probes.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { sandbox } from './hooks.ts';
import { deployment, grantConfiguredRights, isReady, podsOf, service } from './kube.ts';
import { waitFor } from './wait.ts';
import { mergePatch } from '../../src/kube/api.ts';
import type { KubeClients } from '../../src/kube/client.ts';
import { FAIL_ANNOTATION } from '../../src/sandbox/kubelet/annotations.ts';
import { temporalCli } from './temporal.ts';
import { randomBytes } from 'node:crypto';
import { weederWorkflowId } from '../../src/weeder/messages.ts';
import { parseGoDuration } from '../../src/config/duration.ts';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';

export const WEEDER_TASK_QUEUE = 'tend-weeder';

/** A tend config with this weeder section, for the test sandbox (or `on`, another one). */
export async function weederConfigFile(weeder: Record<string, unknown>, on: SandboxInfo = sandbox()): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tend-weeder-'));
  const file = join(dir, 'tend.yaml');
  await writeFile(file, toYaml({
    temporal: { address: on.temporalAddress, taskQueue: WEEDER_TASK_QUEUE },
    kubernetes: { kubeconfig: on.tendKubeconfig },
    weeder,
  }));
  await grantConfiguredRights(file, on.kubeconfig);
  return file;
}

/** The real temporal CLI against the test sandbox's server. */
export async function temporal(args: string[]): Promise<string> {
  return (await temporalCli(args)).stdout;
}

export function crashLooping(pod: k8s.V1Pod): boolean {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]
    .some((s) => s.state?.waiting?.reason === 'CrashLoopBackOff');
}

export function restarts(pod: k8s.V1Pod): number {
  return Math.max(0, ...(pod.status?.containerStatuses ?? []).map((s) => s.restartCount));
}

/**
 * How much of its current CrashLoopBackOff a pod's container still has to wait,
 * from kubelet's own words ("back-off 16s restarting failed container=...")
 * and the end of its last run; 0 when it is not waiting. Tests bring an
 * upstream back only when every dependant still has seconds to wait, so a
 * dependant cannot restart by itself before the weeder acts. `init`: the
 * init containers waiting in CrashLoopBackOff, instead of the app containers.
 */
export function backoffRemainingMs(pod: k8s.V1Pod, now = Date.now(), which: 'containers' | 'init' = 'containers'): number {
  let least = Infinity;
  const statuses = which === 'init'
    ? (pod.status?.initContainerStatuses ?? []).filter((s) => s.state?.waiting?.reason === 'CrashLoopBackOff')
    : pod.status?.containerStatuses ?? [];
  for (const s of statuses) {
    const waiting = s.state?.waiting;
    const finished = s.lastState?.terminated?.finishedAt;
    const length = /back-off (\S+) restarting/.exec(waiting?.message ?? '')?.[1];
    const ms = length === undefined ? undefined : parseGoDuration(length);
    if (waiting?.reason !== 'CrashLoopBackOff' || !finished || ms === undefined) return 0;
    least = Math.min(least, new Date(finished).getTime() + ms - now);
  }
  return least === Infinity ? 0 : Math.max(0, least);
}

/**
 * A fresh Service's window for a workflow test: its own workflow id (the
 * workflow refuses an id that is not its Service's) and its start input.
 */
export function weederRun(service = 'db'): { workflowId: string; args: [{ namespace: string; service: string }] } {
  const svc = `${service}-${randomBytes(3).toString('hex')}`;
  return { workflowId: weederWorkflowId('ns', svc), args: [{ namespace: 'ns', service: svc }] };
}

/** One call of a stubbed weeder activity: the test settles it. */
export interface StubCall<I = unknown, O = unknown> {
  kind: 'watch' | 'weed' | 'check';
  input: I;
  workflowId: string;
  attempt: number;
  settled: boolean;
  /** Set when the workflow's cancellation reached the attempt (watching attempts heartbeat; the others, as the real ones, do not). */
  cancelled: boolean;
  /**
   * Set by the test on an armed watch that has announced its deletions: like
   * the real one, a cancellation then does not end it; it answers (the test
   * replies) once its deletions are done.
   */
  deleting?: boolean;
  reply(out: O): void;
  fail(err: Error): void;
}

/**
 * Stub weeder activities for workflow tests: every call waits until the test
 * settles it. Watching calls, and deleting calls asked again with a hold
 * (`holdMs`), heartbeat, so a cancellation reaches them (and ends them); other
 * deleting calls and checking calls do not, as the real ones do not.
 */
export class WeederStubs {
  readonly calls: StubCall[] = [];
  readonly watchMs: number;

  constructor(watchMs = 20_000) {
    this.watchMs = watchMs;
  }

  get activities() {
    return {
      weederSettings: async () => ({ watchDuration: { text: `${this.watchMs / 1000}s`, ms: this.watchMs } }),
      watchDependants: (input: unknown) => this.call('watch', input),
      weedPods: (input: unknown) => this.call('weed', input),
      checkPods: (input: unknown) => this.call('check', input),
    };
  }

  private async call(kind: StubCall['kind'], input: unknown): Promise<unknown> {
    const { Context } = await import('@temporalio/activity');
    const ctx = Context.current();
    const beats = kind === 'watch' || (kind === 'weed' && ((input as { holdMs?: number } | undefined)?.holdMs ?? 0) > 0);
    const beat = beats ? setInterval(() => ctx.heartbeat(), 300) : undefined;
    try {
      return await new Promise((resolve, reject) => {
        const call: StubCall = {
          kind, input, attempt: ctx.info.attempt, settled: false, cancelled: false,
          workflowId: ctx.info.workflowExecution?.workflowId ?? '',
          reply: (out) => { call.settled = true; resolve(out); },
          fail: (err) => { call.settled = true; reject(err); },
        };
        this.calls.push(call);
        ctx.cancelled.catch((err: unknown) => {
          call.cancelled = true;
          if (beats && !call.settled && !call.deleting) {
            call.settled = true;
            reject(err as Error);
          }
        });
      });
    } finally {
      clearInterval(beat);
    }
  }

  /** Calls of a workflow, of a kind, in order. */
  of(workflowId: string, kind: StubCall['kind']): StubCall[] {
    return this.calls.filter((c) => c.workflowId === workflowId && c.kind === kind);
  }
}

/**
 * A Service `db` (one pod) and `replicas` dependants `api` (label role=api,
 * sim.tend.dev/depends-on db), all ready; the weeder section that watches them.
 */
export async function dbWithDependants(kube: KubeClients, ns: string, replicas: number): Promise<Record<string, unknown>> {
  await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({ namespace: ns, name: 'db', replicas: 1 }) });
  await kube.core.createNamespacedService({ namespace: ns, body: service(ns, 'db', { app: 'db' }) });
  await kube.apps.createNamespacedDeployment({ namespace: ns, body: deployment({
    namespace: ns, name: 'api', replicas, labels: { role: 'api' }, annotations: { 'sim.tend.dev/depends-on': 'db' },
  }) });
  await waitFor('db and every api pod ready', async () => {
    const [db, api] = await Promise.all([podsOf(kube, ns, 'app=db'), podsOf(kube, ns, 'app=api')]);
    return db.some(isReady) && api.length === replicas && api.every(isReady);
  }, { timeoutMs: 90_000 });
  return { namespaces: [ns], servicesAndDependantSelectors: { db: { podSelectors: [{ matchLabels: { role: 'api' } }] } } };
}

/**
 * db down and every api pod crash-looping, made to crash until it is deleted
 * (sim.tend.dev/fail: a pod the weeder leaves alone keeps crash-looping after db
 * is back, its replacement does not). Answers the crash-looping pods.
 */
export async function dependantsCrashLooping(kube: KubeClients, ns: string, replicas: number): Promise<k8s.V1Pod[]> {
  await kube.apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas: 0 } } }, mergePatch);
  for (const p of await podsOf(kube, ns, 'app=api')) {
    await kube.core.patchNamespacedPod({ namespace: ns, name: p.metadata!.name!, body: { metadata: { annotations: { [FAIL_ANNOTATION]: 'true' } } } }, mergePatch);
  }
  return waitFor(`db down and ${replicas} api pods crash-looping`, async () => {
    const [db, api] = await Promise.all([podsOf(kube, ns, 'app=db'), podsOf(kube, ns, 'app=api')]);
    return db.length === 0 && api.length === replicas && api.every(crashLooping) && api;
  }, { timeoutMs: 120_000 });
}

/** db back (one pod): the Service turns ready. */
export async function dbBack(kube: KubeClients, ns: string): Promise<void> {
  await kube.apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'db', body: { spec: { replicas: 1 } } }, mergePatch);
}

/** The pods of `before` that are gone, replaced or being deleted now. */
export async function deletedOf(kube: KubeClients, ns: string, before: readonly k8s.V1Pod[]): Promise<k8s.V1Pod[]> {
  const now = new Map((await podsOf(kube, ns, 'app=api')).map((p) => [p.metadata!.uid!, p]));
  return before.filter((p) => !now.has(p.metadata!.uid!) || !!now.get(p.metadata!.uid!)!.metadata?.deletionTimestamp);
}
