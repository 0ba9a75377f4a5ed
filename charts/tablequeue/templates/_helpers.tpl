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

{{- define "tablequeue.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: tablequeue
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The chart's labels plus the component's name, on a component's objects. */}}
{{- define "tablequeue.componentLabels" -}}
{{ include "tablequeue.labels" .root }}
app.kubernetes.io/name: {{ printf "tablequeue-%s" .component }}
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

{{/* Labels of the prometheus-operator objects: the chart's plus monitoring.labels. */}}
{{- define "tablequeue.monitoringLabels" -}}
{{ include "tablequeue.labels" . }}
{{- with .Values.monitoring.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
