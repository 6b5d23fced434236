// Package dist describes what airgap distributes and where it comes from:
// provider and module addresses, versions and platforms, the h1:/zh: package
// hashes Terraform records in lock files, and the Catalog that a bundle
// carries and the store serves. Printable makes any of its untrusted strings
// safe to show on a terminal.
//
// gate.go describes gates (scanners the export runs over every entry) and
// their results, and counts a SARIF report's findings (CountSARIF).
//
// Its sub-packages fetch things: dist/registry is a client of the service
// discovery, provider registry and module registry protocols; dist/getter
// turns module source addresses (git, HTTP archives) into normalized archives;
// dist/export plans and runs an export. dist/goinfo reads a plugin's Go
// build information; dist/sbom writes a catalog's CycloneDX SBOM.
//
// It does not read or write bundles, check bundle signatures, or serve HTTP.
package dist
