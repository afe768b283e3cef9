// The App capability's part of the watcher: an App informer (custom objects
// API) that signal-with-starts the App's entity workflow when its spec moves,
// and signals it when the App is deleted.
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { AppsConfig } from '../config/apps.ts';
import { errorMessage } from '../kube/api.ts';
import { kubeClients } from '../kube/client.ts';
import { log, type Logger } from '../log.ts';
import { abortableSleep } from '../sleep.ts';
import { startWatchedInformer } from '../metrics/informer.ts';
import { TendCapability, TendTarget } from '../search-attributes.ts';
import { APP_WORKFLOW_TYPE, appChangedSignal, appDeletedSignal, appWorkflowId, type AppChanged } from '../apps/messages.ts';
import { impostor } from '../temporal/identity.ts';
import { APP_GROUP, APP_PLURAL, APP_VERSION, appKey, parseAppKey, type App } from '../apps/types.ts';
import { decideWatch, mergeReport, missedDeletions, type AppWorkflowRef, type Reported } from '../apps/watch.ts';
import type { appWorkflow } from '../workflows/apps.ts';
import type { CapabilityWatch } from './watcher.ts';
import { refuseImpostor } from './weeder-watch.ts';

/** A fresh list (and a look for missed deletions) this often: a watch that stalls silently costs at most this much. */
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
    const notifier = new AppNotifier(temporalSignaller(client, temporal.taskQueue), alog);
    const ref = { group: APP_GROUP, version: APP_VERSION, plural: APP_PLURAL };
    // Deletions the informer cannot see: Apps deleted while the watcher was
    // down (the first list does not have them), or whose signal was not
    // delivered before the watcher stopped. Their workflows still run.
    let checking: Promise<void> = Promise.resolve();
    const checkMissedDeletions = (apps: App[]) => {
      checking = checking.then(async () => {
        try {
          const running = await runningAppWorkflows(client, temporal.taskQueue, alog);
          for (const w of missedDeletions(apps, running, config.namespaces)) {
            alog.info({ app: appKey(w.namespace, w.name) }, 'App gone but its workflow runs: signalling the deletion');
            notifier.deleted(w.namespace, w.name);
          }
        } catch (err) {
          alog.warn({ err: errorMessage(err) }, 'could not list App workflows to find missed deletions; trying again at the next resync');
        }
      });
    };
    // One list+watch per namespace (or cluster-wide), relisted every
    // RESYNC_MS and merged by resourceVersion: a watch that stalls silently
    // costs at most that, and an App deleted during a gap in the watch is
    // delivered as a deletion by the relist.
    const informer = startWatchedInformer<App>('apps', 'apps', {
      kc,
      path: `/apis/${APP_GROUP}/${APP_VERSION}/${APP_PLURAL}`,
      ...(config.namespaces && { namespaces: config.namespaces }),
      list: (namespace) => (namespace
        ? kube.custom.listNamespacedCustomObject({ ...ref, namespace })
        : kube.custom.listClusterCustomObject(ref)) as never,
      resyncMs: RESYNC_MS,
      log: alog,
      onUpsert: (app) => notifier.upsert(app),
      onDelete: (app) => notifier.deleted(app.metadata.namespace, app.metadata.name),
      onResync: (all) => checkMissedDeletions(all),
    });
    void informer.synced.then(() => checkMissedDeletions(informer.list()));
    alog.info({ namespaces: config.namespaces ?? 'all' }, 'watching Apps');
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    await informer.stop();
    await checking;
    notifier.stop();
    await notifier.idle();
  };
}

/**
 * App workflows of this task queue still running, by the App they name (their
 * ids are `app/<namespace>/<name>`). One of another type under such an id (the
 * search attributes are anyone's to set) is not tend's: named, and left out.
 */
export async function runningAppWorkflows(client: Client, taskQueue: string, alog: Logger): Promise<AppWorkflowRef[]> {
  const refs: AppWorkflowRef[] = [];
  const query = `TendCapability="apps" AND ExecutionStatus="Running" AND TaskQueue=${JSON.stringify(taskQueue)}`;
  for await (const w of client.workflow.list({ query })) {
    const why = impostor(w.workflowId, { type: w.type, taskQueue: w.taskQueue }, { type: APP_WORKFLOW_TYPE, taskQueues: [taskQueue] });
    if (why) {
      alog.error({ workflowId: w.workflowId.slice(0, 300) }, `${why}: not signalled`);
      continue;
    }
    const m = /^app\/(.+)$/.exec(w.workflowId);
    const key = m && parseAppKey(m[1]!);
    if (key) refs.push(key);
  }
  return refs;
}

/** How the notifier reaches an App's workflow. */
export interface AppSignaller {
  /** Signal-with-start appChanged. */
  changed(namespace: string, name: string, report: AppChanged): Promise<void>;
  /** Signal appDeleted; 'no-workflow' when none runs (nothing to tell). */
  deleted(namespace: string, name: string): Promise<'delivered' | 'no-workflow'>;
}

export function temporalSignaller(client: Client, taskQueue: string): AppSignaller {
  // Not to an impostor under the App's id: the send fails, naming it, and is tried again (src/starters/weeder-watch.ts).
  const own = (namespace: string, name: string) => refuseImpostor(client, appWorkflowId(namespace, name), { type: APP_WORKFLOW_TYPE, taskQueues: [taskQueue] });
  return {
    async changed(namespace, name, report) {
      await own(namespace, name);
      await client.workflow.signalWithStart<typeof appWorkflow, [AppChanged]>('appWorkflow', {
        ...appWorkflowStartOptions(namespace, name, taskQueue),
        signal: appChangedSignal,
        signalArgs: [report],
      });
    },
    async deleted(namespace, name) {
      try {
        await own(namespace, name);
        await client.workflow.getHandle(appWorkflowId(namespace, name)).signal(appDeletedSignal);
        return 'delivered';
      } catch (err) {
        // No workflow (or one already ended): nothing ran for it; the garbage collector takes its owned workloads.
        if (err instanceof WorkflowNotFoundError) return 'no-workflow';
        throw err;
      }
    },
  };
}

type Op = { kind: 'changed'; uid: string; report: Reported } | { kind: 'deleted' };

export interface NotifierOptions {
  /** First delay before sending again after a failure; doubles up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
}

/**
 * Sends each App's changes and deletion to its workflow, in order, one at a
 * time per App, retrying each until it is delivered (or, for a deletion, no
 * workflow runs) or the watcher stops: Temporal restarting loses nothing. A
 * change waiting to be sent absorbs newer ones of the same App (the highest
 * generation, and the highest seen STOPPED).
 */
export class AppNotifier {
  /** What was delivered, per App (namespace/name) and its UID: informer repeats cost no signal. */
  private readonly reported = new Map<string, { uid: string; report: Reported }>();
  /** What waits to be sent, per App (namespace/name), in order. */
  private readonly queues = new Map<string, Op[]>();
  private readonly senders = new Map<string, Promise<void>>();
  /** The op being sent, per App. */
  private readonly sending = new Map<string, Op>();
  private readonly stopping = new AbortController();
  private readonly send: AppSignaller;
  private readonly log: Logger;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;

  constructor(send: AppSignaller, log: Logger, opts: NotifierOptions = {}) {
    this.send = send;
    this.log = log;
    this.retryMs = opts.retryMs ?? 1000;
    this.maxRetryMs = opts.maxRetryMs ?? 30_000;
  }

  upsert(app: App): void {
    const uid = app.metadata.uid ?? '';
    const key = appKey(app.metadata.namespace, app.metadata.name);
    const queue = this.queues.get(key) ?? [];
    let known = this.delivered(key, uid);
    for (const op of [this.sending.get(key), ...queue]) if (op?.kind === 'changed' && op.uid === uid) known = mergeReport(known, op.report);
    const action = decideWatch(app, known);
    if (action.kind !== 'changed') return;
    const report = { generation: action.generation, stoppedGeneration: action.stoppedGeneration ?? 0 };
    const last = queue.at(-1);
    if (last?.kind === 'changed' && last.uid === uid) last.report = mergeReport(last.report, report);
    else queue.push({ kind: 'changed', uid, report });
    this.enqueue(key, queue);
  }

  deleted(namespace: string, name: string): void {
    const key = appKey(namespace, name);
    const queue = this.queues.get(key) ?? [];
    if (queue.at(-1)?.kind !== 'deleted') queue.push({ kind: 'deleted' });
    this.enqueue(key, queue);
  }

  /** Sends nothing more; what is not delivered is found again by the next watcher's list and resync. */
  stop(): void {
    this.stopping.abort();
  }

  async idle(): Promise<void> {
    await Promise.allSettled([...this.senders.values()]);
  }

  private enqueue(key: string, queue: Op[]): void {
    this.queues.set(key, queue);
    if (this.senders.has(key) || this.stopping.signal.aborted) return;
    const sender = this.drain(key).finally(() => this.senders.delete(key));
    this.senders.set(key, sender);
  }

  private async drain(key: string): Promise<void> {
    const { namespace, name } = parseAppKey(key)!;
    let failures = 0;
    for (;;) {
      const queue = this.queues.get(key);
      const op = queue?.shift();
      if (!op || this.stopping.signal.aborted) {
        this.queues.delete(key);
        return;
      }
      this.sending.set(key, op);
      try {
        if (op.kind === 'changed') {
          const { generation, stoppedGeneration } = op.report;
          await this.send.changed(namespace, name, { generation, ...(op.uid && { uid: op.uid }), ...(stoppedGeneration > 0 && { stoppedGeneration }) });
          this.reported.set(key, { uid: op.uid, report: mergeReport(this.delivered(key, op.uid), op.report) });
          this.log.info({ app: key, generation, ...(stoppedGeneration > 0 && { stoppedGeneration }) }, 'App changed: signalled its workflow');
        } else {
          const outcome = await this.send.deleted(namespace, name);
          this.reported.delete(key);
          if (outcome === 'delivered') this.log.info({ app: key }, 'App deleted: signalled its workflow');
        }
        failures = 0;
      } catch (err) {
        // Put back, merged with what came for the same App meanwhile, and tried again.
        const rest = this.queues.get(key) ?? [];
        const next = rest[0];
        if (op.kind === 'changed' && next?.kind === 'changed' && next.uid === op.uid) rest[0] = { ...op, report: mergeReport(op.report, next.report) };
        else rest.unshift(op);
        this.queues.set(key, rest);
        const delay = Math.min(this.retryMs * 2 ** failures++, this.maxRetryMs);
        this.log.warn({ app: key, op: op.kind, err: errorMessage(err), retryInMs: delay }, 'could not signal the App workflow; trying again');
        await abortableSleep(delay, this.stopping.signal);
      } finally {
        this.sending.delete(key);
      }
    }
  }

  private delivered(key: string, uid: string): Reported | undefined {
    const r = this.reported.get(key);
    return r?.uid === uid ? r.report : undefined;
  }
}
