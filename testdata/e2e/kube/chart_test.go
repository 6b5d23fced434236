package kube

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// chartDir is the chart under test.
var chartDir = filepath.Join(harness.Root(), "server", "deploy", "helm", "airgap")

// The namespace the rendered objects go to.
const namespace = "airgap"

// profiles are the value sets the suite renders and applies: each turns on
// one part of the chart over the defaults.
var profiles = map[string]string{
	"volume": `
import:
  enabled: true
  keyringSecret: site-keyring
  bundle: {source: volume, claimName: bundles, path: in/site.bundle}
gc: {enabled: true}
prune: {enabled: true}
access: {enabled: true}
`,
	"s3": `
store:
  type: s3
  s3: {url: "s3://airgap-store/site?endpoint=https://s3.site.example", credentialsSecret: airgap-s3}
tls: {mode: secret, secretName: airgap-tls}
import:
  enabled: true
  keyringSecret: site-keyring
  bundle: {source: oci, reference: registry.site.example/bundles/site:2026-11, path: site.bundle}
gc: {enabled: true}
`,
	"ingress": `
ingress:
  enabled: true
  className: nginx
  annotations: {nginx.ingress.kubernetes.io/backend-protocol: HTTPS}
  tlsSecretName: airgap-ingress-tls
trustedProxies: ["10.0.0.0/8"]
tls:
  mode: acme
  acme: {directory: "https://acme.site.example/directory", email: ops@site.example, rootConfigMap: acme-root}
`,
	"gateway": `
gateway:
  enabled: true
  parentRefs: [{name: site-gateway, namespace: gateways, sectionName: https}]
metrics:
  enabled: true
  serviceMonitor: {enabled: true}
`,
	"networkpolicy": `
networkPolicy:
  enabled: true
  ingressFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ci}}}]
  egressTo: [{ipBlock: {cidr: 10.20.0.0/16}}]
metrics: {enabled: true}
`,
}

// render renders the chart with values (YAML over the chart's defaults)
// as 'helm install' would, schema check included; it returns the objects
// by template name, or the error.
func render(t *testing.T, values string) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v" + harness.KubeVersion, Major: "1", Minor: strings.Split(harness.KubeVersion, ".")[1]}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: "airgap", Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// manifests is what 'helm install' would send: every non-empty template
// output but NOTES.txt, as one YAML stream, and the kinds in it.
func manifests(t *testing.T, out map[string]string) (string, []string) {
	t.Helper()
	var names []string
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	var kinds []string
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(out[n], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var obj struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind == "" {
				t.Fatalf("%s renders something that is not a Kubernetes object (%v):\n%s", n, err, doc)
			}
			kinds = append(kinds, obj.Kind)
			b.WriteString("---\n" + strings.TrimLeft(doc, "\n") + "\n")
		}
	}
	return b.String(), kinds
}

// TestChartWrongValues: values the schema refuses fail at render time (as
// at 'helm install') with a message that names the value and what is
// wanted.
func TestChartWrongValues(t *testing.T) {
	for _, c := range []struct {
		name, values string
		want         []string
	}{
		{"replicas-string", `replicas: "two"`, []string{"replicas", "want integer"}},
		{"store-type", "store: {type: nfs}", []string{"store/type", "volume", "s3"}},
		{"s3-no-url", "store: {type: s3, s3: {credentialsSecret: x}}", []string{"store", "url"}},
		{"tls-secret-no-name", "tls: {mode: secret}", []string{"tls", "secretName"}},
		{"typo", "replica: 3", []string{"replica", "additional properties"}},
		{"import-no-keyring", "import: {enabled: true, bundle: {source: volume, claimName: b, path: x.bundle}}", []string{"import", "keyringSecret"}},
		{"bundle-path-escape", "import: {enabled: true, keyringSecret: k, bundle: {source: volume, claimName: b, path: ../../etc/x}}", []string{"import/bundle/path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, c.values)
			if err == nil {
				t.Fatalf("values %q rendered; the schema must refuse them", c.values)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the refusal of %q does not say %q:\n%s", c.values, w, msg)
				}
			}
			t.Logf("%s:\n%s", c.values, msg)
		})
	}
}

// TestChartRenders: each profile renders the objects it turns on, and the
// pods' spec is the restricted level's.
func TestChartRenders(t *testing.T) {
	want := map[string][]string{
		"volume":        {"Deployment", "Service", "PersistentVolumeClaim", "PodDisruptionBudget", "Job", "CronJob", "CronJob"},
		"s3":            {"Deployment", "Service", "Job", "CronJob"},
		"ingress":       {"Ingress", "PersistentVolumeClaim"},
		"gateway":       {"HTTPRoute", "ServiceMonitor"},
		"networkpolicy": {"NetworkPolicy"},
	}
	for name, values := range profiles {
		out, err := render(t, values)
		if err != nil {
			t.Fatalf("profile %s: %v", name, err)
		}
		text, kinds := manifests(t, out)
		for _, k := range want[name] {
			i := indexOf(kinds, k)
			if i < 0 {
				t.Errorf("profile %s renders no %s (it renders %v)", name, k, kinds)
				continue
			}
			kinds = append(kinds[:i:i], kinds[i+1:]...)
		}
		if name == "s3" && (strings.Contains(text, "PersistentVolumeClaim") || !strings.Contains(text, "--store=s3://airgap-store/site?endpoint=https://s3.site.example") ||
			!strings.Contains(text, "AWS_SECRET_ACCESS_KEY")) {
			t.Errorf("the s3 profile does not pass the object store and its credentials alone:\n%s", text)
		}
		// Every container (serve, import, gc, prune) runs with the
		// restricted level's settings; the API server checks the pods
		// (TestChartAPIServer), this the Jobs' templates too.
		images := strings.Count(text, " image: ") - strings.Count(text, "\n          image:\n")
		for _, w := range []string{"readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false", `drop: ["ALL"]`, "runAsNonRoot: true"} {
			if n := strings.Count(text, w); n < images {
				t.Errorf("profile %s: %d containers, %d with %s", name, images, n, w)
			}
		}
	}
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}
