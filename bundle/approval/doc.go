// Package approval is the transfer station's signed approval of one bundle
// (the two-person rule): 'airgap approve' writes it (Sign), and an import
// into a store whose import.hcl requires approvals checks it (bundle/store's
// approvals rule); the consistency check reads those a chain of custody
// carries (bundle/check).
//
// An approval file is a statement (canonical JSON: Encode) and an armored
// detached OpenPGP signature of exactly its bytes by the station key. It
// names the bundle and its signer, the station, the time, digests of the
// review the station printed, an optional note and inventory, and the
// publisher keys the officer approved.
//
// The file is untrusted input (it crossed the gap beside the bundle): Parse
// reads at most MaxSize bytes and accepts exactly one statement in
// canonical form and one signature; Check verifies the signature as of its
// creation, by the station key the statement names. Beside, ReadFile,
// PathFor and NextPath find and name the files next to a bundle.
//
// It does not decide which keys may approve, how many approvals a store
// requires, or that a station key is not the bundle's signer: that is the
// store's policy. The file's fields and what Parse refuses are in
// docs/formats.md.
package approval
