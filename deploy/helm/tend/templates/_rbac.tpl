{{- /*
The rights each capability section needs, the same grants as `tend rbac` (src/rbac/generate.ts)
for the same configuration: a Role in each namespace a section lists, or a ClusterRole when it
lists none, and a ClusterRole for what has no namespace. test/ship/chart.test.ts renders both for
several configurations and compares them (docs/helm.md, "Rights").

"tend.rbac.grants" gives them as a JSON list of { capability, part, namespace ("" cluster-wide),
rules }, in tend rbac's order.
*/ -}}
{{- define "tend.rbac.rules" -}}
weeder-readiness:
  # The watcher creates ConfigMap tend-weeder-readiness the first time (create cannot be limited to a name).
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [create]
  # The watcher reads and records the last readiness of each configured Service there.
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, update, patch]
    resourceNames: [tend-weeder-readiness]
weeder:
  # The watcher and the weeding activity follow the configured Services' readiness through their EndpointSlices.
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
  # The watcher checks that a Service whose slices it sees still exists (read only: no Service is ever written).
  - apiGroups: [""]
    resources: [services]
    verbs: [get]
  # The weeding activity watches the dependants its pod selectors name.
  - apiGroups: [""]
    resources: [pods]
    verbs: [list, watch]
  # It deletes dependants stuck in CrashLoopBackOff (UID precondition).
  - apiGroups: [""]
    resources: [pods]
    verbs: [delete]
  # An Event (WeededPod, WeederSkippedPod) on the pod's controller or the pod.
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, get, patch]
taint-replacement-nodes:
  # The watcher follows the taints of every Node.
  - apiGroups: [""]
    resources: [nodes]
    verbs: [list, watch]
taint-replacement:
  # The watcher and the activities find the managed pods (podSelector) on tainted Nodes.
  - apiGroups: [""]
    resources: [pods]
    verbs: [get, list, watch]
  # Conditions NodeTaintDetected and NodeTaintReplacing on managed pods.
  - apiGroups: [""]
    resources: [pods/status]
    verbs: [patch]
  # Replacement through the Eviction API, so PodDisruptionBudgets hold.
  - apiGroups: [""]
    resources: [pods/eviction]
    verbs: [create]
  # A replacement ends early when the pod's controller is gone.
  - apiGroups: [apps]
    resources: [replicasets, statefulsets]
    verbs: [get]
  # Events on the managed pods: marked, eviction asked, evicted, refused by a budget; in observe mode, WouldEvict.
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, get, patch]
taint-replacement-node-events:
  # Events on a tainted Node: its replacements started, and done.
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, get, patch]
apps:
  # The watcher's App informer, the activities' and `tend app`'s reads of an App.
  - apiGroups: [tend.dev]
    resources: [apps]
    verbs: [get, list, watch]
  # The entity workflow moves the revision annotations and spec.desiredState.
  - apiGroups: [tend.dev]
    resources: [apps]
    verbs: [patch]
  # observedGeneration, actualState, the Ready condition, instances.
  - apiGroups: [tend.dev]
    resources: [apps/status]
    verbs: [patch]
  # One Deployment per process, named by revision: listed by label, created, replaced, deleted (UID precondition).
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [list, create, update, delete]
  # An Event on the App when its revisions move.
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, get, patch]
repair:
  # Machine types and addresses of the Nodes to repair.
  - apiGroups: [""]
    resources: [nodes]
    verbs: [get, list]
  # Cordon and uncordon a Node under repair (resourceVersion precondition).
  - apiGroups: [""]
    resources: [nodes]
    verbs: [patch]
  # The pods on a Node being drained.
  - apiGroups: [""]
    resources: [pods]
    verbs: [list]
  # Drain: evict pods, so PodDisruptionBudgets hold.
  - apiGroups: [""]
    resources: [pods/eviction]
    verbs: [create]
  # Drain: delete pods a budget refuses in unprotected namespaces, and unprotected Job pods (UID precondition).
  - apiGroups: [""]
    resources: [pods]
    verbs: [delete]
  # Which namespaces protected_namespaces selects.
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [list]
  # Events on a Node under repair, one per step (in default), and in observe mode on each pod a drain would evict or delete (in its namespace).
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, get, patch]
node-repair:
  # The watcher follows the selected Nodes' conditions; a countdown and the repair queue read its Node, and count the healthy ones.
  - apiGroups: [""]
    resources: [nodes]
    verbs: [get, list, watch]
  # An Event on the Node when the repair queue answers its countdown: queued, refused, or in observe mode WouldEnqueue (in default).
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, get, patch]
{{- end -}}

{{- /* A section's namespaces, each once and sorted; [""] (cluster-wide) when it lists none. */ -}}
{{- define "tend.rbac.scopes" -}}
{{- $ns := .namespaces | default list -}}
{{- if $ns }}{{ $ns | uniq | sortAlpha | toJson }}{{ else }}[""]{{ end -}}
{{- end -}}

{{- define "tend.rbac.grants" -}}
{{- $rules := include "tend.rbac.rules" . | fromYaml -}}
{{- $config := .Values.config -}}
{{- $present := include "tend.capabilities" . | fromJsonArray -}}
{{- $grants := list -}}
{{- if has "weeder" $present -}}
{{- /* tend's own namespace, where the weeder keeps its record: the release's (the pod's ServiceAccount's). */ -}}
{{- $grants = append $grants (dict "capability" "weeder" "part" "weeder-readiness" "namespace" .Release.Namespace "rules" (get $rules "weeder-readiness")) -}}
{{- range $ns := include "tend.rbac.scopes" $config.weeder | fromJsonArray -}}
{{- $grants = append $grants (dict "capability" "weeder" "part" "weeder" "namespace" $ns "rules" (get $rules "weeder")) -}}
{{- end -}}
{{- end -}}
{{- if has "taintReplacement" $present -}}
{{- $grants = append $grants (dict "capability" "taintReplacement" "part" "taint-replacement-nodes" "namespace" "" "rules" (get $rules "taint-replacement-nodes")) -}}
{{- range $ns := include "tend.rbac.scopes" $config.taintReplacement | fromJsonArray -}}
{{- $grants = append $grants (dict "capability" "taintReplacement" "part" "taint-replacement" "namespace" $ns "rules" (get $rules "taint-replacement")) -}}
{{- end -}}
{{- /* Listed namespaces: the Nodes' Events are recorded in default, which needs a grant of its own. */ -}}
{{- if $config.taintReplacement.namespaces -}}
{{- $grants = append $grants (dict "capability" "taintReplacement" "part" "taint-replacement-node-events" "namespace" "default" "rules" (get $rules "taint-replacement-node-events")) -}}
{{- end -}}
{{- end -}}
{{- if has "apps" $present -}}
{{- range $ns := include "tend.rbac.scopes" $config.apps | fromJsonArray -}}
{{- $grants = append $grants (dict "capability" "apps" "part" "apps" "namespace" $ns "rules" (get $rules "apps")) -}}
{{- end -}}
{{- end -}}
{{- if has "repair" $present -}}
{{- $grants = append $grants (dict "capability" "repair" "part" "repair" "namespace" "" "rules" (get $rules "repair")) -}}
{{- end -}}
{{- /* Nodes have no namespace: cluster-wide, as tend rbac grants it (the Events on the Node are in default). */ -}}
{{- if has "nodeRepair" $present -}}
{{- $grants = append $grants (dict "capability" "nodeRepair" "part" "node-repair" "namespace" "" "rules" (get $rules "node-repair")) -}}
{{- end -}}
{{- toJson $grants -}}
{{- end -}}
