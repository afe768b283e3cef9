// Every label a tend_* metric may carry, and why its values stay few: a label
// whose values grow with events (a pod's or a node's name, an entry's index, an
// address, a uid, a workflow id) makes a new series for each, which Prometheus
// keeps for its whole retention; per-object detail belongs in logs, Events and
// the Web UI. A new label is added here with its reason, or it is refused by a
// unit test (test/unit/metrics-labels.test.ts); docs/metrics.md says the same.

/** Label name -> why its values are bounded. */
export const LABEL_BOUNDS: Readonly<Record<string, string>> = {
  capability: "one of tend's capabilities: weeder, taint, apps, repair, and nodeRepair (its mode, its informer)",
  mode: 'act or observe',
  state: "a weeder window's state: open or armed",
  condition: "a taint condition's type: NodeTaintDetected or NodeTaintReplacing",
  outcome: "a fixed set in code: an eviction's (evicted, refused, gone, paused, observed, ungranted), an Event write's",
  result: 'a fixed set in code: a command run (ok, failed), a configuration reading (changed, unchanged, restart, invalid)',
  status: "a repair entry's status: queued, processing, succeeded, failed",
  operation: 'a repair operation the configuration names, or other: never a name sent with an entry',
  kind: 'a fixed set: an informer delivery (upsert, delete), a repair command (repair_command, success_command), the kind of object a write would touch',
  verb: 'the verb of a write tend would make: a fixed set in code',
  namespace: 'a namespace the configuration names, or one of the cluster\'s namespaces (few and long-lived), never an object\'s name',
  service: 'a Service the weeder configuration names',
  resource: "an informer's resource: a fixed set in code",
  what: 'a workflow-state read: repair, taint-replacements, taint-nodes, weeder',
  decision: "the repair queue's answer to a Node's countdown: enqueued, observed, refused, not-needed (or other)",
  refusal: 'why the repair queue refused a Node: a fixed set in code (recent-entry, rebooting, cluster-limit, storm, paused, unmappable, not-configured, unavailable)',
  reason: 'an Event reason of the fixed set docs/events.md lists',
  version: 'the version of tend the process runs: one per build',
  commit: 'the commit the process was built from: one per build',
};

/** Labels that grow with events: never allowed, whatever the list above says. */
export const UNBOUNDED_LABELS = ['pod', 'node', 'nodename', 'name', 'uid', 'index', 'address', 'ip', 'entry', 'workflow_id', 'run_id', 'message', 'error', 'step'] as const;
