// Package dist describes what airgap distributes and where it comes from:
// provider and module addresses, versions and platforms, the h1:/zh: package
// hashes Terraform records in lock files and the SHA256SUMS they are checked
// against, the Catalog that a bundle carries and the store serves (with its
// documentation records, publisher-key pins, withdrawals and the reasons
// entries change), and the registry protocol's documents.
//
// It also holds what every package that reads untrusted input shares:
//
//   - Printable and PrintableLines make any untrusted string safe to show on
//     a terminal; RedactSource keeps credentials out of messages;
//   - bounded readers: ReadFileLimit reads a small file whole within a size
//     bound, JSONLimit decodes JSON within size and depth bounds, and
//     ContextReader stops a copy when its context ends;
//   - HCL admission: AdmitHCL counts a file's tokens without allocating,
//     checks its nesting and holds it within the process-wide budget of
//     tokens being parsed (MaxHCLTokens, MaxHCLNesting, MaxHCLTokensParsing)
//     before any HCL parser sees it; ParseHCL parses a native-syntax file
//     as hclsyntax does, in pieces for speed; LiteralValue and the hints
//     read literal values with file:line:col messages;
//   - gates (the scanners an export runs over every entry), their results,
//     and the count of a SARIF report's findings (CountSARIF);
//   - ChildEnv, the environment of the programs airgap starts (git, a
//     credentials helper) without airgap's secrets, and Suggest, the
//     did-you-mean of every message.
//
// Its sub-packages fetch and shape things: dist/registry is a client of the
// registries' protocols, dist/getter turns module sources into normalized
// archives, dist/vendoring makes modules self-contained, dist/export plans
// and runs an export, dist/goinfo reads a plugin's Go build information,
// dist/sbom writes a catalog's SBOM and dist/oci maps a catalog onto
// OpenTofu's OCI layout.
//
// It does not fetch anything, read or write bundles, check signatures
// (package verify does) or serve HTTP.
package dist
