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
//	/v2/token                                         bearer tokens for OCI clients, with an access file (oci_auth.go)
//	/oauth/authorization, /oauth/token                'terraform login' (login.v1), with a login block (login.go)
//	/oauth/callback, /oauth/signin, /oauth/signout     the identity provider's return; the catalog's sign-in
//	/ (exactly), /ui/providers/…, /ui/modules/…       the HTML catalog for people (catalog.go, templates/)
//	/ui/providers/{h}/{ns}/{t}/{v}/docs/…, /ui/modules/{h}/{ns}/{n}/{s}/{v}, /ui/docs/search
//	                                                  documentation, rendered (docs.go, docsrender.go, templates/docs/)
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
// A provider download answer also carries OpenTofu 1.12's "packages":
// every platform's zh: and h1: hashes and size, from the catalog (which
// import checked), so a fresh 'tofu init' records every platform's hashes;
// Terraform ignores the field. The mirror's <version>.json lists h1: and
// zh: for every platform, what OpenTofu's trust_all_hashes records.
//
// Answers never repeat the Host header: download_url, shasums_url,
// shasums_signature_url, module locations and mirror archive URLs are
// relative, and the clients resolve them against the request URL. The
// Host only chooses a /v1/… request's view. Rendered JSON answers are
// cached per catalog snapshot under (view, canonical path), so the cache
// is bounded by the catalog whatever clients send, and by a byte budget
// (Options.CacheBytes); the worst case is stated on renderKey (server.go)
// and attacked by TestCacheBoundedByCatalog, TestCacheBudget, FuzzRenderKey
// and, against the real binary, hostile_serve_test.go.
//
// The appliance serves on net/http's own http.Server (http.go:
// NewHTTPServer), HTTP/1.1 only, with a header timeout that also covers the
// TLS handshake and the wait for the first request, an idle timeout, a
// 32 KiB header limit (431 beyond), no write timeout (multi-GB downloads)
// and no read timeout (requests that announce a body are answered and their
// connection closed unread). It is a security boundary, and the standard
// server is reviewed and patched by the Go security team and handles what
// a hand-written loop tends to leave out (timeouts before the first request,
// Expect, 431, plain HTTP on the TLS port). An own HTTP/1.1 connection loop
// spent about 30% less CPU per cached answer (10 against 14 µs), but at
// tens of thousands of requests per second on two cores, far above what a
// site's engineers can ask of it, that bought users nothing.
//
// The package also keeps TLS (tls.go: a built-in CA, ACME through certmagic,
// or certificate files; in local mode the certificates also cover the
// machine's own names and addresses, tlsnames.go) and writes client
// configuration (clientconfig.go; origins_client.go asks a running appliance
// for its origins, with a hint per kind of failure).
// It never writes to the store's content, only to its tls/ directory and
// its state/ (store.StateDir: the download counts, usage.go).
//
// Who may fetch what (Options.Access, an access file of package acl):
//   - auth.go: every request but /healthz, /ca.pem and plain discovery
//     needs a principal, a token (Bearer, or the password of Basic
//     credentials) or the anonymous rule; the 401s and their challenges
//     are what terraform, tofu, oras-go and browsers expect; failed
//     attempts are limited per client address.
//   - scope.go: a principal sees the catalog filtered by its rules, through
//     the same handlers, so a denied address is answered byte for byte as
//     a missing one; answers are cached per principal.
//   - signing.go: download URLs in answers are signed for the principal
//     (HMAC over path, token and expiry; keys in STORE/tls, rotatable),
//     because the clients send no token when they download packages.
//   - oci_auth.go: the /v2/ Bearer challenge and /v2/token.
//   - login.go, idp.go: single sign-on. The appliance is the OAuth 2.0
//     server of 'terraform login' / 'tofu login' and an OpenID Connect
//     relying party of the site's identity provider (go-oidc, x/oauth2);
//     loginstate.go keeps the login tokens in STORE/state/logins, shared
//     by replicas; loginset.go makes them principals whose rules are their
//     groups' in the current access file.
//   - audit.go: one JSON line per package download, and per login,
//     refused login, token change and refused request; shared by replicas.
//
// Who uses what (usage.go): completed package and archive downloads are
// counted in memory, keyed only by catalog entries, and added in batches
// to the store's state (store.AddUsage: STATE/usage/usage.json, shared by
// replicas under a lock); the catalog's address pages show the counts.
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
//   - conns.go: LimitConns, the main listener's connection caps (in total
//     and per client address) and write-progress timeout.
//   - ops.go: wires the above for the serve verb; systemd.go: sd_notify;
//     health.go: the client side of container health checks.
//
// It does not rotate or ship its access log (journald or the container
// runtime does; it rotates only the audit log) and does not authenticate
// /metrics (it is served only when asked: on
// --metrics-listen where only the monitoring network reaches it, or on the
// main listener with --metrics-listen main, which an access file refuses).
package server
