{{/* The release's objects are named <fullname>[-<part>]: "tend" for a release named tend. */}}
{{- define "tend.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tend.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tend.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tend.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: required when serviceAccount.create is false (the existing ServiceAccount tend runs as)" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "tend.configMapName" -}}
{{- printf "%s-config" (include "tend.fullname" .) -}}
{{- end -}}

{{/* What selects the release's pods; never changes over upgrades. */}}
{{- define "tend.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tend.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tend.labels" -}}
{{ include "tend.selectorLabels" . }}
app.kubernetes.io/part-of: tend
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The image, by digest when one is given (it wins over the tag). */}}
{{- define "tend.image" -}}
{{- $repository := required "image.repository: required (where tend's image is pushed, e.g. registry.example/tend)" .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
tend's configuration file. The capability sections are the values' own (config.*); the task queue
and versioning come from temporal.*, the HTTP port from metrics.port. The Temporal address,
namespace and credentials are given as TEMPORAL_* variables instead (deployment.yaml), as in
deploy/kubernetes: the file stays the same wherever it is read from.
*/}}
{{- define "tend.config" -}}
{{- $config := dict -}}
{{- if .Values.config.mode }}{{ $_ := set $config "mode" .Values.config.mode }}{{ end -}}
{{- $temporal := dict "taskQueue" .Values.temporal.taskQueue -}}
{{- if .Values.temporal.deployment }}{{ $_ := set $temporal "deployment" .Values.temporal.deployment }}{{ end -}}
{{- $_ := set $config "temporal" $temporal -}}
{{- $_ := set $config "http" (dict "address" (printf "0.0.0.0:%d" (int .Values.metrics.port))) -}}
{{- range $section := include "tend.capabilities" . | fromJsonArray -}}
{{- $value := index $.Values.config $section -}}
{{- if hasKey $value "fromFile" -}}
{{- fail (printf "config.%s.fromFile: the pod has no file beside its configuration, and the chart's rights could not follow what it says; give the section's content in the values instead" $section) -}}
{{- end -}}
{{- $_ := set $config $section $value -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/* The capability sections present (an empty one, like `apps: {}`, is present: on, everywhere). */}}
{{- define "tend.capabilities" -}}
{{- $present := list -}}
{{- range $section := list "weeder" "taintReplacement" "apps" "repair" "nodeRepair" -}}
{{- if kindIs "map" (index $.Values.config $section) }}{{ $present = append $present $section }}{{ end -}}
{{- end -}}
{{- toJson $present -}}
{{- end -}}
