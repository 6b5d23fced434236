// Package server is the appliance: 'airgap serve' answers the protocols
// real Terraform, OpenTofu and OCI clients speak (service discovery, the
// provider and module registries, the provider network mirror, the OCI
// distribution API), the HTML catalog and documentation for people, and
// the single sign-on of 'terraform login', from a store it can only read.
//
// This package is the app that puts them together:
//   - the route table (routeTable): every path, its handler and who may
//     reach it; the ServeMux, the sign-in dispatch and the access check
//     are built from it and nothing else, and access is decided from the
//     path alone, before routing;
//   - the serve settings (serveSettings): each one's flag, config-file
//     key, AIRGAP_ variable and SIGHUP behaviour, declared once;
//   - Run, the serve loop: TLS, listeners, reloads, metrics, access log,
//     the HTTP server (NewHTTPServer) and its limits.
//
// The answers live in sub-packages that never import it: protocol (the
// registry, mirror, download and OCI answers, their cache, each
// principal's scope of the catalog, download counts, client
// configuration), access (access control and single sign-on), ui (the
// pages for people), certs (TLS), ops (access log, metrics, connection
// limits, logging, systemd). The README has the layout and the design.
//
// What it does not do: it never writes to the store's content, only to
// its tls/ directory (certificates, URL signing keys) and its state/
// (download counts, login tokens); it imports and verifies nothing (that
// is package bundle); it does not rotate or ship its access log (journald
// or the container runtime does; it rotates only the audit log); and it
// does not authenticate /metrics, which it serves only when asked, on a
// listener of its own or, without an access file, on the main one.
//
// Whichever origin a /v1/… request sees depends on its Host; answers never
// repeat the Host (their URLs are relative); blobs are content-addressed
// and immutable; whatever the store lacks is a 404 with a JSON body; a
// denied address is answered byte for byte as a missing one. The bounds
// are in package protocol, docs/architecture.md and docs/access-control.md.
package server
