// The containers a kubelet's podman runtime started, found by the label that
// names its pods folder (one sandbox's apart from another's on the same host):
// removed when the kubelet starts again after being killed, and by the
// sandbox's `down`.
import { resolve } from 'node:path';
import { Podman } from './podman.ts';
import { KUBELET_LABEL } from './podman-spec.ts';

/** The label (key=value) on every container started by the kubelet whose pods folder is `podsDir`. */
export function kubeletLabel(podsDir: string): string {
  return `${KUBELET_LABEL}=${resolve(podsDir)}`;
}

/** Removes them (running or not); how many there were. */
export async function removeKubeletContainers(podsDir: string, podman = new Podman()): Promise<number> {
  const left = await podman.withLabel(kubeletLabel(podsDir));
  await podman.remove(left);
  return left.length;
}
