package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Every string a bundle or an inventory brings reaches the terminal
// escaped: none can forge a line of the review or drive the terminal.
func TestReportTextEscapes(t *testing.T) {
	const evil = "x\x1b]0;owned\x07\n  ! forged: all good\u202e"
	now := time.Now().UTC()
	rep := &Report{File: "b" + evil, Bundle: "sha256:" + strings.Repeat("a", 64), Tool: evil, Format: 2,
		Signer: &verify.Signer{KeyID: "K", Fingerprint: "F", Identity: evil}, SignedAt: &now,
		Providers: []ProviderEntry{{Address: "registry.terraform.io/h/" + evil, Version: evil, Trust: dist.TrustPublisher,
			Signature: &check.SignatureFacts{Signer: verify.Signer{Identity: evil, Fingerprint: evil}, Created: now}, KeyStatus: "pinned", KeyNote: evil,
			Platforms: []PackageEntry{{Platform: evil, Filename: evil, SHA256: strings.Repeat("b", 64)}},
			Gates:     []GateEntry{{Platform: evil, GateResult: dist.GateResult{Gate: evil, Tool: evil, Status: evil, Waiver: evil, Report: evil}}}}},
		Modules: []ModuleEntry{{Address: evil, Version: "1.0.0", Source: evil, Commit: evil, SHA256: strings.Repeat("c", 64), Vendored: []VendoredEntry{{File: evil, Module: evil, Source: evil, Path: evil, SHA256: strings.Repeat("d", 64)}},
			Gates: []GateEntry{{GateResult: dist.GateResult{Gate: evil, Tool: evil, Status: dist.GateWaived, Waiver: evil, Findings: &dist.GateFindings{Error: 1}}}}}},
		Gates:         []dist.Gate{{Name: evil, For: evil, Command: []string{evil, evil}, Tool: evil, FailLevel: evil}},
		SBOM:          verify.Digest("sha256:" + strings.Repeat("e", 64)),
		SBOMFile:      evil,
		Withdraw:      []dist.Withdrawal{{Kind: "provider", Addr: evil, Versions: []string{evil}, Reason: evil}},
		PublisherKeys: []NamespaceReview{{Namespace: evil, History: []dist.KeyPin{{Fingerprint: evil, Identity: evil, How: evil}}, InBundle: []BundleKey{{Fingerprint: evil, Identity: evil, Providers: []string{evil}}}}},
		Declared:      []bundle.PublisherKeyDecl{{Namespace: evil, Fingerprint: evil}},
		Against:       &Against{Inventory: evil, Added: []DiffItem{{Kind: evil, Address: evil, Version: evil, Platforms: []string{evil}, Note: evil}}, KeyChanges: []KeyChange{{Namespace: evil, Before: []dist.KeyPin{{Fingerprint: evil, Identity: evil}}, Key: BundleKey{Fingerprint: evil, Identity: evil}}}},
		Checks:        &check.Result{},
	}
	rep.AddAttention(AttentionNewKey, evil, evil)
	rep.waived("module "+evil, evil+"@1.0.0", rep.Modules[0].Gates)
	rep.waived("provider "+evil, evil+"@1.0.0", rep.Providers[0].Gates) // not waived: no item
	rep.Finish(nil)
	if len(rep.Attention) != 2 || rep.Attention[1].Kind != AttentionGateWaived {
		t.Errorf("attention: %+v", rep.Attention)
	}
	text := rep.Text()
	if strings.ContainsAny(text, "\x1b\x07\u202e") || strings.Contains(text, "\n  ! forged") {
		t.Errorf("raw control characters or a forged line in the review:\n%s", text)
	}
	b, err := json.Marshal(rep)
	if err != nil || strings.Contains(string(b), "null") {
		t.Errorf("JSON: %v %s", err, b)
	}
}

// A failed verification still prints a whole document: ok false, the
// error, lists empty, never null.
func TestReportFailedJSON(t *testing.T) {
	rep := &Report{File: "x.bundle"}
	rep.Finish(bundle.ErrNotBundle)
	b, _ := json.Marshal(rep)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["ok"] != false || m["status"] != StatusFailed || m["error"] == "" || strings.Contains(string(b), "null") {
		t.Errorf("failed report: %s", b)
	}
}
