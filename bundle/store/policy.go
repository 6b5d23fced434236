package store

import (
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/verify"
)

// A Policy is one of the site's import-time rules: what the offline side
// demands of a bundle beyond its signature and consistency (for example
// pinned publisher keys, or scanner gates that must have passed). Import runs
// every policy of ImportOptions.Policies, in order, after the bundle has
// been read and checked in full (bundle.Checker) and before anything is
// committed; the first error refuses the import and leaves the store as it
// was, so the error must say what was refused, why and what to do (a
// "hint:" line).
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
	Root     string // the store's directory (read only: blobs the index refers to)
	Manifest *bundle.Manifest
	Bundle   verify.Digest // the manifest digest
	Signer   verify.Signer // who signed the bundle
	Index    *Index
	Checked  *bundle.CheckReport
	Now      time.Time
	// BlobPath finds a blob of the bundle (staged, or already in the
	// store): verified against the manifest, read only.
	BlobPath func(verify.Digest) (string, bool)
}

// PolicyResult collects what policies record in the new index. Each
// addition is a function over the index, applied in order at the commit.
type PolicyResult struct {
	edits []func(*Index)
}

// Record adds an edit of the new index, applied only if the import commits.
// An import whose only change is a recorded edit still writes the index.
func (r *PolicyResult) Record(edit func(*Index)) { r.edits = append(r.edits, edit) }

func (r *PolicyResult) empty() bool { return len(r.edits) == 0 }

func (r *PolicyResult) apply(ix *Index) {
	for _, e := range r.edits {
		e(ix)
	}
}
