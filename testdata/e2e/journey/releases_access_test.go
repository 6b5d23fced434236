package journey

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestReleasesAccessPerProduct: a token whose rules name
// cli.airgap.invalid/terraform sees terraform's releases and not tofu's,
// which are answered exactly as releases the appliance does not hold
// (api.json without versions, 404 for the files and the key), and
// /ui/releases lists only terraform's; a token of an older file's kind
// (no release pattern, "**") still sees every release; a malformed
// release pattern is refused.
func TestReleasesAccessPerProduct(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	j.exportVerifyImport(t)
	acc := filepath.Join(j.work, "access.hcl")
	tok := func(name string, allow ...string) string {
		t.Helper()
		out := filepath.Join(j.work, name+".token")
		args := []string{"token", "create", "--access", acc, "--store", j.store, "--name", name, "--out", out}
		for _, a := range allow {
			args = append(args, "--allow", a)
		}
		stdout, stderr, code := harness.RunSplit(t, j.work, nil, args...)
		if code != 0 {
			t.Fatalf("token create %s: exit %d\n%s%s", name, code, stdout, stderr)
		}
		if strings.Contains(stderr, "matches nothing") {
			t.Errorf("token create %s warns of a pattern the store serves:\n%s", name, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	tfOnly := tok("tf-only", "cli.airgap.invalid/terraform")
	all := tok("everything", "**")
	if out, stderr, code := harness.RunSplit(t, j.work, nil, "token", "create", "--access", acc, "--name", "bad", "--allow", "cli.airgap.invalid/terraform/x", "--out", filepath.Join(j.work, "bad.token")); code == 0 || !strings.Contains(stderr, "release pattern") || !strings.Contains(stderr, "hint:") {
		t.Errorf("a malformed release pattern: exit %d, want refused naming the form with a hint\n%s%s", code, out, stderr)
	}

	s := harness.StartServe(t, j.store, "--access", acc)
	cl := harness.CAFileClient(t, s.CAFile)
	get := func(token, path string) (int, string) {
		t.Helper()
		resp, body := harness.HTTPGet(t, cl, s.Base+path, "Authorization", "Bearer "+token)
		return resp.StatusCode, string(body)
	}
	pageAt := func(token, path string) string {
		t.Helper()
		_, body := harness.HTTPGet(t, cl, s.Base+path, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x:"+token)))
		return string(body)
	}
	page := func(token string) string { return pageAt(token, "ui/releases") }
	tofuZip := "releases/tofu/v1.11.2/tofu_1.11.2_linux_amd64.zip"
	tfZip := "releases/terraform/1.14.3/terraform_1.14.3_linux_amd64.zip"

	// The terraform-only token.
	if code, body := get(tfOnly, "releases/terraform/index.json"); code != 200 || !strings.Contains(body, `"1.14.3"`) {
		t.Errorf("tf-only, terraform index.json: %d\n%s", code, body)
	}
	if code, _ := get(tfOnly, tfZip); code != 200 {
		t.Errorf("tf-only, terraform zip: %d, want 200", code)
	}
	if code, body := get(tfOnly, "releases/tofu/api.json"); code != 200 || strings.TrimSpace(body) != `{"versions":[]}` {
		t.Errorf("tf-only, tofu api.json: %d %s, want 200 {\"versions\":[]} (as with no tofu release held)", code, body)
	}
	for _, p := range []string{tofuZip, "releases/tofu/v1.11.2/tofu_1.11.2_SHA256SUMS", "releases/tofu/publisher-key.asc"} {
		if code, _ := get(tfOnly, p); code != 404 {
			t.Errorf("tf-only, %s: %d, want 404", p, code)
		}
	}
	// The refusal is the answer for a release not held, byte for byte.
	_, denied := get(tfOnly, "releases/tofu/v1.11.2/tofu_1.11.2_linux_amd64.zip")
	_, missing := get(all, "releases/tofu/v9.9.9/tofu_1.11.2_linux_amd64.zip")
	if strings.ReplaceAll(denied, "/v1.11.2/", "/v9.9.9/") != missing {
		t.Errorf("a denied tofu zip is answered\n%s\nand a missing one\n%s", denied, missing)
	}
	if p := page(tfOnly); !strings.Contains(p, `id="terraform-1.14.3"`) || strings.Contains(p, `id="tofu-`) || strings.Contains(p, "tofu_1.11.2") {
		t.Errorf("tf-only's /ui/releases does not list terraform alone:\n%s", p)
	}

	// The catalog's link counts only what the token may see.
	if p := pageAt(tfOnly, ""); !strings.Contains(p, `releases</a> <span class="muted">(2)</span>`) {
		t.Errorf("tf-only's catalog does not count its 2 terraform releases:\n%s", p)
	}
	if p := pageAt(all, ""); !strings.Contains(p, `releases</a> <span class="muted">(3)</span>`) {
		t.Errorf("everything's catalog does not count 3 releases:\n%s", p)
	}

	// A rule with no release pattern admits every release, as before.
	if code, body := get(all, "releases/tofu/api.json"); code != 200 || !strings.Contains(body, `"1.11.2"`) {
		t.Errorf("everything, tofu api.json: %d\n%s", code, body)
	}
	if code, _ := get(all, tofuZip); code != 200 {
		t.Errorf("everything, tofu zip: %d, want 200", code)
	}
	if p := page(all); !strings.Contains(p, `id="terraform-1.14.3"`) || !strings.Contains(p, `id="tofu-1.11.2"`) {
		t.Errorf("everything's /ui/releases does not list both products:\n%s", p)
	}
}
