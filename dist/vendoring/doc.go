// Package vendoring makes a module archive self-contained: every module
// call in it whose source is not a registry address and not a local path
// (git::https://…//sub?ref=…, GitHub and Bitbucket shorthands, https://
// archives) is fetched the way the client would fetch it (through
// dist/getter, with its rules and limits), the whole fetched package is
// copied under .airgap/modules/<sha256 of its normalized archive>/ inside
// the calling module's tree, and the call's source argument is rewritten
// to the relative path of that copy. Calls inside vendored packages are
// vendored the same way, into the same tree. Rewriting edits only the
// source value: .tf through hclwrite, .tf.json at the string's offsets; the
// rest of each file is kept byte for byte.
//
// Bounds: MaxDepth levels of nested remote calls, MaxPackages fetches per
// tree, MaxCalls rewritten calls, MaxConfigBytes of configuration read (each
// file admitted by dist.AdmitHCL first), and one getter.Budget for the whole
// tree, so the module and its vendored packages together stay within
// getter's archive limits.
//
// Sources that cannot be vendored (an expression, s3::/gcs::/hg::, an HTTP
// URL that names no archive, a local git path, a fetch that fails, a
// subdirectory with template sequences or control characters, .tofu files)
// are listed together, with file:line, as one error with a hint, or as
// warnings when Options.Allow is set. A module that already has a .airgap
// folder, in any letter case, is refused (ErrReserved).
//
// The layout of the copies, the derivation of each bound and its worst case:
// docs/fetching.md, "Vendoring".
//
// It does not talk to registries, does not fetch registry-address calls
// (export carries those as modules of their own) and does not write the
// bundle: it edits a tree the caller then normalizes.
package vendoring
