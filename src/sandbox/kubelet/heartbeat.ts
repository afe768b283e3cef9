// Stopping and resuming a simulated node's heartbeats from outside (a CLI, a
// test): the running kubelet watches its Node and reacts within a second.
import type * as k8s from '@kubernetes/client-node';
import { kubeClients } from '../../kube/client.ts';
import { HEARTBEAT_ANNOTATION, HEARTBEAT_STOPPED } from './annotations.ts';
import { mergePatch } from '../../kube/api.ts';

/** Silences `node`: no status, no Lease renewal, its pods frozen. The node lifecycle controller will notice. */
export async function stopHeartbeats(kc: k8s.KubeConfig, node: string): Promise<void> {
  await kubeClients(kc).core.patchNode({ name: node, body: { metadata: { annotations: { [HEARTBEAT_ANNOTATION]: HEARTBEAT_STOPPED } } } }, mergePatch);
}

/** Lets `node` heartbeat again (removes the annotation). */
export async function startHeartbeats(kc: k8s.KubeConfig, node: string): Promise<void> {
  await kubeClients(kc).core.patchNode({ name: node, body: { metadata: { annotations: { [HEARTBEAT_ANNOTATION]: null } } } }, mergePatch);
}
