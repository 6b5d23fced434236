// Package ops tests running serve: configuration files, systemd and the
// Containerfile, replicas behind HAProxy, listening, log files and
// formats, reloads, interrupted and killed imports, prune and gc, usage
// records, and the progress shown on a terminal.
package ops
