package kube

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// podman runs podman on a storage of its own (root and runroot in dir),
// with runc and the containers.conf this machine needs (default_ulimits
// empty, cgroupfs).
type podman struct {
	bin, root, runroot string
	env                []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal("podman is required: the chart's Deployment and import Job run in it (apt-get install -y podman runc)")
	}
	dir, err := os.MkdirTemp("", "kpm") // short: podman's socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "containers.conf")
	os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = \"cgroupfs\"\n"), 0o644)
	p := &podman{bin: bin, root: filepath.Join(dir, "root"), runroot: filepath.Join(dir, "run"),
		env: append(harness.BaseEnv(), "CONTAINERS_CONF="+conf)}
	// Not 'system reset': it also removes the machine's podman networks,
	// which are not in this storage.
	t.Cleanup(func() {
		p.run("pod", "rm", "-af", "-t", "5")
		p.run("rm", "-af", "-t", "5")
		p.run("rmi", "-af")
		exec.Command("umount", "-R", filepath.Join(dir, "root", "overlay")).Run()
		os.RemoveAll(dir)
	})
	return p
}

func (p *podman) run(args ...string) (string, error) {
	cmd := exec.Command(p.bin, append([]string{"--root", p.root, "--runroot", p.runroot, "--runtime", "runc"}, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (p *podman) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := p.run(args...)
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// object finds the rendered object of kind and returns it as a map.
func object(t *testing.T, out map[string]string, kind string) map[string]any {
	t.Helper()
	for n, text := range out {
		if strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			var o map[string]any
			if yaml.Unmarshal([]byte(doc), &o) == nil && o["kind"] == kind {
				return o
			}
		}
	}
	t.Fatalf("the chart renders no %s", kind)
	return nil
}

func dig(o map[string]any, path ...string) map[string]any {
	for _, k := range path {
		o = o[k].(map[string]any)
	}
	return o
}

// hostVolumes puts host folders in place of the pod's claims and Secrets
// (podman has no cluster to provide them): by volume name.
func hostVolumes(t *testing.T, spec map[string]any, paths map[string]string) {
	t.Helper()
	for _, v := range spec["volumes"].([]any) {
		vol := v.(map[string]any)
		name := vol["name"].(string)
		if p, ok := paths[name]; ok {
			vol["hostPath"] = map[string]any{"path": p, "type": "Directory"}
			delete(vol, "persistentVolumeClaim")
			delete(vol, "secret")
			delete(paths, name)
		}
	}
	if len(paths) != 0 {
		t.Fatalf("the pod has no volumes %v", paths)
	}
}

func writeYAML(t *testing.T, path string, o map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o644)
}

// TestPodmanKubePlay runs what the chart renders in a real container
// runtime: the image 'make image' builds, loaded into podman; the import
// Job's pod imports a signed bundle into an empty store folder (the
// claim); the Deployment's pod (kube play) serves it on 127.0.0.1, its
// /healthz answers over TLS with the store's CA, its access file comes from
// a Secret volume as the kubelet lays it out under fsGroup (root:65532
// 0440), terraform init installs
// a provider through it, and its process runs as 65532 on a read-only
// root file system.
func TestPodmanKubePlay(t *testing.T) {
	pm := newPodman(t)
	tf := harness.TerraformBin(t)
	work := t.TempDir()
	_, archive := makeImage(t, t.TempDir(), "1764000000")
	loaded := pm.must(t, "load", "-i", archive)
	m := regexp.MustCompile(`Loaded image(?:\(s\))?: (\S+)`).FindStringSubmatch(loaded)
	if m == nil {
		t.Fatalf("podman load names no image:\n%s", loaded)
	}
	name := m[1]
	pm.must(t, "tag", name, "localhost/airgap-e2e:test")

	// The site's keyring and a bundle signed with its key (the standard
	// fixture set), in folders the pods mount; the store, empty, owned by
	// the image's user.
	signer := bundletest.Key(t, "site")
	pub, err := verify.PublicArmor(signer)
	if err != nil {
		t.Fatal(err)
	}
	keyDir, bundleDir, storeDir := filepath.Join(work, "keyring"), filepath.Join(work, "bundles"), filepath.Join(work, "store")
	for _, d := range []string{keyDir, bundleDir, storeDir} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(keyDir, "site.pub.asc"), []byte(pub), 0o644)
	set := bundletest.Standard(t, filepath.Join(work, "set"), signer)
	set.WriteBundleFile(t, filepath.Join(bundleDir, "site.bundle"), signer, bundle.CompressionZstd)
	if err := os.Chown(storeDir, 65532, 65532); err != nil {
		t.Fatal(err)
	}

	// The access file, from a Secret as the kubelet mounts it under the
	// pod's fsGroup (root:65532, mode 0440, through ..data): serve, as
	// 65532, reads it; anonymous requests may read everything, a wrong
	// token is refused.
	accessDir := filepath.Join(work, "access")
	ciToken := harness.CreateToken(t, filepath.Join(work, "access.hcl"), "ci", "**")
	accessText, err := os.ReadFile(filepath.Join(work, "access.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	harness.KubeletVolume(t, accessDir, "access.hcl", string(accessText)+"anonymous {\n  allow = [\"**\"]\n}\n", 0o440, fsGroup)

	port := harness.FreePort(t)
	out, err := render(t, `
image: {repository: localhost/airgap-e2e, tag: test, pullPolicy: Never}
replicas: 1
hostnames: [localhost]
access: {enabled: true, secretName: airgap-access}
import:
  enabled: true
  keyringSecret: site-keyring
  bundle: {source: volume, claimName: bundles, path: site.bundle}
`)
	if err != nil {
		t.Fatal(err)
	}

	// The import Job's pod, as a Pod (podman plays pods, not Jobs).
	job := object(t, out, "Job")
	podSpec := dig(job, "spec", "template", "spec")
	hostVolumes(t, podSpec, map[string]string{"store": storeDir, "bundle": bundleDir, "keyring": keyDir})
	importYAML := filepath.Join(work, "import.yaml")
	writeYAML(t, importYAML, map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "airgap-import"}, "spec": podSpec})
	pm.must(t, "kube", "play", importYAML)
	code := strings.TrimSpace(pm.must(t, "wait", "airgap-import-import"))
	logs, _ := pm.run("logs", "airgap-import-import")
	if code != "0" {
		t.Fatalf("the import Job's pod exited %s:\n%s", code, logs)
	}
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", storeDir)
	if !strings.Contains(inv, "hashicorp/random") {
		t.Fatalf("the store has no hashicorp/random after the import pod:\n%s\n--- its log:\n%s", inv, logs)
	}

	// serve: the Deployment, its port published on 127.0.0.1 only.
	dep := object(t, out, "Deployment")
	spec := dig(dep, "spec", "template", "spec")
	hostVolumes(t, spec, map[string]string{"store": storeDir, "access": accessDir})
	ctr := spec["containers"].([]any)[0].(map[string]any)
	// The kubelet requests the probes' URL itself; podman 4.3 turns an
	// httpGet probe into "curl" run by a shell inside the container, which
	// the image has neither of. The test requests the readiness probe's
	// URL on the published port instead, as the kubelet would.
	probe := dig(ctr, "readinessProbe", "httpGet")
	probeURL := fmt.Sprintf("%s://localhost:%d%s", strings.ToLower(probe["scheme"].(string)), port, probe["path"])
	for _, p := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
		delete(ctr, p)
	}
	ports := ctr["ports"].([]any)
	ports[0].(map[string]any)["hostPort"] = port
	ports[0].(map[string]any)["hostIP"] = "127.0.0.1"
	depYAML := filepath.Join(work, "deployment.yaml")
	writeYAML(t, depYAML, dep)
	pm.must(t, "kube", "play", depYAML)

	// Ready: the readiness probe's URL answers 200 over TLS, with the CA
	// serve made in the store.
	caFile := filepath.Join(storeDir, "tls", "ca", "ca.pem")
	deadline := time.Now().Add(2 * time.Minute)
	var status int
	for time.Now().Before(deadline) {
		if ca, err := os.ReadFile(caFile); err == nil {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(ca)
			cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
			if resp, err := cl.Get(probeURL); err == nil {
				resp.Body.Close()
				if status = resp.StatusCode; status == 200 {
					break
				}
			}
		}
		time.Sleep(time.Second)
	}
	if status != 200 {
		ps, _ := pm.run("ps", "-a")
		logs, _ := pm.run("pod", "logs", "airgap-pod")
		t.Fatalf("serve in podman is not ready after 2 minutes (%s: %d):\n%s\n%s", probeURL, status, ps, logs)
	}

	// Access control is on, from the Secret's file: a wrong token is
	// refused, the token in it is taken.
	{
		ca, _ := os.ReadFile(caFile)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		versions := fmt.Sprintf("https://localhost:%d/v1/providers/hashicorp/random/versions", port)
		for _, c := range []struct {
			token string
			want  int
		}{{"not-a-token", 401}, {ciToken, 200}} {
			req, _ := http.NewRequest("GET", versions, nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				logs, _ := pm.run("pod", "logs", "airgap-pod")
				t.Errorf("serve in podman with the access file from a Secret: %d for a request with %s, want %d\n%s", resp.StatusCode, map[bool]string{true: "the ci token", false: "a wrong token"}[c.token == ciToken], c.want, logs)
			}
		}
	}

	// Non-root on a read-only root file system: the process's own view.
	var ctrName string
	for _, n := range strings.Fields(pm.must(t, "ps", "--format", "{{.Names}}")) {
		if strings.HasSuffix(n, "-serve") {
			ctrName = n
		}
	}
	if ctrName == "" {
		t.Fatalf("no serve container: %s", pm.must(t, "ps", "-a"))
	}
	pid := strings.TrimSpace(pm.must(t, "inspect", "--format", "{{.State.Pid}}", ctrName))
	st, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") {
			if f := strings.Fields(l); len(f) != 5 || f[1] != "65532" || f[2] != "65532" || f[3] != "65532" {
				t.Errorf("serve runs with %q, not 65532", l)
			}
		}
		if strings.HasPrefix(l, "CapEff:") && strings.TrimSpace(strings.TrimPrefix(l, "CapEff:")) != "0000000000000000" {
			t.Errorf("serve has capabilities: %q", l)
		}
		if strings.HasPrefix(l, "NoNewPrivs:") && !strings.HasSuffix(l, "1") {
			t.Errorf("serve may gain privileges: %q", l)
		}
	}
	mi, err := os.ReadFile("/proc/" + pid + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	rootRO := false
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == "/" {
			rootRO = strings.HasPrefix(f[5], "ro")
		}
	}
	if !rootRO {
		t.Errorf("serve's root file system is writable:\n%s", mi)
	}
	if ro := strings.TrimSpace(pm.must(t, "inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", ctrName)); ro != "true" {
		t.Errorf("podman inspect: ReadonlyRootfs %s", ro)
	}

	// terraform installs a provider through it.
	proj := filepath.Join(work, "project")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "main.tf"), []byte(`terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "~> 3.5"
    }
  }
}

module "vpc" {
  source  = "example/vpc/aws"
  version = "1.0.0"
  name    = "a"
}
`), 0o644)
	url := fmt.Sprintf("https://localhost:%d", port)
	cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", url, "--mode", "registry")
	rc := filepath.Join(work, "tf.rc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	env := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	initOut := harness.MustRun(t, proj, env, tf, "init", "-input=false", "-no-color")
	if !strings.Contains(initOut, "Installed hashicorp/random v3.6.0") {
		t.Errorf("terraform init through serve in podman:\n%s", initOut)
	}
	if _, err := os.Stat(filepath.Join(proj, ".terraform.lock.hcl")); err != nil {
		t.Errorf("no lock file: %v", err)
	}
}
