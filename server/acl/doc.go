// Package acl is airgap's access file: who may fetch what from 'airgap
// serve'. It holds named tokens, stored only as SHA-256 hashes, each with
// the provider and module address patterns it may read and an optional
// expiry, and an optional anonymous rule for what anyone may read:
//
//	# Who may fetch what from this airgap appliance ('airgap token' edits it).
//	anonymous {
//	  allow = ["registry.terraform.io/hashicorp/*"]
//	}
//
//	token "ci-network" {
//	  sha256  = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//	  allow   = ["registry.terraform.io/*/*", "site.example/net/**"]
//	  created = "2026-11-24T22:31:07Z"
//	  expires = "2027-02-22T22:31:07Z"
//	}
//
// With single sign-on (serve's login service) the file also has a login block (the
// site's OpenID Connect identity provider) and group and user blocks, the
// rules of the people who sign in there:
//
//	login {
//	  issuer    = "https://idp.site.example/realms/eng"
//	  client_id = "airgap"
//	}
//	group "platform"           { allow = ["registry.terraform.io/hashicorp/*"] }
//	user  "alice@site.example" { allow = ["site.example/net/**"] }
//
// A revoked token stays as a revoked block (its name and hash, when), so
// that serve refuses it, and logs its attempts, under its name:
//
//	revoked "ci-network" {
//	  sha256  = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//	  revoked = "2027-01-10T08:00:00Z"
//	}
//
// Patterns name addresses as the catalog writes them, one glob per part:
// HOST/NAMESPACE/TYPE for providers, HOST/NAMESPACE/NAME/SYSTEM for modules.
// A part is matched with path.Match ('*', '?', '[a-z]'), case-insensitively
// (addresses are); a final "**" part matches any number of remaining parts,
// so "site.example/net/**" covers the site's providers and modules in that
// namespace, and "**" everything. A pattern of three parts can only match
// providers and one of four only modules, so a rule says exactly which kind
// it is for.
//
// The file is HCL, read with a schema (FILE:LINE:COL errors, a
// did-you-mean for misspelled names) and edited with hclwrite, so comments
// and hand edits survive 'airgap token create' and 'revoke'. Every write is
// atomic (a temporary file in the same directory, fsync, rename, fsync of the
// directory) under an exclusive lock (FILE.lock), keeps the previous file's
// owner and mode 0600, and is checked by reading it back before the rename:
// a running serve reloads the file when it changes and must never see half
// of one.
//
// Why SHA-256 and not a password hash: tokens are 256-bit random secrets
// (NewSecret), so an attacker holding the file cannot guess one faster than
// by trying 2^255 candidates, whatever the hash costs; slow hashes (bcrypt,
// argon2) protect low-entropy passwords and would cost tens of milliseconds
// per request. A request's token is found by the SHA-256 of what it
// presents; timing can tell an attacker at most how many leading bytes of the
// hash of an input they chose equal a stored hash, which is a preimage
// search on SHA-256, not a way to learn a token.
//
// Limits (the file is written by operators but read by a network service):
// 4 MiB, 10,000 tokens, 10,000 revoked blocks (the editor keeps the newest
// 1,000), 10,000 group and user blocks, 256 patterns per rule, 512 bytes
// per pattern, token names of 1–64 characters [A-Za-z0-9._-] starting with
// a letter or digit ("anonymous" is reserved: it names anonymous access in
// logs; login tokens are named "login~…", which no token of the file can
// be).
//
// Like ssh with private keys, Load refuses a file that any other user may
// read or write (mode & 0o077 != 0): the hashes are not secrets an attacker
// can use, but who holds which rights is, and a world-writable file would
// let anyone grant themselves everything.
//
// The package does no HTTP; the server's enforcement is in package server
// (serve's AccessControl and scopes), and so is single sign-on.
package acl
