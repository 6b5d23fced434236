// Package server is the appliance: 'airgap serve' answers the protocols
// real Terraform, OpenTofu and OCI clients speak (service discovery, the
// provider and module registries, the provider network mirror, the OCI
// distribution API), the HTML catalog and documentation for people, and
// the single sign-on of 'terraform login', from a store it can only read.
//
// What it holds:
//   - the route table (routeTable): every path, its handler and who may
//     reach it; the ServeMux, the sign-in dispatch and the access check
//     are built from it and nothing else;
//   - the serve settings (serveSettings): each one's flag, config-file
//     key, AIRGAP_ variable and SIGHUP behaviour, declared once;
//   - Run, the serve loop: TLS, listeners, reloads, metrics, access log
//     (wired from the sub-packages);
//   - the answers themselves, rendered from the checked catalog and
//     cached per catalog snapshot under a bound the catalog sets;
//   - each principal's scope of the catalog (package access says who the
//     principal is), a denied address answered byte for byte as a
//     missing one.
//
// Its concerns live in sub-packages that never import it: access (access
// control and single sign-on), certs (TLS), ops (access log, metrics,
// connection limits, logging, systemd), ui (the pages for people); the
// README has the layout.
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
// and immutable; whatever the store lacks is a 404 with a JSON body.
// The design behind each of these, and the bounds, are in the package's
// README and in docs/architecture.md and docs/access-control.md.
package server
