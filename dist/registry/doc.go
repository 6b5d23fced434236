// Package registry is a client of the protocols Terraform and OpenTofu use
// to find providers and modules: service discovery
// (/.well-known/terraform.json), the provider registry protocol (providers.v1)
// and the module registry protocol (modules.v1). It behaves as the real
// clients do: base URLs resolved with ResolveReference, relative URLs
// resolved against the final URL after redirects, at most 3 redirects and
// 1 MB for discovery, credentials (TF_TOKEN_<host>, CLI config credentials
// blocks) sent only to registry API calls and never to package downloads,
// proxies and private CAs from the environment, retries with backoff on
// connection errors, 429 and 5xx.
//
// It downloads to files, hashing while copying. It does not verify
// signatures (package verify does) and does not decide what to export
// (package dist/export does).
package registry
