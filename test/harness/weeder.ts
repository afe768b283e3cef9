// Helpers for the weeder's end-to-end tests: a tend config with a weeder
// section, the real temporal CLI, and pod-state probes.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { sandbox } from './hooks.ts';
import { temporalCli } from './temporal.ts';
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
