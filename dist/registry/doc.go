// Package registry is a client of the protocols Terraform and OpenTofu use
// to find providers and modules: service discovery
// (/.well-known/terraform.json), the provider registry protocol (providers.v1),
// the module registry protocol (modules.v1) and the provider network mirror
// protocol. It behaves as the real clients do (redirects, relative URLs,
// credentials sent only to registry API calls, proxies and private CAs from
// the environment), and is stricter: a host's token goes only to that host's
// own https origin, and a redirect from https to http fails
// (ErrInsecureRedirect).
//
// Every answer is untrusted. Every body read is bounded (discovery 1 MiB,
// registry JSON MaxAPIDocumentSize, signatures MaxSignatureSize, downloads a
// limit the caller gives) and cut off at its limit (ErrTooLarge); a body that
// sends nothing for IdleTimeout, or a download slower than MinDownloadRate
// over RateWindow (ErrTooSlow), is cut off too. Only transient errors are
// retried (Transient). A string field holding a rune dist.Printable escapes
// is a protocol violation (ErrInvalidAnswer).
//
// It also reads what of the Terraform CLI configuration an export uses, as
// Terraform finds and reads it: host blocks (a company's proxy registry),
// credentials blocks and credentials.tfrc.json, the credentials helper
// (bounded in time and output) and provider_installation's network mirrors.
//
// Every bound and how the clients' behaviour is matched: docs/fetching.md,
// "Registries".
//
// It downloads to files, hashing while copying. It does not verify
// signatures (package verify does) and does not decide what to export
// (package dist/export does).
package registry
