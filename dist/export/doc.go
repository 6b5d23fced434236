// Package export plans and runs an export: it resolves a Request against the
// real registries (through dist/registry), downloads every provider package
// in parallel into a verified download cache, checks each against the
// publisher's signed SHA256SUMS (and the lock file, when given), fetches and
// normalizes modules (through dist/getter), makes them self-contained
// (dist/vendoring) unless Request.NoVendor, follows module dependencies, runs
// the manifest's gates, and returns the bundle manifest with the path of
// every blob. SelectFromStore and WriteFromStore export what a store holds
// instead, with no network.
//
// The manifest is read against its full schema (ParseSpec: unknown blocks,
// attributes and platforms are errors at file:line:col with did-you-mean);
// a dry run gives the plan and summary --dry-run and --json print
// (Result.Summarize) without writing a bundle. Providers come from their
// origin registries or a network mirror, whose bytes are checked against the
// origin's signed SHA256SUMS; only with Options.TrustMirrorHashes, when the
// origin cannot be reached, are they carried on the mirror's hashes alone,
// marked as such.
//
// Upstream answers are untrusted: each package download is bounded by
// Options.MaxPackageSize (default 1 GiB) and each module archive by
// MaxModuleSize (default 256 MiB), cut off at the limit; gates run bounded,
// without a shell, in a clean environment. How downloads are shared and
// resumed, how the cache admits a file, and the worst cases:
// docs/fetching.md, "Exporting".
//
// It never lets an unverified file into the cache, nor trusts a cached file
// by its name alone, and what it caches from a package's zip (its h1, its
// plugin's build information) verify and import compute again. It does not
// write the bundle's format (package bundle does), read or change a store's
// rules, or import anything.
package export
