// Package acl is airgap's access file: who may fetch what from 'airgap
// serve'. It holds named tokens, stored only as SHA-256 hashes, each with
// the provider and module address patterns it may read and an optional
// expiry; an optional anonymous rule; revoked blocks, so that a revoked
// token is refused and logged under its name; and, with single sign-on,
// the login block (the site's OpenID Connect identity provider) and the
// group and user rules of the people who sign in there.
//
//	anonymous { allow = ["registry.terraform.io/hashicorp/*"] }
//	token "ci-network" {
//	  sha256 = "9f86d0…"   # of the secret; the secret itself is nowhere
//	  allow  = ["registry.terraform.io/*/*", "site.example/net/**"]
//	}
//
// Patterns name addresses as the catalog writes them, one glob per part
// (path.Match, case-insensitive), with a final "**" matching any number of
// parts. A pattern cli.airgap.invalid/PRODUCT names the CLI releases of
// terraform or tofu: rules without one admit all releases (as before they
// existed), rules with one only those they name. The file is HCL, read with a schema (FILE:LINE:COL errors, a
// did-you-mean) and edited with hclwrite so comments survive; every edit
// is atomic under an exclusive lock, keeps the owner and mode 0600, and is
// read back before the rename, because a running serve reloads the file
// and must never see half of one. Load refuses a file other users may
// read or write, as ssh does with private keys.
//
// Every count and size is bounded, since a network service reads the
// file; the bounds, the file's full form and why SHA-256 rather than a
// password hash (tokens are 256-bit random secrets) are in
// docs/access-control.md.
//
// The package does no HTTP: enforcement, signed URLs and single sign-on
// are in server/access.
package acl
