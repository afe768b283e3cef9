// The App custom resource (deploy/crds/apps.tend.dev.yaml) and the names tend
// writes on it and on its workloads. Pure: imported by workflow code too.

export const APP_GROUP = 'tend.dev';
export const APP_VERSION = 'v1alpha1';
export const APP_PLURAL = 'apps';
export const APP_KIND = 'App';
export const APP_API_VERSION = `${APP_GROUP}/${APP_VERSION}`;

/** Counts restarts: bumped by every stop and every rolling restart. */
export const APP_REV = 'tend.dev/app-rev';
/** Changes only on a STARTED -> STOPPED transition; workloads are named from it. */
export const LAST_STOP_APP_REV = 'tend.dev/last-stop-app-rev';
/** On a workload: a hash of the spec tend gave it, so a changed App is told from the API server's defaults. */
export const SPEC_HASH = 'tend.dev/spec-hash';

export const LABEL_APP = 'tend.dev/app';
export const LABEL_PROCESS = 'tend.dev/process-type';
export const LABEL_WORKLOAD = 'tend.dev/workload';

export type DesiredState = 'STARTED' | 'STOPPED';
export type ActualState = 'STARTED' | 'STARTING' | 'STOPPING' | 'STOPPED';

/** A pod template as the App carries it: the schema keeps it opaque, the Deployment validates it. */
export interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string>; [k: string]: unknown };
  spec?: Record<string, unknown>;
}

export interface AppProcess {
  type: string;
  instances: number;
  template: PodTemplate;
}

export interface AppSpec {
  desiredState: DesiredState;
  processes: AppProcess[];
}

export interface WorkloadRevision {
  workload: string;
  appRev: string;
  current: boolean;
  replicas: number;
  readyReplicas: number;
  updatedReplicas: number;
}

export interface ProcessStatus {
  type: string;
  instances: number;
  readyInstances: number;
  workload?: string;
  revisions: WorkloadRevision[];
}

export interface AppCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface AppStatus {
  observedGeneration?: number;
  observedDesiredState?: DesiredState;
  actualState?: ActualState;
  revision?: string;
  lastStopRevision?: string;
  processes?: ProcessStatus[];
  conditions?: AppCondition[];
}

export interface AppMeta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  annotations?: Record<string, string>;
  /** Who wrote which fields (the API server's record): whose status.observedGeneration it is. */
  managedFields?: { manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }[];
  // A string on the wire; the client types it as a Date.
  deletionTimestamp?: Date;
}

export interface App {
  apiVersion: string;
  kind: string;
  metadata: AppMeta;
  spec: AppSpec;
  status?: AppStatus;
}

/** `namespace/name`, the App's key in workflow ids, search attributes and the CLI. */
export function appKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The App's workflow id (docs/apps.md); messages.ts, which holds the workflow's messages, exports it too. */
export function appWorkflowId(namespace: string, name: string): string {
  return `app/${namespace}/${name}`;
}

/** The App an App's workflow id names (`app/<namespace>/<name>`), or undefined when it names none. */
export function appOfWorkflowId(id: string): { namespace: string; name: string } | undefined {
  return id.startsWith('app/') ? parseAppKey(id.slice('app/'.length)) : undefined;
}

/** Parses `NAMESPACE/NAME`; undefined when it is not one. */
export function parseAppKey(text: string): { namespace: string; name: string } | undefined {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  return m ? { namespace: m[1]!, name: m[3]! } : undefined;
}

/** The longest a restart update waits for new, ready pods (its `timeoutSeconds`), and `tend app restart --timeout`. */
export const MAX_RESTART_TIMEOUT_SECONDS = 3600;
