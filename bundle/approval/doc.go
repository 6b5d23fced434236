// Package approval is the transfer station's signed approval of one bundle
// (the two-person rule): 'airgap approve' writes it, and an import into a
// store whose import.hcl requires approvals checks it (bundle/store's
// approvals rule).
//
// An approval file is a statement and its signature, nothing else:
//
//	{                                   the statement: canonical JSON (Encode),
//	  "type": "airgap-approval",        indented two spaces, one trailing newline
//	  "format": 1,
//	  "bundle": "sha256:…",             the bundle's manifest digest
//	  "bundle_signer": "FINGERPRINT",   the site key that signed the bundle
//	  "station": {"key_id": …, "fingerprint": …, "identity": …},
//	  "time": "2026-11-25T09:14:03Z",   when the station signed (the signature's date)
//	  "review": {"text": "sha256:…", "json": "sha256:…"},
//	  "against": "sha256:…",            the inventory the review compared with (optional)
//	  "note": "…",                      the officer's note (optional)
//	  "publisher_keys": [{"namespace": "registry.terraform.io/hashicorp", "fingerprint": …}],
//	  "tool": "airgap 1.5.0"
//	}
//	-----BEGIN PGP SIGNATURE-----       an armored detached OpenPGP signature of
//	…                                   exactly the statement's bytes, by the
//	-----END PGP SIGNATURE-----         station key (verify.SignDetachedArmored)
//
// review binds the review the station printed when it approved (the text
// and the --json form, each digested as printed), so an auditor can match a
// saved review with the approval. publisher_keys are the publisher keys the
// officer approved there ('approve --accept-publisher-key'): a store whose
// policy takes publisher keys only from the station pins them.
//
// The file is untrusted input (it crossed the gap beside the bundle): Parse
// reads at most MaxSize bytes, accepts exactly one statement in canonical
// form (Encode of what it decodes gives the same bytes, so there is one way
// to write each statement: no duplicate keys, unknown fields, other
// spacing or escapes), a note and identity of printable text only, at most
// MaxPublisherKeys keys, then exactly one armored signature. Check verifies
// the signature against a keyring (as of its creation time,
// verify.CheckSignature) and that it was made by the station key the
// statement names at the time it states. Which keys may approve, how many
// approvals a store requires and that a station key is not the bundle's
// signer is the store's policy, not this package's.
//
// Format: a statement of a newer format is refused with ErrTooNew; format 1
// is the one described here.
package approval
