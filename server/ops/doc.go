// Package ops is what 'airgap serve' needs to run as a service: the
// access log (Observe: one line per request, no secrets or query strings,
// client text escaped, the client address from X-Forwarded-For only for
// trusted proxies, downloads named from the catalog; it also writes their
// audit records), the Prometheus metrics (label values only from a fixed
// set or the catalog), the main listener's connection limits (LimitConns:
// in total, per client address, and a send timeout), listeners whose
// errors name the setting to change, the logger (slog's text or JSON
// lines, with a fast path that writes the same bytes), a buffered log
// writer (reopened on SIGHUP after logrotate moved the file, losing
// nothing on the way out), systemd's readiness notification, and the
// client side of a container health check ('airgap healthcheck').
//
// It does not answer requests (it wraps the app's handler), rotate or ship
// logs (journald, the container runtime or logrotate do; the audit log
// rotates itself), or authenticate /metrics, which it serves only when
// asked.
package ops
