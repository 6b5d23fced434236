package export_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
)

// scanner writes an executable script standing in for a scanner; the gate
// runs it as a program (airgap never runs a shell itself).
func scanner(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// gateSpec is a manifest exporting one module and one provider with the
// given gate blocks.
func gateSpec(gates string) string {
	return `platforms = ["linux_amd64"]
module "example/subnet/aws" {
  versions = "2.1.0"
}
provider "hashicorp/null" {
  versions = "3.2.2"
}
` + gates
}

// runGated exports spec with gates, reports in dir.
func runGated(t *testing.T, in *registrytest.Internet, spec, reports string) (*export.Result, error) {
	t.Helper()
	req, err := export.ParseSpec(writeSpec(t, spec), nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := options(t, in, filepath.Join(t.TempDir(), "cache"), nil)
	opt.GateReports, opt.GateJobs = reports, 2
	return export.Run(context.Background(), req, opt)
}

// A gate sees the unpacked module and plugin, gets the placeholders as
// arguments (never interpreted by a shell), runs in a clean environment,
// and its results and reports reach the manifest.
func TestGatesRunAndRecord(t *testing.T) {
	in := registrytest.World(t)
	t.Setenv("AIRGAP_PASSPHRASE", "s3cret-passphrase")
	t.Setenv("TF_TOKEN_registry_example_com", "s3cret-token")
	t.Setenv("GATE_PASSED", "through")
	pwned := filepath.Join(t.TempDir(), "pwned")
	mod := scanner(t, "modscan", `report=$1; shift
{ echo "args:"; for a in "$@"; do echo "[$a]"; done
  echo "env:"; env | sort
  echo "tree:"; ls "$1"
} > "$report"
exit 0
`)
	prov := scanner(t, "provscan", `test -f "$1" && head -c 9 "$1" | od -c | head -1
echo "address=$2 version=$3 platform=$4"
`)
	spec := gateSpec(`gate "modscan" {
  for     = "modules"
  command = ["` + mod + `", "{report}", "{dir}", "{address}@{version}", "$(touch ` + pwned + `)", "; touch ` + pwned + `"]
  version = ["printf", "%s\\n\\n%s\\n", "modscan 1.0", "  build 7"]
  env     = ["GATE_PASSED", "NOT_SET_ANYWHERE"]
}
gate "provscan" {
  for     = "providers"
  command = ["` + prov + `", "{binary}", "{address}", "{version}", "{platform}"]
  version = ["printf", "provscan \\033[31m2.0\\n"]
}
`)
	reports := filepath.Join(t.TempDir(), "reports")
	res, err := runGated(t, in, spec, reports)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("an argument was run through a shell")
	}
	m := res.Manifest
	if len(m.Gates) != 2 || m.Gates[0].Name != "modscan" || m.Gates[0].Tool != "modscan 1.0; build 7" || m.Gates[1].Tool != `provscan \x1b[31m2.0` {
		t.Fatalf("gates in the manifest: %+v", m.Gates)
	}
	mr := m.Catalog.Modules[0].Gates
	if len(mr) != 1 || mr[0].Status != dist.GatePassed || mr[0].Findings != nil || mr[0].Report == "" {
		t.Fatalf("module result: %+v", mr)
	}
	report, err := os.ReadFile(res.Files[mr[0].Report])
	if err != nil {
		t.Fatal(err)
	}
	r := string(report)
	for _, want := range []string{"[registry.terraform.io/example/subnet/aws@2.1.0]", "[$(touch " + pwned + ")]", "[; touch " + pwned + "]", "main.tf", "GATE_PASSED=through"} {
		if !strings.Contains(r, want) {
			t.Errorf("the module scanner's report lacks %q:\n%s", want, r)
		}
	}
	for _, secret := range []string{"s3cret", "HTTPS_PROXY", "SSL_CERT_FILE", "NOT_SET_ANYWHERE"} {
		if strings.Contains(r, secret) {
			t.Errorf("the gate's environment holds %q:\n%s", secret, r)
		}
	}
	if !strings.Contains(r, "HOME="+filepath.Join(optionsCache(res), "gates")) && !strings.Contains(r, "/gates/modscan/") {
		t.Errorf("HOME is not the run's own directory:\n%s", r)
	}
	// The report is kept on disk for the user, next to the tool's output.
	kept, _ := os.ReadFile(filepath.Join(reports, "modscan", "module_registry.terraform.io_example_subnet_aws_2.1.0.report"))
	if string(kept) != r {
		t.Errorf("the kept report differs from the bundle's")
	}
	pr := m.Catalog.Providers[0].Packages[0].Gates
	if len(pr) != 1 || pr[0].Status != dist.GatePassed {
		t.Fatalf("provider result: %+v", pr)
	}
	out, _ := os.ReadFile(res.Files[pr[0].Report])
	if !strings.Contains(string(out), "address=registry.terraform.io/hashicorp/null version=3.2.2 platform=linux_amd64") || !strings.Contains(string(out), "#   !   /") {
		t.Errorf("the provider scanner did not get the unpacked plugin and placeholders (its standard output is the report):\n%s", out)
	}
	// The work trees are gone.
	if ents, _ := filepath.Glob(filepath.Join(optionsCache(res), "gates", "*", "*")); len(ents) > 0 {
		for _, e := range ents {
			if !strings.HasSuffix(e, ".lock") {
				t.Errorf("a gate's work tree was left: %s", e)
			}
		}
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := check.Manifest(m); err != nil {
		t.Fatalf("the export's own manifest fails the consistency check: %v", err)
	}
}

// optionsCache finds the cache directory of a result from its files.
func optionsCache(res *export.Result) string {
	for _, p := range res.Files {
		return filepath.Dir(filepath.Dir(filepath.Dir(p)))
	}
	return ""
}

// A failing gate fails the export, naming entry, gate and report, which
// stays on disk; a waiver lets it through with its reason; SARIF findings
// are counted and fail_level applies to them.
func TestGateFailsAndWaiver(t *testing.T) {
	in := registrytest.World(t)
	sarif := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"ruleId":"R1","level":"error","message":{"text":"bad"}},{"ruleId":"R2","message":{"text":"meh"}}]}]}`
	sc := scanner(t, "sc", "printf '%s' '"+sarif+"' > \"$1\"\nexit 0\n")
	gate := `gate "sc" {
  for        = "modules"
  command    = ["` + sc + `", "{report}", "{dir}"]
  version    = ["/bin/echo", "sc 1"]
  fail_level = "error"
}
`
	reports := filepath.Join(t.TempDir(), "reports")
	_, err := runGated(t, in, gateSpec(gate), reports)
	if err == nil {
		t.Fatal("an export whose module fails a gate succeeded")
	}
	report := filepath.Join(reports, "sc", "module_registry.terraform.io_example_subnet_aws_2.1.0.report")
	for _, want := range []string{"gate sc failed on module registry.terraform.io/example/subnet/aws 2.1.0", "1 error, 1 warning", report, "waive", "nothing was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the failure does not say %q:\n%v", want, err)
		}
	}
	if b, _ := os.ReadFile(report); string(b) != sarif {
		t.Errorf("the failing report is not kept: %q", b)
	}
	res, err := runGated(t, in, gateSpec(gate+`waive "sc" {
  for    = "example/subnet/aws@2.1.0"
  reason = "R1 accepted by the network team"
}
waive "sc" {
  for    = "example/subnet/aws@9.9.9"
  reason = "stale"
}
`), reports)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Manifest.Catalog.Modules[0].Gates[0]
	if r.Status != dist.GateWaived || r.Waiver != "R1 accepted by the network team" || r.Findings == nil || r.Findings.Error != 1 || r.Findings.Warning != 1 {
		t.Errorf("waived result: %+v", r)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "9.9.9") {
		t.Errorf("a waiver that matched nothing was not warned about: %v", res.Warnings)
	}
	sum := res.Summarize(false, time.Second)
	if txt := sum.Text(); !strings.Contains(txt, "gate sc (modules; sc 1): 0 passed, 1 waived") || !strings.Contains(txt, "waived: R1 accepted by the network team") {
		t.Errorf("summary: %s", txt)
	}
}

// Hostile scanners: one that hangs, one that prints without end, one whose
// report grows without end, one that exits non-zero without its report, one
// killed by a signal. Each is cut off within its bound and fails the export
// clearly — a waiver does not cover a tool that did not finish.
func TestGateHostileScanners(t *testing.T) {
	in := registrytest.World(t)
	mark := filepath.Join(t.TempDir(), "child-alive")
	for _, c := range []struct {
		name, body, extra, want string
		within                  time.Duration
	}{
		{"hang", "(sleep 600; touch " + mark + ") &\nsleep 600\n", `timeout = "2s"`, "cut off after 2s", 30 * time.Second},
		{"flood", "yes airgap\n", `max_output = "1MiB"`, "printed more than 1.0 MiB", 60 * time.Second},
		{"bigreport", "head -c 3000000 /dev/zero > \"$1\"\nsleep 600\n", `max_output = "1MiB"`, "report grew past 1.0 MiB", 30 * time.Second},
		{"noreport", "echo oops >&2\nexit 3\n", "", "exited with status 3 without writing its report", 30 * time.Second},
		{"killed", "kill -9 $$\n", "", "killed by signal: killed", 30 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := scanner(t, c.name, c.body)
			gate := `gate "h" {
  for     = "modules"
  command = ["` + sc + `", "{report}", "{dir}"]
  version = ["/bin/echo", "h 1"]
  ` + c.extra + `
}
waive "h" {
  for    = "example/subnet/aws@2.1.0"
  reason = "does not cover a broken tool"
}
`
			start := time.Now()
			_, err := runGated(t, in, gateSpec(gate), filepath.Join(t.TempDir(), "reports"))
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "no waiver covers it") {
				t.Fatalf("want an error saying %q, got %v", c.want, err)
			}
			if took > c.within {
				t.Errorf("took %s", took)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	if out, _ := exec.Command("pgrep", "-f", "sleep 600").Output(); len(out) > 0 {
		t.Errorf("the hung scanner's children survive: pids %s", out)
	}
}

// The gate and waive blocks are checked when the manifest is read, errors
// at file:line.
func TestGateSpecErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{`gate "t" {
  for = "things"
  command = ["true", "{dir}"]
}`, `for = "things"`},
		{`gate "t" {
  for = "modules"
  command = ["true"]
}`, "never names what to scan"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{binary}"]
}`, "placeholder {binary} is for gates over providers"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dri}"]
}`, "unknown placeholder {dri}"},
		{`gate "t" {
  for = "modules"
  command = ["no-such-scanner-anywhere", "{dir}"]
}`, "is not found"},
		{`gate "T!" {
  for = "modules"
  command = ["true", "{dir}"]
}`, "gate name"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
  timeout = "forever"
}`, "timeout"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
  max_output = "1GiB"
}`, "max_output"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
  env = ["HOME"]
}`, "PATH, HOME and TMPDIR"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
  fail_level = "critical"
}`, "fail_level"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
}
waive "u" {
  for = "example/vpc/aws@1.0.0"
  reason = "x"
}`, `no gate of that name`},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
}
waive "t" {
  for = "hashicorp/aws@1.0.0"
  reason = "x"
}`, "is for modules"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
}
waive "t" {
  for = "example/vpc/aws@1.0.0"
  reason = ""
}`, "a reason is required"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
}
waive "t" {
  for = "example/vpc/aws"
  reason = "x"
}`, "ADDRESS@VERSION"},
		{`gate "t" {
  for = "modules"
  command = ["true", "{dir}"]
  colour = "red"
}`, "colour"},
	} {
		_, err := export.ParseSpec(writeSpec(t, c.spec), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "airgap.hcl:") {
			t.Errorf("%s\nwant an error at file:line saying %q, got %v", c.spec, c.want, err)
		}
		if err != nil && !errors.Is(err, export.ErrManifest) && !strings.Contains(err.Error(), "airgap.hcl:") {
			t.Errorf("error without position: %v", err)
		}
	}
}

// A dry run lists the gates and what they would run over, running none.
func TestGateDryRun(t *testing.T) {
	in := registrytest.World(t)
	mark := filepath.Join(t.TempDir(), "ran")
	sc := scanner(t, "sc", "touch "+mark+"\n")
	req, err := export.ParseSpec(writeSpec(t, gateSpec(`gate "sc" {
  for     = "providers"
  command = ["`+sc+`", "{binary}"]
}
`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := options(t, in, filepath.Join(t.TempDir(), "cache"), nil)
	opt.DryRun = true
	res, err := export.Run(context.Background(), req, opt)
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Summarize(true, time.Second).Text(); !strings.Contains(txt, "gate sc: would run 1 time(s), once per provider package") {
		t.Errorf("dry run: %s", txt)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a dry run ran a gate")
	}
}
