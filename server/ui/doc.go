// Package ui is the appliance's pages for people: the HTML catalog (what
// the appliance serves, how to point a client at it, each address's
// versions with hashes, signers, gate results and download counts, the
// import history and publisher keys), the providers' and modules'
// documentation rendered from their bundles, the search over it, and the
// SBOM of what a reader may see.
//
// Everything it shows comes from bundles (untrusted even when signed) or
// the request: html/template escapes it, Markdown is rendered by goldmark
// and sanitised by bluemonday with bounded work per page, and every page
// carries a Content-Security-Policy that allows no external resource.
//
// It does not decide who may see what: App.Scope gives it the request's
// view of the catalog, and it answers an address outside that scope as a
// missing one. It does not route (the server's route table does), count
// downloads, or write anything.
package ui
