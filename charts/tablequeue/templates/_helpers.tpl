{{/* The chart's name, and the full name of the release's objects (at most 63 characters). */}}
{{- define "tablequeue.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tablequeue.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "tablequeue.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "tablequeue.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* A component's name: fullname-COMPONENT. */}}
{{- define "tablequeue.component" -}}
{{- printf "%s-%s" (include "tablequeue.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of every object: the chart's, and the part it belongs to (`component`:
operator, api or monitoring). */}}
{{- define "tablequeue.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: tablequeue
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/component: {{ .component }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The labels plus the component's name, on the objects of a component with pods. */}}
{{- define "tablequeue.componentLabels" -}}
{{ include "tablequeue.labels" . }}
app.kubernetes.io/name: {{ printf "tablequeue-%s" .component }}
{{- end -}}

{{/* The labels of a component's pods: the selector's, the component, the pod labels. */}}
{{- define "tablequeue.podLabels" -}}
{{ include "tablequeue.selectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
{{- with .values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The labels that select one component's pods (never change them in an upgrade). */}}
{{- define "tablequeue.selectorLabels" -}}
app.kubernetes.io/name: {{ printf "tablequeue-%s" .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "tablequeue.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}

{{- define "tablequeue.operatorServiceAccount" -}}
{{- if .Values.operator.serviceAccount.create -}}
{{- default (include "tablequeue.component" (dict "root" . "component" "operator")) .Values.operator.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.operator.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "tablequeue.apiServiceAccount" -}}
{{- if .Values.api.serviceAccount.create -}}
{{- default (include "tablequeue.component" (dict "root" . "component" "api")) .Values.api.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.api.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels of the prometheus-operator objects: the chart's plus monitoring.labels. */}}
{{- define "tablequeue.monitoringLabels" -}}
{{ include "tablequeue.labels" (dict "root" . "component" "monitoring") }}
{{- with .Values.monitoring.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Whether the cluster serves prometheus-operator's kinds (ServiceMonitor, PodMonitor,
PrometheusRule): without them those objects are left out, so an install does not fail.
`helm template` knows only what --api-versions says. */}}
{{- define "tablequeue.prometheusOperator" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" -}}true{{- end -}}
{{- end -}}

{{/* A component's topologySpreadConstraints (`constraints`); one without a labelSelector
gets the component's pod selector. */}}
{{- define "tablequeue.topologySpread" -}}
{{- $selector := dict "matchLabels" (include "tablequeue.selectorLabels" . | fromYaml) -}}
{{- range .constraints }}
{{- $constraint := deepCopy . }}
{{- if not (hasKey $constraint "labelSelector") }}
{{- $_ := set $constraint "labelSelector" $selector }}
{{- end }}
- {{ toYaml $constraint | nindent 2 | trim }}
{{- end }}
{{- end -}}

{{/* A component's PodDisruptionBudget (`values`: its podDisruptionBudget); minAvailable, when
set, replaces maxUnavailable. */}}
{{- define "tablequeue.podDisruptionBudget" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "tablequeue.component" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tablequeue.componentLabels" . | nindent 4 }}
spec:
  {{- if hasKey .values "minAvailable" }}
  minAvailable: {{ .values.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .values.maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "tablequeue.selectorLabels" . | nindent 6 }}
{{- end -}}

{{/* The variable holding the URL of the API's database named by the argument. */}}
{{- define "tablequeue.databaseVariable" -}}
TABLEQUEUE_DB_{{ . | upper | replace "-" "_" }}
{{- end }}

{{/* TABLEQUEUE_API_DATABASES of api.databases: NAME=$(its variable), separated by spaces. */}}
{{- define "tablequeue.databaseList" -}}
{{- $entries := list }}
{{- range . }}
{{- $entries = append $entries (printf "%s=$(%s)" .name (include "tablequeue.databaseVariable" .name)) }}
{{- end }}
{{- join " " $entries }}
{{- end }}
