// Package server answers the protocols real Terraform and OpenTofu clients
// speak, from a store it can only read:
//
//	/.well-known/terraform.json                      service discovery
//	/v1/providers/{ns}/{type}/versions               provider registry protocol
//	/v1/providers/{ns}/{type}/{v}/download/{os}/{arch}
//	/v1/modules/{ns}/{name}/{system}/versions        module registry protocol
//	/v1/modules/{ns}/{name}/{system}/{v}/download
//	/origin/{origin}/v1/providers/…, …/v1/modules/…  one origin's view, for CLI host overrides
//	/mirror/{hostname}/{ns}/{type}/index.json         provider network mirror protocol
//	/mirror/{hostname}/{ns}/{type}/{v}.json
//	/blobs/sha256/{hex}[/{filename}]                  packages, SHA256SUMS, signatures
//	/archives/sha256/{hex}.tar.gz                     module archives
//	/ca.pem, /healthz, /airgap/v1/origins             appliance helpers
//	/v2/…                                             OCI distribution API, read-only (oci.go; layout: dist/oci)
//	/ (exactly), /ui/providers/…, /ui/modules/…       the HTML catalog for people (catalog.go, templates/)
//
// Which origin registry a /v1/… request sees depends on its Host: a Host that
// is an origin in the catalog (DNS for registry.terraform.io pointed at the
// appliance) sees that origin; any other Host (the appliance's own name)
// sees the default view, where each provider or module comes from the first
// origin that has it, in the order registry.terraform.io,
// registry.opentofu.org, then the rest alphabetically.
//
// Blobs are served content-addressed: ETag is the digest, Range works, and
// caching is immutable. JSON is always application/json; whatever the store
// lacks is a 404 with a JSON error body, never an HTML 200. Errors map to
// status codes in one place (errors.go).
//
// HTTPServer (http1.go) carries the handler over HTTP/1.1 in place of
// net/http's server: request parsing is still http.ReadRequest, but the
// connection loop and response framing are its own, because net/http's
// per-request background read cost the appliance its lead over nginx on
// small JSON answers. Its request loop is fuzzed (FuzzHTTPConn).
//
// The package also keeps TLS (tls.go: a built-in CA, ACME through certmagic,
// or certificate files; in local mode the certificates also cover the
// machine's own names and addresses, tlsnames.go) and writes client
// configuration (clientconfig.go; origins_client.go asks a running appliance
// for its origins, with a hint per kind of failure).
// It never writes to the store's content, only to its tls/ directory.
//
// Running it as a service, all independent of the HTTP server that carries
// the handler:
//   - access.go: Observe, middleware writing one slog access line per
//     request (no secrets, no query strings, client text escaped, the client
//     address from X-Forwarded-For only for trusted proxies) and feeding
//     the metrics; downloads are named from the catalog.
//   - metrics.go: Prometheus metrics (client_golang, own registry), label
//     values only from a fixed set or the catalog.
//   - config.go: the serve configuration (flags, AIRGAP_ variables, an HCL
//     --config file), validated with FILE:LINE:COL errors.
//   - reload.go: SIGHUP applies what can change without a restart.
//   - ops.go: wires the above for the serve verb; systemd.go: sd_notify;
//     health.go: the client side of container health checks.
//
// It does not rotate or ship logs (journald or the container runtime does)
// and does not authenticate /metrics (serve it on --metrics-listen where
// only the monitoring network reaches it).
package server
