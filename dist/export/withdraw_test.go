package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/tfconfig"
)

func TestSpecWithdraw(t *testing.T) {
	parse := func(src string) (*Request, error) {
		p := filepath.Join(t.TempDir(), "airgap.hcl")
		os.WriteFile(p, []byte(src), 0o644)
		return LoadRequest(p, "", nil, false, tfconfig.Inputs{})
	}
	req, err := parse(`
withdraw "hashicorp/aws" {
  versions = "5.61.0, 5.61.1"
  reason   = "CVE-2099-0001"
}
withdraw "example/vpc/aws" {
  module   = true
  versions = "1.0.0"
  reason   = "pulled"
}
reinstate "registry.example.com/acme/thing" {
  versions = "=2.0.0"
  reason   = "rebuilt"
}
`)
	if err != nil {
		t.Fatalf("a withdrawal-only manifest was refused: %v", err)
	}
	want := []dist.Withdrawal{
		{Kind: "provider", Addr: "registry.terraform.io/hashicorp/aws", Versions: []string{"5.61.0", "5.61.1"}, Reason: "CVE-2099-0001"},
		{Kind: "module", Addr: "registry.terraform.io/example/vpc/aws", Versions: []string{"1.0.0"}, Reason: "pulled"},
	}
	if len(req.Withdraw) != 2 || req.Withdraw[0].Addr != want[0].Addr || strings.Join(req.Withdraw[0].Versions, ",") != "5.61.0,5.61.1" ||
		req.Withdraw[1].Kind != "module" || req.Withdraw[1].Addr != want[1].Addr {
		t.Errorf("withdraw = %+v", req.Withdraw)
	}
	if len(req.Reinstate) != 1 || req.Reinstate[0].Addr != "registry.example.com/acme/thing" || req.Reinstate[0].Versions[0] != "2.0.0" {
		t.Errorf("reinstate = %+v", req.Reinstate)
	}
	for name, tc := range map[string]struct{ src, want string }{
		"no reason":    {`withdraw "hashicorp/aws" { versions = "5.61.0" }`, `"reason" is required`},
		"blank reason": {`withdraw "hashicorp/aws" { versions = "5.61.0"  reason = "\t" }`, "a reason is required"},
		"constraint":   {`withdraw "hashicorp/aws" { versions = ">= 5.0"  reason = "x" }`, "not an exact version"},
		"no versions":  {`withdraw "hashicorp/aws" { versions = ""  reason = "x" }`, "no versions"},
		"module shape": {`withdraw "a/b/c/d" { versions = "1.0.0"  reason = "x" }`, "module = true"},
		"not a module": {`withdraw "git::https://x/y" { module = true  versions = "1.0.0"  reason = "x" }`, "not a registry module"},
		"both ways":    {"withdraw \"hashicorp/aws\" { versions = \"1.0.0\"  reason = \"x\" }\nreinstate \"hashicorp/aws\" { versions = \"1.0.0\"  reason = \"y\" }", "both withdrawn and reinstated"},
		"long reason":  {`withdraw "hashicorp/aws" { versions = "1.0.0"  reason = "` + strings.Repeat("x", 2000) + `" }`, "at most 1024 bytes"},
		"unknown attr": {`withdraw "hashicorp/aws" { version = "1.0.0"  reason = "x" }`, "versions"},
	} {
		// HCL's one-line blocks hold one attribute: one per line here.
		src := strings.NewReplacer("{ ", "{\n", "  ", "\n", " }", "\n}").Replace(tc.src)
		if _, err := parse(src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// TestPlanListsWithdrawals: the dry run is the plan, withdrawals included
// (the text and --json alike), with the reasons escaped.
func TestPlanListsWithdrawals(t *testing.T) {
	r := &Result{Manifest: &bundle.Manifest{
		Withdraw:  []dist.Withdrawal{{Kind: "provider", Addr: "registry.terraform.io/hashicorp/aws", Versions: []string{"5.61.0"}, Reason: "CVE\x1b[2J"}},
		Reinstate: []dist.Withdrawal{{Kind: "module", Addr: "registry.terraform.io/example/vpc/aws", Versions: []string{"1.0.0"}, Reason: "rebuilt"}},
	}}
	s := r.Summarize(true, 0)
	if len(s.Withdraw) != 1 || len(s.Reinstate) != 1 {
		t.Fatalf("summary withdraw %v reinstate %v", s.Withdraw, s.Reinstate)
	}
	text := s.Text()
	for _, want := range []string{"withdraw provider registry.terraform.io/hashicorp/aws 5.61.0: CVE\\x1b[2J", "reinstate module registry.terraform.io/example/vpc/aws 1.0.0: rebuilt"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("a reason reached the plan raw:\n%s", text)
	}
}
