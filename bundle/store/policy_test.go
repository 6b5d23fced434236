package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/bundle/store"
)

// A policy sees the checked bundle before the commit: its refusal leaves
// the store byte for byte as it was, and what it records reaches the new
// index only when the import commits (even an import that adds nothing
// else).
func TestImportPolicies(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	before := snapshot(t, root)
	refuse := errors.New("refused by the test policy")
	var saw *store.PolicyInput
	_, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring, Policies: []store.Policy{
		store.PolicyFunc(func(in *store.PolicyInput, out *store.PolicyResult) error {
			saw = in
			out.Record(func(ix *store.Index) { t.Error("an edit of a refused import was applied") })
			return refuse
		}),
	}})
	if !errors.Is(err, refuse) || !strings.Contains(err.Error(), "the store was not changed") {
		t.Fatalf("import with a refusing policy: %v", err)
	}
	if saw == nil || saw.Checked == nil || saw.Checked.Signatures != len(f.manif.Catalog.Providers) || saw.Manifest == nil || saw.Index == nil {
		t.Fatalf("the policy did not see the checked bundle: %+v", saw)
	}
	sameTree(t, before, snapshot(t, root))

	// Recorded edits are applied at the commit, and written even when the
	// bundle adds nothing new.
	tool := func(suffix string) store.Policy {
		return store.PolicyFunc(func(in *store.PolicyInput, out *store.PolicyResult) error {
			out.Record(func(ix *store.Index) { ix.Imports[len(ix.Imports)-1].Tool += suffix })
			return nil
		})
	}
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring, Policies: []store.Policy{tool(" +policy")}}); err != nil {
		t.Fatal(err)
	}
	idx, _ := os.ReadFile(filepath.Join(root, "index.json"))
	if !bytes.Contains(idx, []byte("+policy")) {
		t.Errorf("the policy's edit is not in the index:\n%s", idx)
	}
	if !bytes.Contains(idx, []byte(fmt.Sprintf(`"format": %d`, store.IndexFormat))) {
		t.Errorf("the index was not written in format %d", store.IndexFormat)
	}
	res, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring, Policies: []store.Policy{tool(" +again")}})
	if err != nil {
		t.Fatal(err)
	}
	if idx, _ := os.ReadFile(filepath.Join(root, "index.json")); res.Unchanged || !bytes.Contains(idx, []byte("+again")) {
		t.Errorf("a re-import whose only change is a policy's edit did not write it (unchanged=%v)", res.Unchanged)
	}
}

// TestOnlyUnapprovedReadsRuleApproval: the review's "will accept once
// approved" is decided by the approvals rule's name, which the report
// package spells on its own: the two must not drift apart.
func TestOnlyUnapprovedReadsRuleApproval(t *testing.T) {
	rep := &report.Report{Forecast: &report.Forecast{Verdict: report.VerdictRefuse, Refused: []report.Refusal{{Rule: store.RuleApproval, Reason: "0 of 1"}}}}
	if !rep.OnlyUnapproved() {
		t.Error("a bundle refused only for its approvals is not read as one the import accepts once approved")
	}
	rep.Forecast.Refused = append(rep.Forecast.Refused, report.Refusal{Rule: store.RulePublisherKey, Kind: "provider", Address: "a/b/c", Version: "1.0.0"})
	if rep.OnlyUnapproved() {
		t.Error("a bundle refused for a publisher key too is read as one the import accepts once approved")
	}
}
