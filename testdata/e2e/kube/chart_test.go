package kube

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
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
access: {enabled: true, secretName: airgap-access}
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
	// The access file and the single sign-on client secret from Secrets,
	// the identity provider's CA from a ConfigMap (TestChartFlags lays
	// them out as the kubelet does).
	"secrets": `
access: {enabled: true, secretName: airgap-access}
login:
  clientSecret: {secretName: airgap-oidc, key: oidc-secret}
  caConfigMap: idp-ca
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
		{"s3-access-on-volume", "store: {type: s3, s3: {url: \"s3://bucket/p?endpoint=https://s3.x\", credentialsSecret: c}}\naccess: {enabled: true}", []string{"/access/secretName", "want 1"}},
		{"login-without-access", "login: {clientSecret: {secretName: airgap-oidc}}", []string{"/access/enabled", "must be true"}},
		{"access-secret-name", "access: {enabled: true, secretName: Airgap_Access}", []string{"/access/secretName", "does not match pattern"}},
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
		"secrets":       {"Deployment", "PersistentVolumeClaim"},
	}
	for name, values := range profiles {
		out, err := render(t, values)
		if err != nil {
			t.Fatalf("profile %s: %v", name, err)
		}
		text, kinds := manifests(t, out)
		notes := out["airgap/templates/NOTES.txt"]
		if !strings.Contains(notes, "airgap client-config --url https://airgap.site.example/") || !strings.Contains(notes, "rollout status deployment/airgap") {
			t.Errorf("profile %s: NOTES.txt does not say how to get the client configuration:\n%s", name, notes)
		}
		for _, k := range want[name] {
			i := indexOf(kinds, k)
			if i < 0 {
				t.Errorf("profile %s renders no %s (it renders %v)", name, k, kinds)
				continue
			}
			kinds = append(kinds[:i:i], kinds[i+1:]...)
		}
		if name == "ingress" && (!strings.Contains(text, "--acme-http-port=8080") || !strings.Contains(text, "targetPort: acme-http")) {
			t.Errorf("the acme profile does not lead the Service's port 80 to the challenge listener:\n%s", text)
		}
		if name == "s3" && (strings.Contains(text, "PersistentVolumeClaim") || !strings.Contains(text, "--store=s3://airgap-store/site?endpoint=https://s3.site.example") ||
			!strings.Contains(text, "AWS_SECRET_ACCESS_KEY")) {
			t.Errorf("the s3 profile does not pass the object store and its credentials alone:\n%s", text)
		}
		if name == "secrets" || name == "s3" {
			secretMounts(t, name, out)
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

// secretMounts: the access file (and, in the secrets profile, the client
// secret and the CA) are mounted read-only from their objects, whole
// folders (no subPath: the kubelet's updates reach the pod), the Secrets
// with mode 0440 (root:fsGroup r--r-----, the most serve accepts), and
// NOTES.txt names the paths the login block must name.
func secretMounts(t *testing.T, name string, out map[string]string) {
	t.Helper()
	spec := dig(object(t, out, "Deployment"), "spec", "template", "spec")
	want := map[string]string{"access": "/etc/airgap/access"}
	if name == "secrets" {
		want["login-secret"], want["login-ca"] = "/etc/airgap/login", "/etc/airgap/login-ca"
	}
	for _, m := range spec["containers"].([]any)[0].(map[string]any)["volumeMounts"].([]any) {
		m := m.(map[string]any)
		if p, ok := want[m["name"].(string)]; ok {
			if m["mountPath"] != p || m["readOnly"] != true || m["subPath"] != nil {
				t.Errorf("profile %s: volume %s mounted as %v, want read-only at %s, no subPath", name, m["name"], m, p)
			}
			delete(want, m["name"].(string))
		}
	}
	if len(want) != 0 {
		t.Errorf("profile %s: no mounts %v", name, want)
	}
	for _, v := range spec["volumes"].([]any) {
		v := v.(map[string]any)
		if sec, ok := v["secret"].(map[string]any); ok && (v["name"] == "access" || v["name"] == "login-secret") {
			if mode, _ := sec["defaultMode"].(float64); mode != 0o440 {
				t.Errorf("profile %s: Secret volume %s has defaultMode %v, want 0440 (288)", name, v["name"], sec["defaultMode"])
			}
		}
	}
	notes := out["airgap/templates/NOTES.txt"]
	if name == "secrets" && (!strings.Contains(notes, `client_secret_file = "/etc/airgap/login/client-secret"`) ||
		!strings.Contains(notes, `ca_file            = "/etc/airgap/login-ca/ca.pem"`) || !strings.Contains(notes, "https://airgap.site.example/oauth/callback")) {
		t.Errorf("profile secrets: NOTES.txt does not give the login block's paths and redirect URI:\n%s", notes)
	}
	if !strings.Contains(out["airgap/templates/deployment.yaml"], "--access=/etc/airgap/access/access.hcl") {
		t.Errorf("profile %s: serve is not given the Secret's access file", name)
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

// TestChartFlags: the flags the chart passes are the real verbs' flags.
// serve's arguments of each profile (the store and mounted files moved to
// a temporary folder) pass 'airgap serve --check-config'; the import,
// gc and prune Jobs' arguments run against a store.
func TestChartFlags(t *testing.T) {
	for _, name := range []string{"volume", "ingress", "gateway", "networkpolicy", "secrets"} {
		t.Run(name, func(t *testing.T) {
			out, err := render(t, profiles[name])
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			store, _ := harness.ImportStandard(t)
			paths := strings.NewReplacer("=/store/", "="+store+"/", "=/store", "="+store,
				"=/etc/airgap/", "="+dir+"/etc/", "/bundle/", dir+"/bundle/")
			os.MkdirAll(filepath.Join(dir, "etc", "acme"), 0o755)
			caPEM, _ := os.ReadFile(filepath.Join(harness.Root(), "testdata", "e2e", "kube", "testdata", "acme-root.pem"))
			os.WriteFile(filepath.Join(dir, "etc", "acme", "ca.pem"), caPEM, 0o644)
			// The access file exists before access is turned on (the
			// docs' order: 'airgap token create' first).
			harness.CreateToken(t, filepath.Join(store, "access.hcl"), "ci", "registry.terraform.io/**")
			if name == "secrets" {
				secretFiles(t, store, filepath.Join(dir, "etc"))
			}
			checked := 0
			for _, kind := range []string{"Deployment", "Job", "CronJob"} {
				for _, o := range objects(out, kind) {
					var spec map[string]any
					if kind == "CronJob" {
						spec = dig(o, "spec", "jobTemplate", "spec", "template", "spec")
					} else {
						spec = dig(o, "spec", "template", "spec")
					}
					var args []string
					for _, a := range spec["containers"].([]any)[0].(map[string]any)["args"].([]any) {
						args = append(args, paths.Replace(a.(string)))
					}
					switch args[0] {
					case "serve":
						args = append(args, "--check-config")
					case "import":
						// The bundle is not there: the flags are parsed, the
						// refusal is about the file.
					default:
					}
					res, err := harness.CmdRun(t, dir, nil, harness.Bin, args...)
					if strings.Contains(res, "unknown flag") || strings.Contains(res, "usage:") || (args[0] != "import" && err != nil) {
						t.Errorf("%s %s: airgap %s: %v\n%s", name, kind, strings.Join(args, " "), err, res)
					}
					// The login block was read, its client secret and CA
					// accepted, and the identity provider asked.
					if name == "secrets" && args[0] == "serve" && !strings.Contains(res, "login: the identity provider at https://127.0.0.1:") {
						t.Errorf("secrets: serve --check-config did not check the login block:\n%s", res)
					}
					checked++
				}
			}
			if want := map[string]int{"volume": 4}[name]; checked < max(want, 1) {
				t.Errorf("%s: %d verbs' arguments checked, want %d", name, checked, max(want, 1))
			}
		})
	}
}

// fsGroup is the chart's pod fsGroup: the group the kubelet gives a
// Secret volume's files.
const fsGroup = 65532

// secretFiles lays out, under etc (the pod's /etc/airgap), the volumes the
// secrets profile mounts, as the kubelet writes a Secret or ConfigMap
// volume under an fsGroup: the files in a timestamped folder, root:fsGroup
// mode 0440 (defaultMode 0440), reached through the ..data link and one
// link per key. The access file is the store's (its token) with a login
// block whose identity provider is a TLS server on loopback answering the
// discovery document, its certificate the ConfigMap's CA.
func secretFiles(t *testing.T, store, etc string) {
	t.Helper()
	idp := httptest.NewTLSServer(nil)
	t.Cleanup(idp.Close)
	idp.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": idp.URL, "authorization_endpoint": idp.URL + "/auth", "token_endpoint": idp.URL + "/token",
			"jwks_uri": idp.URL + "/keys", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	tokens, err := os.ReadFile(filepath.Join(store, "access.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	access := string(tokens) + fmt.Sprintf(`
login {
  issuer             = %q
  client_id          = "airgap"
  client_secret_file = %q
  ca_file            = %q
}
group "platform" { allow = ["registry.terraform.io/**"] }
`, idp.URL, filepath.Join(etc, "login", "client-secret"), filepath.Join(etc, "login-ca", "ca.pem"))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idp.Certificate().Raw})
	harness.KubeletVolume(t, filepath.Join(etc, "access"), "access.hcl", access, 0o440, fsGroup)
	harness.KubeletVolume(t, filepath.Join(etc, "login"), "client-secret", "s3cret-of-the-idp\n", 0o440, fsGroup)
	harness.KubeletVolume(t, filepath.Join(etc, "login-ca"), "ca.pem", string(ca), 0o644, 0)
}

func objects(out map[string]string, kind string) (l []map[string]any) {
	for n, text := range out {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			var o map[string]any
			if yaml.Unmarshal([]byte(doc), &o) == nil && o["kind"] == kind {
				l = append(l, o)
			}
		}
	}
	return l
}
