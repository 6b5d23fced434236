// Package ops is what 'airgap serve' needs to run as a service, apart from
// HTTP: its logger (slog's text or JSON lines, with a fast path that writes
// the same bytes for the access log), a buffered log writer (written out
// every 100 ms, reopened on SIGHUP after logrotate moved the file, losing
// nothing on the way out), systemd's readiness notification, and the
// client side of a container health check ('airgap healthcheck').
//
// It does not decide what is logged (the server's access log and audit
// do), rotate or ship logs (journald, the container runtime or logrotate
// do), or serve anything.
package ops
