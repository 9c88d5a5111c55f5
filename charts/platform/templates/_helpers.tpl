{{/* Names and labels. */}}
{{- define "platform.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "platform.fullname" -}}
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

{{- define "platform.instanceLabels" -}}
app.kubernetes.io/name: {{ include "platform.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The service's pods. The migration Job's pods carry component "migrate": never an endpoint. */}}
{{- define "platform.selectorLabels" -}}
{{ include "platform.instanceLabels" . }}
app.kubernetes.io/component: api
{{- end -}}

{{- define "platform.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "platform.instanceLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: platform
{{- end -}}

{{- define "platform.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "platform.hasSecrets" -}}
{{- range $name, $value := .Values.secrets -}}
{{- if $value -}}yes{{- end -}}
{{- end -}}
{{- end -}}

{{/* A setting as an environment variable's text: whole numbers stay whole (values files hold them as floats). */}}
{{- define "platform.envValue" -}}
{{- if kindIs "float64" . -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* Whether more than one replica may run: fixed replicas, or an autoscaler. */}}
{{- define "platform.multiReplica" -}}
{{- if or .Values.autoscaling.enabled (gt (int .Values.replicaCount) 1) -}}yes{{- end -}}
{{- end -}}

{{- define "platform.sqlite" -}}
{{- if eq .Values.database.kind "sqlite" -}}yes{{- end -}}
{{- end -}}

{{/* Where the SQLite file lives in the pod: the data volume's mount. */}}
{{- define "platform.sqliteDirectory" -}}/app/data{{- end -}}

{{- define "platform.sqliteClaim" -}}
{{- default (printf "%s-data" (include "platform.fullname" .)) .Values.database.sqlite.persistence.existingClaim -}}
{{- end -}}

{{/*
What the chart refuses to render. Each refusal names the value to change: a release that renders
is one the service can run as configured.
*/}}
{{- define "platform.validate" -}}
{{- $multi := include "platform.multiReplica" . -}}
{{- if and $multi (not .Values.redis.enabled) -}}
{{- fail "more than one replica (replicaCount > 1 or autoscaling.enabled) needs Redis: rate limits, the DPoP replay cache and relay routing must be shared. Set redis.enabled=true and REDIS_URL (secrets.REDIS_URL or existingSecret)" -}}
{{- end -}}
{{- if and $multi (include "platform.sqlite" .) -}}
{{- fail "SQLite serves one replica only: with replicaCount > 1 or autoscaling.enabled set database.kind=mysql and DATABASE_URL (MySQL 8 or MariaDB 10.11+)" -}}
{{- end -}}
{{- if not .Values.existingSecret -}}
{{- if and (eq .Values.database.kind "mysql") (not .Values.secrets.DATABASE_URL) -}}
{{- fail "database.kind=mysql needs secrets.DATABASE_URL (mysql://user:password@host:3306/platform) or existingSecret" -}}
{{- end -}}
{{- if and .Values.redis.enabled (not .Values.secrets.REDIS_URL) -}}
{{- fail "redis.enabled=true needs secrets.REDIS_URL (redis://…) or existingSecret" -}}
{{- end -}}
{{- if and $multi .Values.config.DPOP_REQUIRE_NONCE (not .Values.secrets.DPOP_NONCE_SECRET) -}}
{{- fail "DPoP nonces with more than one replica need secrets.DPOP_NONCE_SECRET (the same key on every replica): openssl rand -base64 32" -}}
{{- end -}}
{{- if and $multi (not .Values.secrets.SIGNING_KEYS_SECRET) -}}
{{- fail "more than one replica needs secrets.SIGNING_KEYS_SECRET (the same key on every replica), so that every replica signs relay assertions with, and publishes, the same keys: openssl rand -base64 32" -}}
{{- end -}}
{{- else if include "platform.hasSecrets" . -}}
{{- fail "existingSecret is set: put the secret settings in that Secret and leave secrets.* empty" -}}
{{- end -}}
{{- if and (include "platform.sqlite" .) .Values.secrets.DATABASE_URL -}}
{{- fail "database.kind=sqlite keeps its file on the chart's volume: leave secrets.DATABASE_URL empty, or set database.kind=mysql" -}}
{{- end -}}
{{- if and .Values.secrets.REDIS_URL (not .Values.redis.enabled) -}}
{{- fail "secrets.REDIS_URL is set: set redis.enabled=true as well" -}}
{{- end -}}
{{- if ge (int .Values.preStopSleepSeconds) (int .Values.terminationGracePeriodSeconds) -}}
{{- fail "terminationGracePeriodSeconds must be longer than preStopSleepSeconds: in-flight requests need time to finish after the pause" -}}
{{- end -}}
{{- $drain := int (default 30 .Values.config.SHUTDOWN_TIMEOUT_SECONDS) -}}
{{- if gt (add (int .Values.preStopSleepSeconds) $drain) (int .Values.terminationGracePeriodSeconds) -}}
{{- fail "terminationGracePeriodSeconds must be at least preStopSleepSeconds plus config.SHUTDOWN_TIMEOUT_SECONDS: the pod would be killed while requests in flight may still finish" -}}
{{- end -}}
{{- if and (gt (int (default 1 .Values.config.WEB_CONCURRENCY)) 1) (not .Values.redis.enabled) -}}
{{- fail "config.WEB_CONCURRENCY above 1 needs Redis (redis.enabled=true and REDIS_URL): the workers share rate limits, the DPoP replay cache and relay routing through it" -}}
{{- end -}}
{{- end -}}

{{/* The ConfigMap's data: every non-empty setting of `config`. */}}
{{- define "platform.configData" -}}
{{- range $name, $value := .Values.config }}
{{- if not (or (kindIs "invalid" $value) (eq (toString $value) "")) }}
{{ $name }}: {{ include "platform.envValue" $value | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The chart's Secret's data: every non-empty setting of `secrets`. */}}
{{- define "platform.secretData" -}}
{{- range $name, $value := .Values.secrets }}
{{- if $value }}
{{ $name }}: {{ include "platform.envValue" $value | b64enc | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The environment of the service (suffix "") and of the migration Job (suffix "-migrate": the Job
runs before the release's own ConfigMap and Secret exist, so it reads hook copies of them).
*/}}
{{- define "platform.envFrom" -}}
{{- $root := .root -}}
- configMapRef:
    name: {{ printf "%s%s" (include "platform.fullname" $root) .suffix }}
{{- if $root.Values.existingSecret }}
- secretRef:
    name: {{ $root.Values.existingSecret }}
{{- else if include "platform.hasSecrets" $root }}
- secretRef:
    name: {{ printf "%s%s" (include "platform.fullname" $root) .suffix }}
{{- end }}
{{- end -}}

{{- define "platform.env" -}}
- name: PORT
  value: "3000"
{{- if include "platform.sqlite" . }}
- name: DATABASE_URL
  value: {{ printf "sqlite:%s/platform.sqlite" (include "platform.sqliteDirectory" .) | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "platform.podSecurity" -}}
automountServiceAccountToken: false
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* Where the pods may run: the service's and the migration Job's alike. */}}
{{- define "platform.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
