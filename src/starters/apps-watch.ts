// The App capability's part of the watcher: an App informer (custom objects
// API) that signal-with-starts the App's entity workflow when its spec moves,
// and signals it when the App is deleted.
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { AppsConfig } from '../config/apps.ts';
import { errorMessage } from '../kube/api.ts';
import { kubeClients } from '../kube/client.ts';
import { startInformer, type RunningInformer } from '../kube/informer.ts';
import { log, type Logger } from '../log.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { appChangedSignal, appDeletedSignal, type AppChanged } from '../apps/messages.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION, appKey, appWorkflowId, type App } from '../apps/types.ts';
import { decideWatch } from '../apps/watch.ts';
import type { appWorkflow } from '../workflows/apps.ts';
import type { CapabilityWatch } from './watcher.ts';

/** A fresh list this often: a watch that stalls silently costs at most this much. */
const RESYNC_MS = 60_000;

/** Options every start of an App workflow uses, from the watcher or the CLI. */
export function appWorkflowStartOptions(namespace: string, name: string, taskQueue: string) {
  return {
    workflowId: appWorkflowId(namespace, name),
    taskQueue,
    args: [{ namespace, name }] as Parameters<typeof appWorkflow>,
    staticSummary: `App ${appKey(namespace, name)}: revisions, workloads and status`,
    typedSearchAttributes: [
      { key: TendCapability, value: 'apps' },
      { key: TendTarget, value: appKey(namespace, name) },
    ],
  };
}

export function appsWatch(config: AppsConfig): CapabilityWatch {
  return async ({ client, kc, temporal, signal }) => {
    const kube = kubeClients(kc);
    const alog = log.child({ capability: 'apps' });
    const notifier = new AppNotifier(client, temporal.taskQueue, alog);
    const ref = { group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL };
    const scopes: (string | undefined)[] = config.namespaces ?? [undefined];
    const list = (namespace: string | undefined) => (namespace
      ? kube.custom.listNamespacedCustomObject({ ...ref, namespace })
      : kube.custom.listClusterCustomObject(ref)) as Promise<{ items: App[]; metadata: { resourceVersion?: string } }>;
    const informers: RunningInformer<App>[] = scopes.map((namespace) => startInformer<App>({
      kc,
      path: namespace ? `/apis/${APP_GROUP}/${APP_VERSION}/namespaces/${namespace}/${APP_PLURAL}` : `/apis/${APP_GROUP}/${APP_VERSION}/${APP_PLURAL}`,
      list: () => list(namespace) as never,
      log: alog,
      onUpsert: (app) => notifier.upsert(app),
      onDelete: (app) => notifier.deleted(app),
    }));
    const resync = setInterval(() => {
      void Promise.all(scopes.map(list)).then(
        (lists) => lists.flatMap((l) => l.items).forEach((app) => notifier.upsert(app)),
        (err: unknown) => alog.warn({ err: errorMessage(err) }, 'App resync failed'),
      );
    }, RESYNC_MS);
    alog.info({ namespaces: config.namespaces ?? 'all' }, 'watching Apps');
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    clearInterval(resync);
    await Promise.all(informers.map((i) => i.stop()));
    await notifier.idle();
  };
}

class AppNotifier {
  /** Generation already reported per App UID: informer repeats cost no signal. */
  private readonly signalled = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly client: Client;
  private readonly taskQueue: string;
  private readonly log: Logger;

  constructor(client: Client, taskQueue: string, log: Logger) {
    this.client = client;
    this.taskQueue = taskQueue;
    this.log = log;
  }

  upsert(app: App): void {
    const uid = app.metadata.uid ?? '';
    const action = decideWatch(app, this.signalled.get(uid));
    if (action.kind !== 'changed') return;
    const { namespace, name } = app.metadata;
    this.track((async () => {
      try {
        await this.client.workflow.signalWithStart<typeof appWorkflow, [AppChanged]>('appWorkflow', {
          ...appWorkflowStartOptions(namespace, name, this.taskQueue),
          signal: appChangedSignal,
          signalArgs: [{ generation: action.generation, ...(uid && { uid }) }],
        });
        this.signalled.set(uid, Math.max(action.generation, this.signalled.get(uid) ?? 0));
        this.log.info({ app: appKey(namespace, name), generation: action.generation }, 'App changed: signalled its workflow');
      } catch (err) {
        // Not recorded as signalled: the next event or resync tries again.
        this.log.warn({ app: appKey(namespace, name), err: errorMessage(err) }, 'could not signal the App workflow');
      }
    })());
  }

  deleted(app: App): void {
    const { namespace, name, uid } = app.metadata;
    this.signalled.delete(uid ?? '');
    this.track((async () => {
      try {
        await this.client.workflow.getHandle(appWorkflowId(namespace, name)).signal(appDeletedSignal);
        this.log.info({ app: appKey(namespace, name) }, 'App deleted: signalled its workflow');
      } catch (err) {
        // No workflow: nothing ran for it; the garbage collector takes its owned workloads.
        if (!(err instanceof WorkflowNotFoundError)) this.log.warn({ app: appKey(namespace, name), err: errorMessage(err) }, 'could not signal App deletion');
      }
    })());
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  async idle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
