package station

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

const withdrawProject = `terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "~> 3.5"
    }
  }
}
`

// TestWithdrawJourney: export -> import -> serve; a bundle that only
// withdraws random 3.6.2 and module example/vpc/aws 1.0.0 -> both gone from
// every endpoint within 2 s, terraform init with a lock pinning 3.6.2 fails,
// inventory shows who/when/why; the first bundle is then refused naming the
// withdrawal; a bundle that reinstates 3.6.2 brings it back.
func TestWithdrawJourney(t *testing.T) {
	tf := harness.TerraformBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"))
	work := t.TempDir()

	// The project locked online at the newest random, 3.6.2.
	ref := filepath.Join(work, "project")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(withdrawProject), 0o644)
	harness.MustRun(t, ref, online, tf, "init", "-input=false", "-no-color")
	if lock, _ := os.ReadFile(filepath.Join(ref, ".terraform.lock.hcl")); !strings.Contains(string(lock), `version     = "3.6.2"`) {
		t.Fatalf("reference lock does not pin 3.6.2:\n%s", lock)
	}

	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--name", "Site Ops <ops@site.test>", "--no-passphrase")
	export := func(name, manifest string) string {
		t.Helper()
		mf := filepath.Join(work, name+".hcl")
		os.WriteFile(mf, []byte(manifest), 0o644)
		out := filepath.Join(work, name+".bundle")
		harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", out, "--cache", filepath.Join(work, "cache"))
		return out
	}
	b1 := export("first", `
platforms = ["linux_amd64"]
provider "hashicorp/random" {
  versions = "~> 3.5"
  latest   = 2
}
module "example/vpc/aws" { versions = "1.0.0" }
`)
	// A manifest without a reason is refused on the connected side.
	mf := filepath.Join(work, "noreason.hcl")
	os.WriteFile(mf, []byte("withdraw \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"), 0o644)
	if out, err := harness.CmdRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", filepath.Join(work, "x.bundle")); err == nil || !strings.Contains(out, "reason") {
		t.Errorf("a withdrawal without a reason was accepted: %v\n%s", err, out)
	}
	const reason = "compromised build <script>alert(1)</script>"
	bw := export("withdraw", `
withdraw "hashicorp/random" {
  versions = "3.6.2"
  reason   = "`+reason+`"
}
withdraw "example/vpc/aws" {
  module   = true
  versions = "1.0.0"
  reason   = "module pulled by its author"
}
`)
	if out := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", keys+".pub.asc", bw); !strings.Contains(out, "withdraws: provider registry.terraform.io/hashicorp/random 3.6.2 ("+reason+")") {
		t.Errorf("verify does not show the withdrawal:\n%s", out)
	}
	storeDir := filepath.Join(work, "store")
	imp := func(b string) (string, error) {
		return harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b)
	}
	if out, err := imp(b1); err != nil {
		t.Fatal(out)
	}
	srv := harness.StartServe(t, storeDir)
	base, caFile := srv.Base, srv.CAFile
	pem, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path string) (int, string) {
		resp, err := cl.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	endpoints := []struct{ path, has string }{
		{"v1/providers/hashicorp/random/versions", `"3.6.2"`},
		{"v1/providers/hashicorp/random/3.6.2/download/linux/amd64", "download_url"},
		{"mirror/registry.terraform.io/hashicorp/random/index.json", `"3.6.2"`},
		{"mirror/registry.terraform.io/hashicorp/random/3.6.2.json", "archives"},
		{"v1/modules/example/vpc/aws/versions", `"1.0.0"`},
	}
	for _, e := range endpoints {
		if code, body := get(e.path); code != 200 || !strings.Contains(body, e.has) {
			t.Fatalf("before the withdrawal, %s: %d %s", e.path, code, body)
		}
	}

	out, err := imp(bw)
	if err != nil || !strings.Contains(out, "withdrew provider registry.terraform.io/hashicorp/random 3.6.2") {
		t.Fatalf("importing the withdrawal: %v\n%s", err, out)
	}
	t.Logf("import of the withdrawal:\n%s", out)
	withdrawnAt := time.Now()
	for _, e := range endpoints {
		for {
			code, body := get(e.path)
			if code != 200 || !strings.Contains(body, e.has) {
				break
			}
			if time.Since(withdrawnAt) > 2*time.Second {
				t.Fatalf("2 s after the withdrawal, %s still offers it: %s", e.path, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The catalog page lists it only as withdrawn, with its reason (escaped).
	if code, page := get(""); code != 200 || !strings.Contains(page, "hashicorp/random</a></td>\n<td>3.6.0</td>") ||
		!strings.Contains(page, "compromised build &lt;script&gt;") || strings.Contains(page, "<script>alert") {
		t.Errorf("the catalog page after the withdrawal:\n%s", page)
	}
	// 3.6.0 is still served.
	if _, body := get("v1/providers/hashicorp/random/versions"); !strings.Contains(body, `"3.6.0"`) {
		t.Errorf("3.6.0 went too: %s", body)
	}

	// inventory: version, reason, bundle, signer, time.
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", storeDir)
	for _, want := range []string{"Withdrawn", "registry.terraform.io/hashicorp/random", "3.6.2", reason, "module pulled by its author", "signer"} {
		if !strings.Contains(inv, want) {
			t.Errorf("inventory lacks %q:\n%s", want, inv)
		}
	}

	// The withdrawn versions' blobs are unreferenced now: gc deletes them
	// while serve runs.
	if out := harness.MustRun(t, work, nil, harness.Bin, "gc", "--store", storeDir); !strings.Contains(out, "removed 7 unreferenced blob(s)") {
		t.Errorf("gc after the withdrawal (package, its Go build information, SHA256SUMS, signature, module archive, zip and docs):\n%s", out)
	}
	harness.CheckConsistent(t, storeDir)

	// terraform init with the lock file pinning the withdrawn version.
	cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry")
	rc := filepath.Join(work, "airgap.tfrc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(work, "offline")
	harness.CopyTree(t, ref, dir)
	out, err = harness.CmdRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
	if err == nil {
		t.Fatalf("terraform init installed a withdrawn locked version:\n%s", out)
	}
	t.Logf("terraform init with a lock pinning the withdrawn 3.6.2:\n%s", out)
	if !strings.Contains(out, "3.6.2") {
		t.Errorf("terraform's error does not name the version:\n%s", out)
	}

	// tofu with the same lock (the full source names the same provider).
	tofuCfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry", "--tool", "tofu")
	tofuRC := filepath.Join(work, "tofu.tfrc")
	os.WriteFile(tofuRC, []byte(tofuCfg), 0o644)
	tofuDir := filepath.Join(work, "tofu")
	harness.CopyTree(t, ref, tofuDir)
	os.WriteFile(filepath.Join(tofuDir, "main.tf"), []byte(strings.Replace(withdrawProject, `"hashicorp/random"`, `"registry.terraform.io/hashicorp/random"`, 1)), 0o644)
	tofuEnv := append([]string{"TF_CLI_CONFIG_FILE=" + tofuRC}, offline[1:]...)
	out, err = harness.CmdRun(t, tofuDir, tofuEnv, harness.TofuBin(t), "init", "-input=false", "-no-color")
	if err == nil {
		t.Fatalf("tofu init installed a withdrawn locked version:\n%s", out)
	}
	t.Logf("tofu init with a lock pinning the withdrawn 3.6.2:\n%s", out)
	if !strings.Contains(out, "3.6.2") {
		t.Errorf("tofu's error does not name the version:\n%s", out)
	}

	// The first bundle cannot bring 3.6.2 back.
	before, _ := os.ReadFile(filepath.Join(storeDir, "index.json"))
	out, err = imp(b1)
	if err == nil || !strings.Contains(out, "withdrew") || !strings.Contains(out, "3.6.2") || !strings.Contains(out, "reinstate") {
		t.Fatalf("re-import of a withdrawn version: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join(storeDir, "index.json")); string(after) != string(before) {
		t.Error("a refused import changed the index")
	}

	// A bundle that reinstates it (and carries it) brings it back.
	br := export("reinstate", `
platforms = ["linux_amd64"]
provider "hashicorp/random" { versions = "3.6.2" }
reinstate "hashicorp/random" {
  versions = "3.6.2"
  reason   = "rebuilt and re-verified"
}
`)
	if out, err := imp(br); err != nil || !strings.Contains(out, "reinstated") {
		t.Fatalf("reinstating: %v\n%s", err, out)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if _, body := get("v1/providers/hashicorp/random/versions"); strings.Contains(body, `"3.6.2"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reinstated version is not served after 2 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
	// The module stays withdrawn: the first bundle is still refused for it.
	if out, err := imp(b1); err == nil || !strings.Contains(out, "example/vpc/aws 1.0.0") {
		t.Errorf("the module's withdrawal was lifted too: %v\n%s", err, out)
	}
}
