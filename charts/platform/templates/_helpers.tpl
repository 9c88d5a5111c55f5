{{- define "platform.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "platform.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "platform.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "platform.env" -}}
- name: PLATFORM_DEPLOYMENT
  value: {{ .Values.config.deployment | quote }}
- name: LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
- name: TRUST_PROXY
  value: {{ .Values.config.trustProxy | quote }}
- name: JSON_BODY_LIMIT
  value: {{ .Values.config.jsonBodyLimit | quote }}
- name: OIDC_CLOCK_SKEW_SECONDS
  value: {{ .Values.config.oidcClockSkewSeconds | quote }}
- name: PLATFORM_BOOTSTRAP_LOCALHOST
  value: "false"
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.existingSecret }}
      key: DATABASE_URL
{{- if .Values.redis.existingSecret }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret }}
      key: REDIS_URL
{{- end }}
{{- if .Values.signingKeys.existingSecret }}
- name: SIGNING_KEYS_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Values.signingKeys.existingSecret }}
      key: SIGNING_KEYS_SECRET
{{- end }}
{{- end -}}
