// Package store is the content-addressed directory that bundles are
// imported into and that 'airgap serve' reads: index.json (the catalog
// and the import history), immutable blobs named by their sha256, and the
// operator's import.hcl.
//
// It holds:
//   - Import: all or nothing. The bundle's signature and manifest are
//     checked before any blob is accepted, every blob is hashed and checked
//     (bundle/check) as it is staged, the import's policies run, and only
//     then is the commit made: blobs renamed into place, then the index
//     replaced atomically. Every error says whether the store changed.
//   - The import's policies (import.hcl and flags): catalog rules
//     (withdrawals, a version never changes), required gates and publisher
//     signatures, publisher-key pins and the pins file, station approvals,
//     the chain policy. Every rule runs and reports every entry it refuses;
//     'airgap verify --against' runs the same rules over an inventory
//     (Review fills the report's Forecast), so the station's forecast is
//     the import's decision.
//   - What the store remembers about trust and custody: who signed each
//     version, trust changes, revocations and retired keys, the approvals
//     accepted, and each imported bundle's signed manifest with its key,
//     which an export from the store (Carry) carries onwards as the chain
//     of custody.
//   - Maintenance: withdrawals, Prune, GC (each under the store lock, the
//     index replaced before anything is deleted), usage counts, the
//     inventory and the store's SBOM, mirror-dir.
//   - Readers: Open and Store's read-only methods, which notice a new index
//     by polling (Reload, Watch) and never block imports.
//
// It does not serve HTTP (server does), fetch anything, or check a
// bundle's contents itself (bundle/check does, for it). The directory's
// layout, how a commit survives a crash or a full disk, and the index's
// trust and custody records are in docs/formats.md.
package store
