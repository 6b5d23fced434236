// Package tfconfig reads what a Terraform/OpenTofu configuration needs:
// required_providers, module calls (with positions, for messages) and the
// dependency lock file. It reads .tf and .tf.json with hashicorp/hcl/v2; it
// does not run Terraform and does not fetch anything. LoadDir, LoadTree and
// LoadTreeIn evaluate only literal values. LoadProject also evaluates module
// sources and versions written as expressions, as 'terraform init' (1.15+,
// const variables) and 'tofu init' (1.8+, early evaluation) do: variables
// from --var, --var-file, tfvars files, TF_VAR_ and defaults, locals, and a
// fixed set of pure functions, through HCL's own evaluation; anything not
// known at init is an error naming file:line:col and the expression. Const evaluation is bounded too
// (MaxValueBytes per value, MaxEvalBytes in all, MaxEvalDepth nesting; no
// for expressions, splats or arithmetic).
//
// Configurations are untrusted (a downloaded module's are written by its
// publisher). Every malformed file gives an error naming file:line:col,
// never a panic; file names and parser messages in errors and positions
// are escaped with dist.Printable, so a hostile name cannot drive the
// terminal. Local module calls ("./x", "../x") are followed only
// inside a containing directory — the project for LoadTree, the module's
// whole package for LoadTreeIn — and only through an os.Root on it, so no
// symlink leads out either; a call that would leave it is an error
// (ErrOutside) naming file:line and the source. Every file passes
// dist.AdmitHCL before HCL parses it: at most dist.MaxHCLTokens tokens
// (counted without allocating; the parsers hold a kilobyte or so per
// token), nested at most dist.MaxHCLNesting levels (HCL's parsers recurse
// with no bound), parsed within the process-wide budget of
// dist.MaxHCLTokensParsing tokens at once. Limits: MaxFileSize (4 MiB)
// per file, MaxTreeBytes (16 MiB) of files read per tree, MaxFilesPerDir
// names kept per directory and MaxLocalModules directories per tree; so
// one tree parses at most 16 MiB, one file at a time. LoadDir, LoadTree
// and LoadTreeIn keep no file's syntax tree once it is read; LoadProject
// keeps the expressions of variables, locals and module arguments of the
// project's own files (its MaxTreeBytes) until it has evaluated them.
package tfconfig
