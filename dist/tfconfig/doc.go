// Package tfconfig reads what a Terraform/OpenTofu configuration needs:
// required_providers, module calls (with positions, for messages) and the
// dependency lock file. It reads .tf and .tf.json with hashicorp/hcl/v2 and
// evaluates only literal values; it does not run Terraform and does not
// fetch anything.
//
// Configurations are untrusted (a downloaded module's are written by its
// publisher). Every malformed file gives an error naming file:line:col,
// never a panic. Local module calls ("./x", "../x") are followed only
// inside a containing directory — the project for LoadTree, the module's
// whole package for LoadTreeIn — and only through an os.Root on it, so no
// symlink leads out either; a call that would leave it is an error
// (ErrOutside) naming file:line and the source. Limits: MaxFileSize bytes
// per file, MaxFilesPerDir configuration files per directory and
// MaxLocalModules directories per tree, so the work is at most about
// MaxLocalModules × MaxFilesPerDir × MaxFileSize bytes parsed (each file
// parsed once per directory it is reached as).
package tfconfig
