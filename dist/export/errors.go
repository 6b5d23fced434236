package export

import "errors"

// Sentinel errors; wrapped with context where they are returned.
var (
	// ErrManifest: the export manifest has an unknown block, attribute or
	// value (each reported at file:line:col).
	ErrManifest = errors.New("invalid export manifest")
	// ErrNoConfig: --from names a directory without Terraform files.
	ErrNoConfig = errors.New("no Terraform configuration")
	// ErrEmpty: the request resolves to nothing (refused unless allowed).
	ErrEmpty = errors.New("nothing to export")
	// ErrDependencies: modules call more modules or providers, or deeper,
	// than an export follows (MaxModuleDepth, MaxDependencyModules,
	// MaxDependencyProviders).
	ErrDependencies = errors.New("too many module dependencies")
	// ErrNotInStore: an export from a store asks for what the store does
	// not hold.
	ErrNotInStore = errors.New("not in the store")
	// ErrHaveOwnStore: --have names the inventory of the store being
	// exported from.
	ErrHaveOwnStore = errors.New("pointless --have")
)
