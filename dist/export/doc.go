// Package export plans and runs an export: it resolves a Request against the
// real registries (through dist/registry), downloads every provider package
// in parallel into a verified download cache, checks each against the
// publisher's signed SHA256SUMS (and the lock file, when given), fetches and
// normalizes modules (through dist/getter), follows module dependencies, and
// returns the bundle manifest with the path of every blob.
//
// Upstream answers are untrusted: each package download is bounded by
// Options.MaxPackageSize (default 1 GiB) and each module archive by
// MaxModuleSize (default 256 MiB), cut off at the limit. Concurrent requests
// for one digest (identical packages under several addresses or origins)
// share one download; each download writes a private partial file, and an
// interrupted one is kept for resuming only while it can still become the
// file (see download.go). Worst case on disk per download: the limit.
//
// A SHA256SUMS is checked once per provider version (and its URLs and the
// keys the registry listed): another provider or registry naming the same
// URLs gets its own check against its own keys. The listed keys are read as
// one keyring, so verify.ReadKeyring's limits bound the whole set.
//
// Providers come from their origin registries, or from a network mirror
// the CLI configuration or --provider-mirror names (mirror.go): a mirror's
// bytes are checked against the origin's signed SHA256SUMS, and only with
// Options.TrustMirrorHashes, when the origin cannot be reached, carried on
// the mirror's hashes alone, marked as such. Modules come from their
// registries, or for the site's own modules from the source their manifest
// block names (sitemodule.go).
//
// spec.go reads the manifest against its full schema (unknown blocks,
// attributes and platforms are errors at file:line:col with did-you-mean);
// plan.go turns a run into the plan and summary that --dry-run and --json
// print (a dry run fetches module archives too, so the plan lists module
// dependencies); delta.go reads what the offline side already has;
// vendor.go makes each fetched module self-contained (dist/vendoring)
// unless Request.NoVendor; gatespec.go reads the gate and waive blocks and
// gates.go runs the gates (bounded, without a shell, in a clean
// environment) and records their results; write.go adds the SBOM and
// writes the finished export as a bundle through a temporary file;
// h1cache.go keeps in the cache what the one pass over a package's zip
// computes (its h1 and its plugin's Go build information), which verify
// and import never read: they compute both again.
//
// It does not write the bundle (package bundle does) and never lets an
// unverified file into the cache: downloads land in the cache's partial/ or
// tmp/ and are renamed under their digest only after every check passed.
// Nor does it trust a cached file by its name alone: a package is hashed
// again before use (a crash can leave an entry cut short: admission does
// not fsync), and what export makes afresh (module archives and zips,
// small documents) replaces the cache's copy.
// Module sources are unpacked in tmp/module-<pid>-*, removed when done; a
// run removes, when it starts, those of processes that no longer exist
// (see tidyModuleWork), so a killed export's trees do not stay for good.
package export
