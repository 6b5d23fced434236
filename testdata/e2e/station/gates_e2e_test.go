package station

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/dist/sbom/sbomtest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// A module with a known misconfiguration: a security group open to the
// world on SSH (trivy's AWS-0107).
const openSecurityGroup = `resource "aws_security_group" "open" {
  name        = "open"
  description = "SSH from anywhere"
  ingress {
    description = "ssh"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}
`

const cleanModule = `variable "name" {
  type    = string
  default = "x"
}
output "name" {
  value = var.name
}
`

// vulnDB writes a Go vulnerability database (OSV JSON, the layout
// govulncheck reads from -db file:///...) with one entry that flags
// google.golang.org/grpc's NewServer, which the fixture provider really
// links and calls (tf5server.Serve), at every version.
func vulnDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"index/db.json":      `{"modified":"2026-11-01T00:00:00Z"}`,
		"index/modules.json": `[{"path":"google.golang.org/grpc","vulns":[{"id":"GO-2099-0001","modified":"2026-11-01T00:00:00Z"}]}]`,
		"index/vulns.json":   `[{"id":"GO-2099-0001","modified":"2026-11-01T00:00:00Z","aliases":["CVE-2099-0001"]}]`,
		"ID/GO-2099-0001.json": `{"schema_version":"1.3.1","id":"GO-2099-0001","modified":"2026-11-01T00:00:00Z","published":"2026-11-01T00:00:00Z",` +
			`"aliases":["CVE-2099-0001"],"summary":"Test vulnerability in gRPC servers","details":"Invented by the airgap tests.",` +
			`"affected":[{"package":{"name":"google.golang.org/grpc","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}],` +
			`"ecosystem_specific":{"imports":[{"path":"google.golang.org/grpc","symbols":["NewServer"]}]}}]}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	return dir
}

// gatesManifest is the export manifest of the gate tests: the fixture
// provider (a real Go plugin), a clean module and one open to the world,
// the gates, and the given waivers.
func gatesManifest(trivy, govulncheck, db string, withVuln bool, waivers string) string {
	plat := runtime.GOOS + "_" + runtime.GOARCH
	s := fmt.Sprintf(`platforms = [%q]
provider "example/fixture" {
  versions = "1.0.0"
}
module "example/clean/aws" {
  versions = "1.0.0"
}
module "example/open/aws" {
  versions = "1.0.0"
}
gate "trivy" {
  for     = "modules"
  command = [%q, "config", "--skip-check-update", "--format", "sarif", "--output", "{report}", "--exit-code", "1", "{dir}"]
}
`, plat, trivy)
	if withVuln {
		s += fmt.Sprintf(`gate "govulncheck" {
  for        = "providers"
  command    = [%q, "-mode=binary", "-db", "file://%s", "-format", "sarif", "{binary}"]
  version    = [%q, "-db", "file://%s", "-version"]
  fail_level = "error"
}
`, govulncheck, db, govulncheck, db)
	}
	return s + waivers
}

const (
	waiveTrivy = `waive "trivy" {
  for    = "example/open/aws@1.0.0"
  reason = "AWS-0107 accepted by the network team (bastion module)"
}
`
	waiveVuln = `waive "govulncheck" {
  for    = "example/fixture@1.0.0"
  reason = "GO-2099-0001 does not apply: the plugin serves only on a local socket"
}
`
)

// TestGatesAndSBOM: real trivy over modules and real govulncheck over the
// fixture provider's plugin, through the real binary on both sides: a
// failing module and a vulnerable plugin fail the export, waivers let them
// through with their reasons shown in verify, inventory and the catalog
// page; the SBOM is in the bundle, checked and written by verify and
// inventory and served, valid CycloneDX 1.6; import --require-gate and
// import.hcl refuse a bundle exported without the gate; the same inputs
// give the same bundle.
func TestGatesAndSBOM(t *testing.T) {
	t.Parallel()
	trivy, govulncheck, db := trivyBin(t), govulncheckBin(t), vulnDB(t)
	in := registrytest.New(t)
	in.ProviderBinary = registrytest.BuildFixtureProvider(t, t.TempDir())
	in.AddProvider(t, "registry.terraform.io", "example", "fixture", "1.0.0", []string{runtime.GOOS + "_" + runtime.GOARCH}, 0)
	in.AddModule("registry.terraform.io", "example", "clean", "aws", "1.0.0", in.AddArchive(t, "clean-1.0.0.tar.gz", map[string]string{"main.tf": cleanModule}))
	in.AddModule("registry.terraform.io", "example", "open", "aws", "1.0.0", in.AddArchive(t, "open-1.0.0.tar.gz", map[string]string{"main.tf": openSecurityGroup}))
	work := t.TempDir()
	env := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	export := func(name string, manifest string) (string, error) {
		os.WriteFile(filepath.Join(work, name+".hcl"), []byte(manifest), 0o644)
		return harness.CmdRun(t, work, env, harness.Bin, "export", "--manifest", name+".hcl", "--sign-key", "k/site.key.asc", "--out", name+".bundle", "--cache", "cache")
	}

	// 1. trivy fails the module open to the world: the export fails naming
	// the entry, the gate and the report, which stays on disk.
	out, err := export("fail", gatesManifest(trivy, govulncheck, db, false, ""))
	report := filepath.Join(work, "fail.bundle.gates", "trivy", "module_registry.terraform.io_example_open_aws_1.0.0.report")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "gate trivy failed on module registry.terraform.io/example/open/aws 1.0.0: exit status 1, 1 error") || !strings.Contains(out, report) {
		t.Fatalf("a module open to the world: %d\n%s", harness.ExitCode(err), out)
	}
	t.Logf("the failing module:\n%s", out)
	// The hint's waive block parses and names the entry.
	if blocks := harness.HCLBlocks(t, out); len(blocks) != 1 || !strings.Contains(blocks[0], `waive "trivy"`) || !strings.Contains(blocks[0], `"registry.terraform.io/example/open/aws@1.0.0"`) {
		t.Errorf("the failed export's hint has no waive block for the entry: %q", blocks)
	} else {
		harness.ParseHCL(t, "waive", blocks[0])
	}
	if b, _ := os.ReadFile(report); !bytes.Contains(b, []byte(`"ruleId": "AWS-0107"`)) {
		t.Errorf("the kept report is not trivy's SARIF naming AWS-0107:\n%.500s", b)
	}
	if _, err := os.Stat(filepath.Join(work, "fail.bundle")); err == nil {
		t.Error("a failed export left a bundle")
	}

	// 2. govulncheck fails the plugin that links the flagged gRPC.
	out, err = export("vuln", gatesManifest(trivy, govulncheck, db, true, waiveTrivy))
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "gate govulncheck failed on provider registry.terraform.io/example/fixture 1.0.0") || !strings.Contains(out, "1 error") {
		t.Fatalf("a plugin with a known vulnerability: %d\n%s", harness.ExitCode(err), out)
	}

	// 3. Waived, both pass, their reasons shown; twice: the same bundle.
	full := gatesManifest(trivy, govulncheck, db, true, waiveTrivy+waiveVuln)
	out = mustRunOK(t, func() (string, error) { return export("full", full) })
	t.Logf("the waived export:\n%s", out)
	for _, want := range []string{"gate trivy (modules; Version: dev): 1 passed, 1 waived",
		"waived: module registry.terraform.io/example/open/aws 1.0.0: trivy: waived (exit 1, 1 error), waived: AWS-0107 accepted by the network team (bastion module)",
		"gate govulncheck (providers; Go: go1.", "; Scanner: govulncheck@v1.9.0; DB: file://", "SBOM (CycloneDX 1.6): sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the export's summary lacks %q", want)
		}
	}
	// Again, as JSON: the same bundle, and the summary keeps the JSON
	// convention (gates with their waived entries). The manifest keeps its
	// name (in another directory): the bundle records where each entry was
	// asked for, as FILE:LINE relative to the manifest's directory.
	os.MkdirAll(filepath.Join(work, "again"), 0o755)
	os.WriteFile(filepath.Join(work, "again", "full.hcl"), []byte(full), 0o644)
	stdout, stderr, code := harness.RunSplit(t, work, env, "export", "--manifest", "again/full.hcl", "--sign-key", "k/site.key.asc", "--out", "again.bundle", "--cache", "cache", "--json")
	if code != 0 {
		t.Fatalf("export --json: %d\n%s", code, stderr)
	}
	if doc := harness.CheckJSONDoc(t, "export --json (gates)", stdout, true); doc != nil {
		if gs, _ := doc["gates"].([]any); len(gs) != 2 {
			t.Errorf("export --json: gates %v", doc["gates"])
		}
	}
	if a, b := mustRead(t, filepath.Join(work, "full.bundle")), mustRead(t, filepath.Join(work, "again.bundle")); !bytes.Equal(a, b) {
		t.Error("the same inputs and scanner output gave two different bundles")
	}
	mustRunOK(t, func() (string, error) {
		return export("nogate", gatesManifest(trivy, govulncheck, db, false, waiveTrivy))
	})

	// 4. The transfer station: every result in its entry's section, the
	// waivers first as attention items; the SBOM, checked against the
	// bytes and written.
	platform := runtime.GOOS + "_" + runtime.GOARCH
	out = harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "--sbom", "full.cdx.json", "full.bundle")
	for _, want := range []string{"OK, NEEDS ATTENTION (",
		"! gate waived: module registry.terraform.io/example/open/aws 1.0.0 failed gate trivy (exit 1, 1 error), waived: \"AWS-0107 accepted",
		"! gate waived: provider registry.terraform.io/example/fixture 1.0.0 failed gate govulncheck (" + platform + ": exit 0, 1 error), waived: \"GO-2099-0001 does not apply",
		"  registry.terraform.io/example/clean/aws 1.0.0\n    source  ",
		"gate trivy: passed (exit 0, no findings); report ",
		"gate trivy: waived (exit 1, 1 error), waived: AWS-0107 accepted",
		"gate govulncheck on " + platform + ": waived (exit 0, 1 error), waived: GO-2099-0001 does not apply",
		"\nGates (run by the export", "  govulncheck over every provider (Go: go1.",
		"identical to the signed one", "written to full.cdx.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify lacks %q:\n%s", want, out)
		}
	}
	// Each waived item ends with the command that shows its report; it works.
	for _, show := range []string{"full.bundle report registry.terraform.io/example/open/aws@1.0.0 trivy",
		"full.bundle report registry.terraform.io/example/fixture@1.0.0 govulncheck"} {
		if !strings.Contains(out, "before you let it in: airgap show --keyring KEYRING "+show+"\n") {
			t.Errorf("a waived item does not print 'airgap show ... %s':\n%s", show, out)
			continue
		}
		if r := harness.MustRun(t, work, nil, harness.Bin, append([]string{"show", "--keyring", "k/site.pub.asc"}, strings.Fields(show)...)...); !strings.Contains(r, "error") {
			t.Errorf("airgap show %s does not print the report:\n%s", show, r)
		}
	}
	if i, j := strings.Index(out, "Needs attention:"), strings.Index(out, "\nProviders ("); i < 0 || j < i {
		t.Errorf("verify does not show what needs attention before the entries:\n%s", out)
	}
	sb := mustRead(t, filepath.Join(work, "full.cdx.json"))
	sbomtest.Validate(t, sb)
	for _, want := range []string{`"purl":"pkg:terraform/example/fixture@1.0.0?arch=`, `"purl":"pkg:golang/google.golang.org/grpc@v`,
		`"purl":"pkg:golang/github.com/hashicorp/terraform-plugin-go@v`, `"purl":"pkg:golang/stdlib@`, `"purl":"pkg:terraform/example/open/aws@1.0.0#modules"`} {
		if !bytes.Contains(sb, []byte(want)) {
			t.Errorf("the SBOM lacks %s", want)
		}
	}
	type gateJSON struct {
		Platform string `json:"platform"`
		Gate     string `json:"gate"`
		Status   string `json:"status"`
		Waiver   string `json:"waiver"`
		Report   string `json:"report"`
		Findings *struct {
			Error int `json:"error"`
		} `json:"findings"`
	}
	var rep struct {
		OK        bool   `json:"ok"`
		Status    string `json:"status"`
		SBOM      string `json:"sbom"`
		Attention []struct {
			Kind, Subject string
		} `json:"attention"`
		Gates []struct {
			Name string `json:"name"`
			For  string `json:"for"`
		} `json:"gates"`
		Providers []struct {
			Address string     `json:"address"`
			Gates   []gateJSON `json:"gates"`
		} `json:"providers"`
		Modules []struct {
			Address string     `json:"address"`
			Gates   []gateJSON `json:"gates"`
		} `json:"modules"`
		Checks struct {
			SBOM        string `json:"sbom"`
			GateReports int    `json:"gate_reports"`
			BuildInfo   int    `json:"build_info"`
		} `json:"checks"`
	}
	stdout, stderr, code = harness.RunSplit(t, work, nil, "verify", "--keyring", "k/site.pub.asc", "--json", "full.bundle")
	harness.CheckJSONDoc(t, "verify --json (gates)", stdout, true)
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || !rep.OK || rep.Status != "needs_attention" {
		t.Fatalf("verify --json: %d %v %+v\n%s", code, err, rep, stderr)
	}
	results := map[string]gateJSON{}
	for _, p := range rep.Providers {
		for _, g := range p.Gates {
			results[p.Address+" "+g.Platform+" "+g.Gate] = g
		}
	}
	for _, m := range rep.Modules {
		for _, g := range m.Gates {
			results[m.Address+" "+g.Gate] = g
		}
	}
	waived := 0
	for _, a := range rep.Attention {
		if a.Kind == "gate_waived" {
			waived++
		}
	}
	vuln, open, clean := results["registry.terraform.io/example/fixture "+platform+" govulncheck"], results["registry.terraform.io/example/open/aws trivy"], results["registry.terraform.io/example/clean/aws trivy"]
	switch {
	case len(results) != 3 || len(rep.Gates) != 2 || waived != 2:
		t.Errorf("verify --json: %d results in the entries, %d gates, %d gate_waived attention items; want 3, 2, 2: %+v", len(results), len(rep.Gates), waived, rep)
	case vuln.Status != "waived" || !strings.HasPrefix(vuln.Waiver, "GO-2099-0001") || vuln.Findings == nil || vuln.Findings.Error != 1 || !strings.HasPrefix(vuln.Report, "sha256:"):
		t.Errorf("verify --json: the provider's govulncheck result: %+v", vuln)
	case open.Status != "waived" || clean.Status != "passed" || clean.Waiver != "":
		t.Errorf("verify --json: the modules' trivy results: %+v %+v", open, clean)
	case !strings.HasPrefix(rep.SBOM, "sha256:") || rep.Checks.SBOM != "checked" || rep.Checks.GateReports != 3 || rep.Checks.BuildInfo != 1:
		t.Errorf("verify --json: sbom %q, checks %+v", rep.SBOM, rep.Checks)
	}
	// A failed verify leaves no SBOM file.
	if out, err := harness.CmdRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "--sbom", "none.cdx.json", "nosuch.bundle"); err == nil {
		t.Errorf("verify of a missing bundle: %s", out)
	}
	if _, err := os.Stat(filepath.Join(work, "none.cdx.json")); err == nil {
		t.Error("a failed verify left an SBOM file")
	}

	// 5. The offline side insists: a bundle exported without govulncheck
	// is refused, naming the entry, by the flag and by the store's
	// import.hcl; nothing is imported.
	storeDir := filepath.Join(work, "store")
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "--require-gate", "providers:govulncheck", "nogate.bundle")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "govulncheck: provider registry.terraform.io/example/fixture 1.0.0") || !strings.Contains(out, "the store was not changed") {
		t.Errorf("import --require-gate of a bundle without the gate: %d\n%s", harness.ExitCode(err), out)
	}
	// (The refused import left no store behind: the operator makes the
	// directory to write its import.hcl.)
	if _, err := os.Stat(storeDir); err == nil {
		t.Error("a refused import into a new store left its directory")
	}
	os.MkdirAll(storeDir, 0o755)
	if err := os.WriteFile(filepath.Join(storeDir, "import.hcl"), []byte("require_gate = [\"modules:trivy\", \"providers:govulncheck\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "nogate.bundle")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "import.hcl") || !strings.Contains(out, "govulncheck: provider") {
		t.Errorf("import.hcl requiring a gate the bundle lacks: %d\n%s", harness.ExitCode(err), out)
	}
	if _, err := os.Stat(filepath.Join(storeDir, "index.json")); err == nil {
		t.Error("a refused import wrote the index")
	}
	if out := harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "full.bundle"); !strings.Contains(out, "required gates, passed or waived on every entry: modules:trivy, providers:govulncheck") {
		t.Errorf("import under import.hcl does not say what it required:\n%s", out)
	}

	// A delta against it carries no package: verify cannot rebuild its SBOM
	// and says so, writing nothing; import checks it from the store's build
	// information.
	os.WriteFile(filepath.Join(work, "delta.hcl"), []byte(full), 0o644)
	harness.MustRun(t, work, env, harness.Bin, "export", "--manifest", "delta.hcl", "--sign-key", "k/site.key.asc", "--out", "delta.bundle", "--cache", "cache", "--since", "full.bundle")
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "--sbom", "delta.cdx.json", "delta.bundle")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "omits packages its SBOM describes") {
		t.Errorf("verify --sbom of a delta: %d\n%s", harness.ExitCode(err), out)
	}
	if _, err := os.Stat(filepath.Join(work, "delta.cdx.json")); err == nil {
		t.Error("verify --sbom of a delta left a file")
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "delta.bundle")

	// 6. inventory: results, waivers, reports; the store's SBOM.
	out = harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", storeDir, "--sbom", "store.cdx.json")
	for _, want := range []string{"import rules (import.hcl): every bundle must carry passing or waived results of: modules:trivy, providers:govulncheck",
		"gate govulncheck: waived (exit 0, 1 error), waived: GO-2099-0001 does not apply", "gate trivy: passed (exit 0, no findings)",
		"report: " + filepath.Join(storeDir, "blobs", "sha256")} {
		if !strings.Contains(out, want) {
			t.Errorf("inventory lacks %q:\n%s", want, out)
		}
	}
	stdout, _, _ = harness.RunSplit(t, work, nil, "inventory", "--store", storeDir, "--json")
	harness.CheckJSONDoc(t, "inventory --json (gates)", stdout, true)
	storeSBOM := mustRead(t, filepath.Join(work, "store.cdx.json"))
	sbomtest.Validate(t, storeSBOM)
	if !bytes.Contains(storeSBOM, []byte(`"pkg:golang/google.golang.org/grpc@v`)) {
		t.Error("the store's SBOM lacks the plugin's Go modules")
	}

	// 7. The catalog page: results with links to the reports, the SBOM.
	srv := harness.StartServe(t, storeDir)
	base := srv.Base
	cl, _, _ := harness.CAClient(t, storeDir)
	page := get(t, cl, base+"ui/providers/registry.terraform.io/example/fixture", "text/html")
	if !strings.Contains(page, "govulncheck: waived") || !strings.Contains(page, "waived: GO-2099-0001 does not apply") {
		t.Errorf("the provider page does not show the waived result:\n%s", page)
	}
	i := strings.Index(page, `href="/blobs/sha256/`)
	if i < 0 {
		t.Fatal("the provider page has no report link")
	}
	link := page[i+len(`href="/`):]
	link = link[:strings.Index(link, `"`)]
	if rpt := get(t, cl, base+link, "text/plain; charset=utf-8"); !strings.Contains(rpt, "GO-2099-0001") {
		t.Errorf("the report link serves:\n%.300s", rpt)
	}
	mod := get(t, cl, base+"ui/modules/registry.terraform.io/example/open/aws", "text/html")
	if !strings.Contains(mod, "trivy: waived") || !strings.Contains(mod, "AWS-0107 accepted by the network team") {
		t.Errorf("the module page does not show the waiver:\n%s", mod)
	}
	if idx := get(t, cl, base, "text/html"); !strings.Contains(idx, `href="/ui/sbom.cdx.json"`) || !strings.Contains(idx, "trivy: waived") {
		t.Errorf("the catalog page lacks the SBOM link or the gate badges")
	}
	served := get(t, cl, base+"ui/sbom.cdx.json", "application/vnd.cyclonedx+json; version=1.6")
	sbomtest.Validate(t, []byte(served))
	if !strings.Contains(served, `"name":"registry.terraform.io/example/fixture"`) {
		t.Error("the served SBOM lacks the provider")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRunOK(t *testing.T, f func() (string, error)) string {
	t.Helper()
	out, err := f()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// get fetches url and checks its status and content type.
func get(t *testing.T, cl *http.Client, url, ctype string) string {
	t.Helper()
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
		t.Fatalf("GET %s: %s %s\n%.300s", url, resp.Status, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}

// TestGateHostileScannerCLI attacks the real binary with a scanner that
// hangs (and leaves a child behind) and one that floods its output: each
// is cut off at its bound, with its process group, the export fails saying
// so and leaves no bundle.
func TestGateHostileScannerCLI(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	work := t.TempDir()
	env := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	mark := filepath.Join(work, "child-survived")
	for _, c := range []struct{ name, script, bound, want string }{
		{"hang", "#!/bin/sh\n(sleep 6; touch " + mark + ") &\nsleep 30\n", `timeout = "2s"`, "cut off after 2s (the gate's timeout)"},
		{"flood", "#!/bin/sh\nwhile :; do echo flood; done\n", `max_output = "1MiB"`, "printed more than 1.0 MiB (the gate's max_output)"},
	} {
		sc := filepath.Join(work, c.name+".sh")
		os.WriteFile(sc, []byte(c.script), 0o755)
		manifest := fmt.Sprintf("platforms = [\"linux_amd64\"]\nmodule \"example/subnet/aws\" {\n  versions = \"2.1.0\"\n}\ngate %q {\n  for     = \"modules\"\n  command = [%q, \"{dir}\"]\n  version = [\"/bin/echo\", \"1\"]\n  %s\n}\n",
			c.name, sc, c.bound)
		os.WriteFile(filepath.Join(work, c.name+".hcl"), []byte(manifest), 0o644)
		out, err := harness.CmdRun(t, work, env, harness.Bin, "export", "--manifest", c.name+".hcl", "--sign-key", "k/site.key.asc", "--out", c.name+".bundle", "--cache", "cache")
		if harness.ExitCode(err) != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "nothing was written") {
			t.Errorf("%s: %d\n%s", c.name, harness.ExitCode(err), out)
		}
		if _, err := os.Stat(filepath.Join(work, c.name+".bundle")); err == nil {
			t.Errorf("%s: a bundle was left", c.name)
		}
	}
	time.Sleep(7 * time.Second) // past the child's own sleep (6 s from its start)
	if _, err := os.Stat(mark); err == nil {
		t.Error("the hung scanner's child survived the cut-off")
	}
}
