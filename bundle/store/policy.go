package store

import (
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// A Policy is one of the site's import-time rules: what the offline side
// demands of a bundle beyond its signature and consistency (for example
// pinned publisher keys, or scanner gates that must have passed). Import runs
// every policy of ImportOptions.Policies, in order, after the bundle has
// been read and checked in full (check.Checker) and before anything is
// committed, after its own rules (CatalogRules: withdrawals, conflicts).
//
// A policy that refuses entries of the bundle says so with out.Refuse (the
// entries, and one error that says what was refused, why and what to do,
// with a "hint:" line) and returns nil: every policy runs, and the import
// then fails with all their refusals at once (RefusedError), leaving the
// store as it was. 'airgap verify --against' runs the same policies over
// the inventory's view of the store (Forecast), so its forecast is the
// import's decision. An error returned is a failure that stops the import
// at once (a store that cannot be read).
//
// Check must not change in.Index or in.Manifest; what a policy wants the
// store to remember (what it accepted, from which bundle, when) it records
// in out, which the commit applies to the new index — only when the import
// commits.
type Policy interface {
	Check(in *PolicyInput, out *PolicyResult) error
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(in *PolicyInput, out *PolicyResult) error

// Check calls f.
func (f PolicyFunc) Check(in *PolicyInput, out *PolicyResult) error { return f(in, out) }

// PolicyInput is what a policy decides on: the verified manifest and the
// checker's report of it, and the store's index as it is before this import.
type PolicyInput struct {
	// Root is the store's directory (read only: blobs the index refers
	// to), or "" in a forecast, where the store is only its inventory.
	Root     string
	Manifest *bundle.Manifest
	Bundle   verify.Digest // the manifest digest
	Signer   verify.Signer // who signed the bundle
	SignedAt time.Time     // when its signature says it was made
	Index    *Index
	Checked  *check.Result
	Now      time.Time
	// History is the store's publisher-key history (History: the index's
	// rows and, for a store that predates pins, the keys its providers
	// were signed by) and Seeded those of them the index does not record
	// yet; Unknown the namespaces whose keys the history does not tell
	// (an inventory printed by an airgap that did not pin).
	History []dist.NamespaceKeys
	Seeded  []dist.NamespaceKeys
	Unknown map[string]bool
	// Approvals are the station approval files that came with the bundle
	// (beside it, or given with --approval), unchecked; Pending is an
	// approval being made ('airgap approve'), counted as if signed.
	Approvals []approval.File
	Pending   *approval.Statement
	// SiteKeys is the import's (or verify's) keyring of site keys: a
	// station key may not be one.
	SiteKeys openpgp.EntityList
	// BlobPath finds a blob of the bundle (staged, or already in the
	// store): verified against the manifest, read only.
	BlobPath func(verify.Digest) (string, bool)
}

// PolicyResult collects what policies record in the new index, the blobs
// they keep, and their refusals. Each addition is a function over the
// index, applied in order at the commit.
type PolicyResult struct {
	edits    []func(*Index)
	refusals []Refusal
	errs     []error
	keep     [][]byte
}

// Refuse records that the import must refuse the bundle: err says what was
// refused, why and what to do (one paragraph, with its "hint:" line,
// wrapping the rule's sentinel error), rs lists every entry it refuses (or
// one Refusal without Kind for the bundle as a whole).
func (r *PolicyResult) Refuse(err error, rs ...Refusal) {
	r.errs = append(r.errs, err)
	r.refusals = append(r.refusals, rs...)
}

// Refusals is every refusal recorded so far.
func (r *PolicyResult) Refusals() []Refusal { return r.refusals }

// Err is nil, or the *RefusedError of every refusal recorded.
func (r *PolicyResult) Err() error {
	if len(r.errs) == 0 {
		return nil
	}
	return &RefusedError{Errs: r.errs, Refusals: r.refusals}
}

// Keep stores data as a blob at the commit (an approval file), and
// returns its digest.
func (r *PolicyResult) Keep(data []byte) verify.Digest {
	r.keep = append(r.keep, data)
	return verify.DigestBytes(data)
}

// Rules of a Refusal: which of the import's rules refused an entry.
const (
	ruleWithdrawn          = "withdrawn"           // the store withdrew the version
	ruleConflict           = "conflict"            // the store serves other bytes under the version
	ruleGate               = "required_gate"       // a gate the store requires has no result
	rulePublisherSignature = "publisher_signature" // require_publisher_signatures: no publisher signed it
	RulePublisherKey       = "publisher_key"       // its publisher key is not accepted for the namespace
	RuleApproval           = "approval"            // not enough station approvals (the bundle as a whole)
)

// Refusal is one entry an import refuses, and why (the same type a
// forecast reports).
type Refusal = report.Refusal

func providerRefusal(rule string, p dist.ProviderVersion, reason string) Refusal {
	return Refusal{Rule: rule, Kind: dist.KindProvider, Address: p.Addr(), Version: p.Version, Reason: reason}
}

func moduleRefusal(rule string, m dist.ModuleVersion, reason string) Refusal {
	return Refusal{Rule: rule, Kind: dist.KindModule, Address: m.Addr(), Version: m.Version, Reason: reason}
}

// RefusedError is an import's refusal: every rule's error (each with its
// hint) and every entry refused. errors.Is finds each rule's sentinel
// (ErrWithdrawn, ErrPublisherKey, …).
type RefusedError struct {
	Errs     []error
	Refusals []Refusal
}

func (e *RefusedError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap gives the rules' errors to errors.Is and errors.As.
func (e *RefusedError) Unwrap() []error { return e.Errs }

// Record adds an edit of the new index, applied only if the import commits.
// An import whose only change is a recorded edit still writes the index.
func (r *PolicyResult) Record(edit func(*Index)) { r.edits = append(r.edits, edit) }

func (r *PolicyResult) empty() bool { return len(r.edits) == 0 }

func (r *PolicyResult) apply(ix *Index) {
	for _, e := range r.edits {
		e(ix)
	}
}
