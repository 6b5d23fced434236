// Package export plans and runs an export: it resolves a Request against the
// real registries (through dist/registry), downloads every provider package
// in parallel into a verified download cache, checks each against the
// publisher's signed SHA256SUMS (and the lock file, when given), fetches and
// normalizes modules (through dist/getter), follows module dependencies, and
// returns the bundle manifest with the path of every blob.
//
// spec.go reads the manifest against its full schema (unknown blocks,
// attributes and platforms are errors at file:line:col with did-you-mean);
// plan.go turns a run into the plan and summary that --dry-run and --json
// print (a dry run fetches module archives too, so the plan lists module
// dependencies); delta.go reads what the offline side already has; write.go
// writes the finished export as a bundle through a temporary file.
//
// It does not write the bundle (package bundle does) and never lets an
// unverified file into the cache: downloads land in the cache's tmp/ and are
// renamed under their digest only after every check passed.
package export
