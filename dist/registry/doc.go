// Package registry is a client of the protocols Terraform and OpenTofu use
// to find providers and modules: service discovery
// (/.well-known/terraform.json), the provider registry protocol (providers.v1)
// and the module registry protocol (modules.v1). It behaves as the real
// clients do: base URLs resolved with ResolveReference, relative URLs
// resolved against the final URL after redirects, at most 3 redirects and
// 1 MiB for discovery, credentials (TF_TOKEN_<host>, CLI config credentials
// blocks) sent only to registry API calls and never to package downloads,
// proxies and private CAs from the environment. Stricter than they are: a
// host's token goes only to that host's own https origin (name and port),
// not to a service its discovery document places elsewhere, and is dropped
// on a redirect to another origin; redirects from https to http fail
// (ErrInsecureRedirect).
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
// download resumes), so a stalled server cannot hang an export either; a
// download averaging under MinDownloadRate over RateWindow (10 KiB/s over a
// minute) is cut off the same way (ErrTooSlow), so a trickling one cannot
// either; API calls and Fetch (SHA256SUMS, signatures) have an overall
// timeout, the metadata timeout.
//
// Every string field of a download document, a versions list or a module
// location that holds a control character (or another rune dist.Printable
// escapes) is a protocol violation (ErrInvalidAnswer, text.go); messages
// quote registry strings and status lines through dist.Printable.
//
// It also reads what of the Terraform CLI configuration an export uses, as
// Terraform finds and reads it (cliconfig.go): host blocks, which replace a
// host's discovery (a company's proxy registry; its answers must keep to its
// own origins, proxy.go), credentials blocks and credentials.tfrc.json, the
// credentials helper (credhelper.go: run as Terraform runs it, but bounded
// in time and output), and provider_installation's network mirrors, whose
// protocol mirror.go speaks.
//
// It downloads to files, hashing while copying. It does not verify
// signatures (package verify does) and does not decide what to export
// (package dist/export does).
package registry
