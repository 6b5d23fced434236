// Package registry is a client of the protocols Terraform and OpenTofu use
// to find providers and modules: service discovery
// (/.well-known/terraform.json), the provider registry protocol (providers.v1)
// and the module registry protocol (modules.v1). It behaves as the real
// clients do: base URLs resolved with ResolveReference, relative URLs
// resolved against the final URL after redirects, at most 3 redirects and
// 1 MiB for discovery, credentials (TF_TOKEN_<host>, CLI config credentials
// blocks) sent only to registry API calls and never to package downloads,
// proxies and private CAs from the environment.
//
// Every answer is untrusted. Every body read is bounded (limits.go):
// discovery 1 MiB, registry JSON MaxAPIDocumentSize, signatures
// MaxSignatureSize, downloads a limit the caller gives; a body over its limit
// is cut off there (a file on disk never holds more than the limit) and
// fails with ErrTooLarge. Only transient errors are retried with backoff:
// connection errors and timeouts, 429 and 5xx. Redirect loops (more than 10
// redirects for downloads, 3 for API calls), schemes other than https/http,
// other 4xx, TLS certificate errors, unknown hosts, size-limit violations and
// digest mismatches fail at once (see Transient). A download or document
// body that sends nothing for IdleTimeout (2 minutes) is cut off (a resumable
// download resumes), so a stalled server cannot hang an export either; API
// calls have an overall timeout.
//
// It downloads to files, hashing while copying. It does not verify
// signatures (package verify does) and does not decide what to export
// (package dist/export does).
package registry
