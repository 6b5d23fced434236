// Package vendoring makes a module archive self-contained: every module
// call in it whose source is not a registry address and not a local path
// (git::https://…//sub?ref=…, GitHub and Bitbucket shorthands, https://
// archives) is fetched the way the client would fetch it (through
// dist/getter, with its rules and limits), the whole fetched package is
// copied under .airgap/modules/<sha256 of its normalized archive>/ inside
// the calling module's tree, and the call's source argument is rewritten
// to the relative path of that copy (with the subdirectory). Relative
// "../" calls inside a vendored package keep working because the whole
// package is kept; calls inside vendored packages are vendored the same
// way, into the same top-level tree, so every rewritten path stays inside
// the archive that is served (clients refuse local paths that leave a
// module's package).
//
// Rewriting edits only the source value: .tf files through hclwrite
// (comments, formatting and heredocs kept byte for byte), .tf.json files by
// replacing the bytes of the JSON string at the offsets hcl's JSON parser
// gives (the rest of the file unchanged).
//
// Bounds: MaxDepth levels of nested remote calls below the carried module,
// MaxPackages fetches per tree, failed ones included (each package fetched
// once; a cycle ends at a package already vendored), MaxCalls rewritten
// calls (manifest records), each module directory read once per tree
// (a local module shared by many vendored subdirectories is parsed once)
// and MaxConfigBytes of .tf/.tf.json read in all (each file parsed only
// once dist.AdmitHCL lets it: token count, nesting, the process-wide
// budget of tokens being parsed), and one getter.Budget
// for the whole tree (the module and its vendored packages together
// within getter's archive limits, 1 GiB and MaxArchiveEntries entries).
// Rewrites are applied once every directory has been read, one pass per
// file. Worst case on disk: MaxArchiveBytes for the tree plus one package
// being fetched; time: MaxPackages fetches, each bounded by the getter's
// own limits, plus parsing MaxConfigBytes (dense HCL: ~40 s).
//
// Sources that cannot be vendored (not a literal string: an expression
// that Terraform ≥ 1.15 and OpenTofu compute from what each caller passes
// in, which one archive cannot be rewritten for; s3::/gcs::/hg::,
// an HTTP URL that names no archive, a local git path, or a fetch that
// fails) are listed together, with file:line, as one error with a hint, or
// as warnings when Options.Allow is set (the call then stays as written).
// A subdirectory containing ${ or %{ (and a .tf.json source containing
// them: Terraform before 1.15 reads it literally, Terraform 1.15+ and
// OpenTofu as a template) or control
// characters, and .tofu files (their calls would be neither vendored nor
// recorded) are listed the same way. A module that already has a .airgap
// folder, in any letter case (one folder on macOS and Windows), is refused
// (ErrReserved).
//
// It does not talk to registries, does not fetch registry-address calls
// (export carries those as modules of their own) and does not write the
// bundle: it edits a tree the caller then normalizes.
package vendoring
