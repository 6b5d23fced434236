// Package store is the content-addressed directory that bundles are imported
// into and that 'airgap serve' reads.
//
// Layout (the only place that maps names to paths is paths.go):
//
//	STORE/
//	  index.json               catalog of everything served + import history;
//	                           replaced atomically (temp, fsync, rename, fsync dir)
//	  blobs/sha256/<hex>       immutable blobs (mode 0444), named by sha256
//	  tmp/                     staging for imports in progress; emptied by the
//	                           next import (leftovers of a killed import),
//	                           through os.Root: links there are not followed
//	  lock                     flock(2) target: one import at a time
//	  serve.lock               shared flock(2) held by every running 'airgap
//	                           serve' of the store (Served asks)
//	  import.hcl               optional, written by the operator: the store's
//	                           import policy (StorePolicy: required gates and
//	                           publisher signatures, the pins file, station
//	                           approvals), and the files it names (a station
//	                           keyring, a pins file), read by every import;
//	                           and the chain policy (chainpolicy.go)
//	  tls/                     written by 'airgap serve' (local CA, certificates);
//	                           never by import
//	  state/                   written by 'airgap serve' (StateDir): what its
//	                           replicas share beyond the catalog; never by import
//	    logins/                single sign-on: login tokens, codes, the sealing
//	                           key (server/loginstate.go)
//	    usage/usage.json       download counts per provider package and module
//	                           version (usage.go), added to under usage/lock;
//	                           read by inventory --usage and prune --unused-for
//
// Import is all or nothing. The bundle signature is checked before any blob is
// accepted, and the manifest's consistency (check.Manifest) and its fit
// with what the store already serves (dist.Catalog.CheckMerge: a version is
// never changed, only new platforms added) before any blob is read. Every
// blob is hashed while it is written into tmp/ (and fsynced there, off the
// stream, by syncer.go: every staged blob is on disk before the commit
// starts), and check.Checker checks SHA256SUMS signatures, SHA256SUMS
// lines, each zip's h1 and each module's zip (from the staged file while
// the stream goes on, on every core). A blob the store
// already has (a regular file of its size; links are not followed) is not
// written again but compared with the verified stream; if it differs it is
// staged and replaced at the commit. Only when all of that has passed is
// the commit made: the new index is written to a temporary file
// (.index.json.*, fsynced) — so a full disk fails here, with nothing placed —
// then the new blobs are renamed into blobs/ (directory fsynced), then the
// index is renamed into place (directory fsynced). A failure before that last
// rename removes the blobs this import placed, so the tree is exactly as it
// was, and every error says whether the store changed; disk-full errors say
// how much the import needs. A crash during the commit can leave blobs that no
// index entry refers to yet and a temporary index, never an index entry whose
// blob is missing; the next import removes the temporary files and, for the
// same bundle, completes it.
//
// Gate results, reports and build information documents are catalog
// entries' fields and blobs like any other (kept while an entry refers to
// them); a bundle's SBOM is checked (check.Checker) but not kept: the
// store's SBOM (sbom.go) is made from its catalog and build information.
// RequireGates (gates.go) is an import policy: a bundle whose entries lack a
// required gate's result is refused before anything is committed.
//
// A bundle's withdraw list (withdraw.go) is applied in the same index swap:
// the versions leave the catalog and are recorded in the index's withdrawn
// list (bundle, signer, time, reason); a later bundle that carries one is
// refused (ErrWithdrawn) unless it reinstates it. Prune (prune.go) removes
// versions under a policy and GC (gc.go) deletes blobs no catalog entry
// references and stale temporary files; both hold the store lock, replace
// the index atomically before deleting anything, and are recorded in its
// maintenance history, so a kill at any moment leaves only unreferenced
// blobs that a re-run removes.
//
// Policies (policy.go) are the import's rules, run after the checks and
// before the commit: CatalogRules (withdrawals, a version never changes)
// and those StorePolicy.Rules builds from import.hcl and the import's
// flags (required gates, required publisher signatures, station
// approvals: approvals.go, publisher-key pins). Every rule runs and
// records each entry it refuses (PolicyResult.Refuse): the import fails
// with all of them at once (RefusedError), and 'airgap verify --against'
// runs the very same rules over the inventory's description of the store
// (forecast.go), so its forecast is the import's decision. The publisher-key pins (pins.go) are one:
// the index records, per provider namespace, the keys its providers were
// accepted with (Index.PublisherKeys), and an import refuses a provider
// signed by a key its namespace has not had unless the change is approved
// (the bundle's signed declaration, --accept-publisher-key, or the site's
// pins file, pinsfile.go). review.go gives 'airgap verify' the same
// decisions, and the difference a bundle makes to an inventory
// (--against).
//
// What the store remembers about trust (trust.go, keys.go; index format
// 3): who signed each version's SHA256SUMS, the station approvals each
// import accepted (kept as blobs of role approval, which gc and prune
// keep), the versions whose signature an import replaced (trust changes),
// the revocations seen (a revoked key signs nothing new, even when a
// later bundle strips the revocation) and key retirements ('airgap keys
// retire'), each recorded in the history.
//
// Every import also keeps the bundle's manifest.json and manifest.json.sig
// as they came and the public key that verified them, as blobs named in its
// history entry (custody.go), with the chain blobs the bundle carried; gc
// and prune keep them with the entry. An export from the store (carry.go,
// 'airgap export --from-store') carries them onwards as the bundle's chain
// of custody (bundle.Hop), after hashing every blob it carries from the
// store before a byte is written; import.hcl's chain block (chainpolicy.go)
// makes an import require every hop signed by a key of a keyring.
//
// Readers (the server) use Open and Store's read-only methods; they notice a
// new index.json by polling its identity (Reload / Watch) and never block
// imports. inventory.go renders the inventory and an import's result for
// people and as JSON ('airgap inventory', 'airgap import --json'). This
// package does not serve HTTP and does not fetch anything.
package store
