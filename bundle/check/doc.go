// Package check is the consistency check of a bundle: what a validly
// signed manifest says, held against itself and against the blobs it
// lists. A valid signature only says who made the manifest, not that it
// is true; 'airgap verify' (All) and 'airgap import' (the store's import,
// through a Checker) both run this check.
//
// Manifest checks what a manifest says about itself before any blob is
// read. A Checker then takes each blob as it streams by (Spool, or Add for
// a file already on disk) and checks, on every core: each provider's
// SHA256SUMS signature against the keys the bundle carries for it (as of
// the signature's creation; site re-signatures and mirror hashes only where
// marked, by the bundle's signer), each package's line in it, each zip's
// h1 and its plugin's Go build information in one bounded pass, each
// module's zip rebuilt from its archive, names portable to every file
// system, documentation blobs, gate results and reports, the SBOM built
// again, signature dates, and the chain of custody hop by hop (each hop's
// signature, every record tied to a hop's signed manifest, each station
// approval read with bundle/approval). Finish returns the Result: what was
// checked, each provider's signature facts and what was deferred (a
// delta's omitted blobs, checked by the import).
//
// It does not decide whether a key may sign for a namespace (the store's
// publisher-key pins do: the check only knows the bundle agrees with the
// keys it carries), does not keep anything (what it spools is removed),
// and does not print: bundle/report renders what it found. The limits and
// what each check holds a bundle to are in docs/formats.md.
package check
