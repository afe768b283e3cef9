// The apps capability's counters, fed by its activities.
import { appsReconcileErrors, appsReconciles, appsRestarts } from './registry.ts';

/** A rolling restart tend wrote (the App's app-rev moved for it). */
export function noteAppRestart(namespace: string): void {
  appsRestarts.inc({ namespace });
}

/** The reconcile activity, counting each attempt's success or failure by the App's namespace. */
export function countedReconcile<I extends { namespace?: unknown }, R>(reconcile: (input: I) => Promise<R>): (input: I) => Promise<R> {
  return async (input) => {
    const namespace = typeof input?.namespace === 'string' ? input.namespace : '';
    try {
      const result = await reconcile(input);
      appsReconciles.inc({ namespace });
      return result;
    } catch (err) {
      appsReconcileErrors.inc({ namespace });
      throw err;
    }
  };
}
