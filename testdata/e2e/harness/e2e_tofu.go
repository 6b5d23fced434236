package harness

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The OpenTofu project of the journey's offline step. Addresses are spelled
// out where OpenTofu's default registry (registry.opentofu.org) is not the
// origin; "hashicorp/local" and "example/tofu/aws" are OpenTofu's own.
const E2ETofuProject = `terraform {
  required_providers {
    random = {
      source  = "registry.terraform.io/hashicorp/random"
      version = "~> 3.5"
    }
    local = {
      source  = "hashicorp/local"
      version = "2.5.1"
    }
  }
}

module "sub" {
  source  = "registry.terraform.io/example/sub/aws"
  version = "2.0.0"
}

module "t" {
  source = "example/tofu/aws"
}
`

// LockHashes returns the hashes a lock file records for one provider.
func LockHashes(t *testing.T, lock, addr string) []string {
	t.Helper()
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "provider \""+addr+"\" {")
	if !ok {
		t.Fatalf("%s has no block for %s:\n%s", lock, addr, b)
	}
	block, _, _ = strings.Cut(block, "\n}")
	var out []string
	for _, m := range regexp.MustCompile(`"((?:h1|zh):[^"]+)"`).FindAllStringSubmatch(block, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// registryZH returns the zh: hashes the appliance's provider registry
// protocol gives for a provider version: one per line of the SHA256SUMS its
// download answer points at (resolved against the answer's URL, as the
// clients do).
func registryZH(t *testing.T, base, caFile, origin, ns, typ, version string) []string {
	t.Helper()
	pemData, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	dl, _ := url.Parse(base + "origin/" + origin + "/v1/providers/" + ns + "/" + typ + "/" + version + "/download/linux/amd64")
	resp, err := cl.Get(dl.String())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ShasumsURL string `json:"shasums_url"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || !strings.HasPrefix(doc.ShasumsURL, "/") {
		t.Fatalf("download answer for %s/%s: %v, shasums_url %q (want relative)", ns, typ, err, doc.ShasumsURL)
	}
	ref, _ := url.Parse(doc.ShasumsURL)
	resp, err = cl.Get(dl.ResolveReference(ref).String())
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("SHA256SUMS: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sum, _, ok := strings.Cut(sc.Text(), "  "); ok {
			out = append(out, "zh:"+sum)
		}
	}
	sort.Strings(out)
	return out
}

func OnlyPrefix(hs []string, prefix string) []string {
	var out []string
	for _, h := range hs {
		if strings.HasPrefix(h, prefix) {
			out = append(out, h)
		}
	}
	return out
}

// TofuOfflineInit is the journey's offline 'init' step with the real
// OpenTofu client: 'airgap client-config --tool tofu' in the given mode,
// TF_CLI_CONFIG_FILE, no network but the appliance. It proves the relative
// URLs in the appliance's answers work for OpenTofu (package, SHA256SUMS
// and signature URLs; module locations with //subdir; mirror archive URLs),
// and that in registry mode the lock holds exactly the zh: hashes the
// registry protocol gives.
func TofuOfflineInit(t *testing.T, work, base, caFile, mode string) {
	tofu := TofuBin(t)
	rc := filepath.Join(t.TempDir(), "airgap.tofurc")
	cfg := MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", mode, "--tool", "tofu")
	os.WriteFile(rc, []byte(cfg), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(t.TempDir(), "tofu-project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(E2ETofuProject), 0o644)
	out := MustRun(t, dir, offline, tofu, "init", "-input=false", "-no-color")
	t.Logf("tofu init (%s mode):\n%s", mode, out)
	lock := filepath.Join(dir, ".terraform.lock.hcl")
	for _, p := range []struct{ origin, typ, version string }{
		{"registry.terraform.io", "random", ""}, {"registry.opentofu.org", "local", "2.5.1"},
	} {
		addr := p.origin + "/hashicorp/" + p.typ
		got := LockHashes(t, lock, addr)
		if len(OnlyPrefix(got, "h1:")) == 0 {
			t.Errorf("%s: no h1: hash in the lock: %v", addr, got)
		}
		version := p.version
		if version == "" {
			b, _ := os.ReadFile(lock)
			m := regexp.MustCompile(`provider "` + regexp.QuoteMeta(addr) + `" \{\s*version\s*=\s*"([^"]+)"`).FindStringSubmatch(string(b))
			if m == nil {
				t.Fatalf("no version for %s in the lock:\n%s", addr, b)
			}
			version = m[1]
		}
		want := registryZH(t, base, caFile, p.origin, "hashicorp", p.typ, version)
		zh := OnlyPrefix(got, "zh:")
		switch mode {
		case "registry":
			if strings.Join(zh, ",") != strings.Join(want, ",") {
				t.Errorf("%s %s: lock zh: hashes differ from the registry protocol's SHA256SUMS:\n got %v\nwant %v", addr, version, zh, want)
			}
		case "mirror":
			// From a mirror OpenTofu records the installed platform's zh:.
			for _, h := range zh {
				if !strings.Contains(strings.Join(want, ","), h) {
					t.Errorf("%s %s: lock zh: %s is not in SHA256SUMS %v", addr, version, h, want)
				}
			}
		}
	}
	for _, f := range []string{"sub/modules/sub/main.tf", "t/main.tf"} {
		if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", f)); err != nil {
			t.Errorf("module file %s not installed by tofu: %v", f, err)
		}
	}
}
