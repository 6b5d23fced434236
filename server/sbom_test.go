package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/sbom/sbomtest"
)

// The SBOM a principal gets lists only what it may read, and a gate
// report is served only to a principal that may read what it reports on;
// the catalog page links both.
func TestSBOMAndReportsUnderAccess(t *testing.T) {
	signer := bundletest.Key(t, "site")
	dir := t.TempDir()
	set := bundletest.Standard(t, dir, signer)
	set.AddBuildInfo(t, dir)
	set.AddGate(t, dir, dist.Gate{Name: "scan", For: dist.GateProviders, Command: []string{"scan", "{binary}"}, Tool: "scan 1"},
		dist.GateResult{Status: dist.GatePassed}, []byte("random and null: fine\n"))
	set.AddGate(t, dir, dist.Gate{Name: "lint", For: dist.GateModules, Command: []string{"lint", "{dir}"}, Tool: "lint 1"},
		dist.GateResult{Status: dist.GateWaived, ExitCode: 2, Waiver: "known"}, []byte("vpc: two warnings\n"))
	set.SBOM = true
	e := setupAccessSet(t, set, signer, map[string][]string{"tf": {"registry.terraform.io/hashicorp/**"}, "all": {"**"}}, nil)

	resp, body := e.do(t, "/ui/sbom.cdx.json", "tf")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.cyclonedx+json") {
		t.Fatalf("SBOM: %s %s", resp.Status, body)
	}
	sbomtest.Validate(t, body)
	if !bytes.Contains(body, []byte(`"name":"registry.terraform.io/hashicorp/random"`)) ||
		bytes.Contains(body, []byte("registry.opentofu.org/hashicorp/null")) || bytes.Contains(body, []byte("example/vpc")) {
		t.Errorf("the SBOM for a token that may read hashicorp/random only:\n%s", body)
	}
	_, all := e.do(t, "/ui/sbom.cdx.json", "all")
	if !bytes.Contains(all, []byte("registry.opentofu.org/hashicorp/null")) || !bytes.Contains(all, []byte("example/vpc")) {
		t.Errorf("the SBOM for a token that may read everything lacks entries")
	}
	if resp, _ := e.do(t, "/ui/sbom.cdx.json", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the SBOM without a token: %s", resp.Status)
	}

	// The module's report: for "all", not for "tf".
	_, page := e.do(t, "/ui/modules/registry.terraform.io/example/vpc/aws", "all")
	i := bytes.Index(page, []byte(`href="/blobs/sha256/`))
	if i < 0 || !bytes.Contains(page, []byte("lint: waived")) || !bytes.Contains(page, []byte("waived: known")) {
		t.Fatalf("the module page lacks its gate result:\n%s", page)
	}
	link := string(page[i+len(`href="`):])
	link = link[:strings.Index(link, `"`)]
	if resp, b := e.do(t, link, "all"); resp.StatusCode != 200 || string(b) != "vpc: two warnings\n" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("the report for a token that may read the module: %s %q %v", resp.Status, b, resp.Header)
	}
	if resp, _ := e.do(t, link, "tf"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the module's report for a token that may not read it: %s", resp.Status)
	}
}
