// Package bundle reads and writes airgap bundles: the one signed file that is
// carried across the air gap.
//
// A bundle is a tar stream, written plain (CompressionNone) or as a zstd
// stream (RFC 8878): CompressionZstd compresses it as one frame;
// CompressionAuto, the default, cuts it at entry boundaries into a
// sequence of frames (frames.go), compressed frames for entries whose first
// MiB zstd at its fastest shrinks by at least a 32nd (the manifest,
// SHA256SUMS, text) and frames of raw blocks, the bytes as they
// are behind a 3-byte header every 128 KiB, for the rest (deflated zips,
// gzip tarballs, which zstd cannot shrink). Every zstd decoder reads a
// sequence of frames as one stream, so the container is the same for every
// compression and every manifest format: the reader detects zstd by its
// magic number and needs nothing else (bundles of format 1, always one
// frame or plain, read as before), and 'zstd -dc BUNDLE | tar -t' lists
// any bundle. The decision depends only on an entry's bytes and the
// encoder configuration is fixed. Its entries, in this order and nothing
// else:
//
//	manifest.json          the Manifest (JSON, at most MaxManifestSize)
//	manifest.json.sig      binary detached OpenPGP signature of manifest.json
//	blobs/sha256/<hex>     every carried blob, in the manifest's (sorted) order
//
// Every tar header is fixed (mode 0444, uid/gid 0, no owner names, mtime from
// SOURCE_DATE_EPOCH or the epoch), USTAR where it fits and PAX where a size
// needs it (blobs over 8 GiB), so the same inputs give the same bytes.
//
// The manifest lists every blob (digest, size, role) and the dist.Catalog the
// blobs make up. A delta bundle lists the full catalog but marks the blobs it
// does not carry as omitted; its Delta field names the base. The optional
// withdraw and reinstate lists (dist.Withdrawal: kind, full address, exact
// versions, a required reason) take versions out of the importing store and
// lift earlier withdrawals; a bundle may hold only those. The optional
// publisher_keys list (format 2, PublisherKeyDecl) declares publisher keys
// the exporting side approved as new for a namespace. The manifest digest
// (sha256 of manifest.json) identifies a bundle.
//
// Format 2 adds, all optional: each provider package's Go build information
// (a blob of role go-build-info, dist/goinfo's canonical document of its
// plugin); the gates the export ran (Manifest.Gates) and, on every entry of
// a gate's kind, its result (dist.GateResult) with the tool's report as a
// blob of role gate-report; and the bundle's CycloneDX SBOM (Manifest.SBOM,
// role sbom), a function of the manifest and the build information
// (BuildSBOM, sbom.go), with the version of the SBOM document it was written
// as (Manifest.SBOMGenerator, sbom.Generator: the check builds the same
// version again, so a newer airgap's SBOM changes do not break older
// bundles). A format-1 manifest has none of them, nor any
// other format-2 field (format2Field in manifest.go lists them all).
//
// Format 3 adds, all optional:
//
// requested_by (Manifest.RequestedBy, dist.Reason), why each entry is in
// the bundle as the export resolved it: the manifest block or project file
// that asked for it (FILE:LINE, relative to the manifest's or project's
// directory) and the chain of module calls that brought it, each a module
// version of the same catalog. At most one per catalog entry, sorted, each
// position at most dist.MaxReasonText printable bytes and each chain at
// most dist.MaxReasonVia calls (Validate, so CheckManifest, holds them to
// the catalog). 'airgap verify' shows them.
//
// The documentation of providers and modules: on a provider version, its
// docs record (dist.ProviderDocs: where the docs came from — repository,
// tag, commit, folder — and either a blob of role provider-docs, the
// deterministic tar of its markdown pages and images (dist/docs), with its
// page, file and byte counts, or why export left them out); on a module
// version, a blob of role module-docs (dist.ModuleDocs as JSON: README,
// inputs, outputs, required providers, submodules). Versions whose docs
// trees are identical share one blob. The Checker reads every docs blob
// whole and holds it to its form (docs.Check: regular files only, names a
// page or an image, portable, sorted, Pack's headers; its counts equal to
// the record's; a module's document parsed within dist.MaxModuleDocs), and
// the SBOM (generator 2) lists them.
//
// A format-1 or -2 manifest has no format-3 field (format3Field in
// manifest.go lists them all).
//
// Format 3 also adds the chain of custody (Manifest.Chain, chain.go) of a
// bundle exported from an offline store ('airgap export --from-store',
// bundle/store's carry.go), and the blob roles it uses: bundle-manifest,
// bundle-signature and bundle-key (format3Field lists them). The design,
// and why:
//
//   - Nothing is rebuilt. Such a bundle lists the store's blobs byte for
//     byte: the publisher's SHA256SUMS, signature and keys as they came
//     (or the site re-signature and its tier), h1 and zh hashes, gate
//     results and reports, Go build information, vendored module
//     archives. Only the manifest is new (and the SBOM, a function of the
//     manifest). So the checks that need no trust — every publisher
//     signature, every digest, every h1, every module tree — run again at
//     every enclave exactly as for a bundle from the registries, and the
//     lock file made on the internet still matches.
//   - A hop is checked, not asserted. A store keeps, of every bundle it
//     imports, its manifest.json and manifest.json.sig as they came and the
//     public key that verified them; a bundle exported from the store
//     carries those of every bundle that brought what it carries (and of
//     their chains: what the stores before recorded). The next enclave
//     checks each hop's signature again with the key it came with (and, by
//     its import policy, with its own copy of that key), and ties every
//     record of the bundle — provider version record, package, module
//     version record, module zip, gate result — to a hop whose signed
//     manifest lists it equal. An enclave key can therefore carry only what
//     signed bundles brought into its store: it cannot add a package, a
//     gate result or a site re-signature of its own (a site re-signature
//     must be by the signer of a hop that carries that record), and what
//     it says about earlier enclaves' imports must match their signed
//     words (Hop.Into).
//   - The next enclave's policy still rules. The chain adds a check; it
//     takes none away: publisher-key pins, withdrawals, required gates and
//     the rest apply to such a bundle exactly as to one from the registries.
//     The exporting store's withdrawals travel as withdraw blocks, and
//     the publisher keys it approved as new as publisher_keys declarations,
//     which the next store's pins judge as usual.
//   - Hops recorded only: a store that imported a bundle before airgap kept
//     manifests can name it (signer and time as it noted them), not prove
//     it; such a hop is marked, what only it can have brought is listed,
//     verify says so, and a store's chain policy refuses it.
//
// Reader checks the signature before it hands out any blob, and each blob's
// size and digest while it is read; a blob reader returns the error at its
// end instead of io.EOF, so a consumer that copies it learns of a bad blob
// before it can commit anything.
//
// Open (open.go) opens a bundle file or split set and refuses, with
// ErrNotBundle and what it looks like, a file that is not a bundle (a zip, a
// PDF, text…); Check reads a whole bundle for 'airgap verify'. A bundle
// file is read ahead by a goroutine of its own and, where the file system
// allows it, with O_DIRECT (readahead.go); Writer writes the same way
// (ahead.go): a bundle is read and written once, in 1 MiB chunks, without
// a copy through the page cache.
//
// A valid signature only says who made the manifest, not that it is true.
// CheckManifest and Checker (check.go) check what it says against itself and
// against the blobs: no duplicate versions, file names that every registry
// gives them (terraform-provider-TYPE_VERSION_OS_ARCH.zip and
// ..._SHA256SUMS: what ties the publisher's signed lines to a type, version
// and platform), each provider's SHA256SUMS signed by a key the bundle
// carries for it (judged as of the signature's creation; a site
// re-signature only where marked and by the bundle's own signer, and no
// unmarked provider signed by a site key; a provider with a network
// mirror's hashes only — format 2's mirror_hashes_only, mirror and
// mirror_hashes — only where marked, by the bundle's signer, over a
// SHA256SUMS of exactly its packages, each matching a hash the mirror
// listed), each package listed with its
// sha256 in that SHA256SUMS, each h1 recomputed from the zip (bounded:
// MaxZipEntries, MaxZipDirectory, MaxZipUnpacked, MaxZipRatio) and in the
// same pass its plugin's Go build information (ScanPackage), each module's
// zip rebuilt from its archive and compared, every module archive's names
// the same files on every file system (dist/portable), every
// publisher-key declaration needed by a provider it carries, signature
// times possible: no SHA256SUMS signature dated after the bundle's own,
// none dated past this machine's clock plus a day (CheckOptions.SignedAt),
// every gate result held to the gates listed (kind, tool, status against
// exit status, findings and fail level, one result per entry of the gate's
// kind), every SARIF report's findings counted again, and the SBOM built
// again and compared. 'airgap verify' (CheckAll) and 'airgap import'
// (store.Import) both run it, and both get each provider's signature facts
// from it (CheckReport.Signed): it cannot tell a forged publisher key from
// a real one, only that the bundle agrees with the keys it carries; which
// keys a namespace may have is bundle/store's publisher-key pins.
//
// Report (report.go) is what 'airgap verify' shows and prints as JSON; its
// schema is documented there. Its Forecast (forecast.go) is what an import
// into the store an inventory describes would decide — bundle/store runs
// the import's own rules to fill it — ending the review with one verdict.
//
// Sub-package store is the content-addressed directory bundles are imported
// into. This package does not touch the filesystem except through the
// file-path helpers, and does not talk to the network.
package bundle
