{{- define "airgap.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "airgap.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "airgap.labels" -}}
{{ include "airgap.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "airgap.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The store as serve and the jobs name it. */}}
{{- define "airgap.store" -}}
{{- if eq .Values.store.type "s3" -}}
{{ .Values.store.s3.url }}
{{- else -}}
/store
{{- end -}}
{{- end -}}

{{- define "airgap.claimName" -}}
{{ .Values.store.volume.existingClaim | default (printf "%s-store" (include "airgap.fullname" .)) }}
{{- end -}}

{{/* The restricted Pod Security Standard, pod level. */}}
{{- define "airgap.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* ... and container level. */}}
{{- define "airgap.securityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Volumes every pod has: tmp, and the store when it is a volume. */}}
{{- define "airgap.storeVolumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- if eq .Values.store.type "volume" }}
- name: store
  persistentVolumeClaim:
    claimName: {{ include "airgap.claimName" . }}
{{- end }}
{{- end -}}

{{- define "airgap.storeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if eq .Values.store.type "volume" }}
- name: store
  mountPath: /store
{{- end }}
{{- end -}}

{{/* Object-store credentials. */}}
{{- define "airgap.storeEnv" -}}
{{- if eq .Values.store.type "s3" }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.store.s3.credentialsSecret }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.store.s3.credentialsSecret }}
      key: AWS_SECRET_ACCESS_KEY
{{- end }}
- name: TMPDIR
  value: /tmp
{{- end -}}

{{/* The access file serve reads: the Secret's, mounted read-only, or the
one on the store volume. */}}
{{- define "airgap.accessFile" -}}
{{- if .Values.access.secretName -}}
/etc/airgap/access/access.hcl
{{- else -}}
{{ .Values.access.file }}
{{- end -}}
{{- end -}}
