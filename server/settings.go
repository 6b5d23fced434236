package server

import (
	"slices"
	"sort"
	"strconv"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/server/protocol"
	"github.com/spf13/pflag"
)

// The serve settings, each declared once: its name (the flag and the
// --config file's key), default, help line, whether an AIRGAP_ variable
// (EnvName) may carry it, and what SIGHUP does with it. ServeConfig has
// one field per row, tagged with the name; the flags are made from here
// (ServeFlags), and 'airgap help serve' lists the variables from here.
//
// The environment carries only what differs between hosts that share one
// configuration file. SIGHUP applies a reloadApplied setting at once
// (reloadable says how); a changed reloadRestart setting is reported as
// needing a restart.
var serveSettings = []setting{
	{name: "store", usage: "store directory, or s3://BUCKET/PREFIX?… (object storage: see docs/object-storage.md) (required)"},
	{name: "listen", def: ":8443", usage: "address to listen on", env: true},
	{name: "hostname", usage: "name clients use for the appliance (repeatable); add registry.terraform.io etc. if DNS points them here", env: true, reload: reloadApplied},
	{name: "tls", def: "local", usage: "certificates: local (built-in CA), acme, or files"},
	{name: "acme-ca", usage: "ACME directory URL (--tls acme)"},
	{name: "acme-ca-root", usage: "PEM root of a private ACME server (--tls acme)"},
	{name: "acme-email", usage: "ACME account e-mail (--tls acme)"},
	{name: "acme-http-port", usage: "port for the HTTP-01 challenge listener if not 80 (--tls acme)"},
	{name: "acme-tls-alpn-port", usage: "port for the TLS-ALPN-01 challenge listener if not 443 (--tls acme)"},
	{name: "cert", usage: "certificate chain PEM (--tls files; reloaded on change)", reload: reloadApplied},
	{name: "key", usage: "private key PEM (--tls files)", reload: reloadApplied},
	{name: "log-level", def: "info", usage: "debug, info (one access line per request), warn or error", reload: reloadApplied},
	{name: "log-format", def: "text", usage: "log format: text or json"},
	{name: "log-file", usage: "append the log to this file, reopened on SIGHUP (for logrotate); default stderr", reload: reloadApplied},
	{name: "trusted-proxy", usage: "believe X-Forwarded-For from these addresses or CIDR prefixes: balancers that terminate HTTP and append the client to it (repeatable)", reload: reloadApplied},
	{name: "passthrough-proxy", usage: "load balancers that pass TLS through (TCP mode): exempt from the per-address limits, their X-Forwarded-For not believed (repeatable)", reload: reloadApplied},
	{name: "metrics-listen", usage: "serve Prometheus /metrics over plain HTTP on this address (main: on the main TLS listener, to any client, not with --access; default: none)", env: true},
	{name: "max-conns", def: strconv.Itoa(ops.DefaultMaxConns), usage: "client connections open at once; more are closed at accept (0: no cap)"},
	{name: "max-conns-per-ip", def: strconv.Itoa(ops.DefaultMaxConnsPerIP), usage: "connections one client address (IPv6: /64) holds at once; --trusted-proxy and --passthrough-proxy addresses are exempt (0: no cap)"},
	{name: "send-timeout", def: "60s", usage: "close a connection whose client reads nothing for this long (0: never)"},
	// Turning access control on or off needs a restart: a signal should
	// never open the appliance to everyone.
	{name: "access", usage: "access file: tokens and what each may fetch ('airgap token' edits it; reloaded when it changes)", reload: reloadWhileOn},
	{name: "audit-log", usage: "append one JSON line per package or archive download to this file (shared by replicas)"},
	{name: "audit-log-max-size", def: "100MiB", usage: "rotate the audit log past this size"},
	{name: "audit-log-keep", def: strconv.Itoa(access.DefaultAuditKeep), usage: "rotated audit logs kept (FILE.1 … FILE.N)"},
	{name: "download-url-ttl", def: "15m", usage: "with --access: how long the signed package and archive URLs in answers stay valid"},
	{name: "usage", def: usageOn, usage: "count package and module downloads in the store's state, shown by the catalog, 'inventory --usage' and 'prune --unused-for' (on or off)"},
	{name: "usage-flush", def: protocol.DefaultUsageInterval.String(), usage: "how often the download counts are written to STORE/state/usage (1s to 1h)"},
	{name: "object-redirect", def: "off", usage: "with a store in object storage: answer each blob download (GET or HEAD, no range) with a redirect to a presigned URL of the object, valid 5 minutes, instead of streaming it through serve (on or off)"},
	{name: "object-cache-max", def: "1GiB", usage: "with a store in object storage: the most disk the replica uses for the blobs it must hold as files (range requests, docs pages, SBOMs), least recently used out first"},
}

type setting struct {
	name   string
	def    string // the flag's default, as text
	usage  string // the flag's help line
	env    bool   // an AIRGAP_ variable may carry it
	reload reloadKind
}

// reloadKind is what SIGHUP does with a changed setting.
type reloadKind int

const (
	reloadRestart reloadKind = iota // nothing: it needs a restart, and the reload says so
	reloadApplied                   // applied at once
	reloadWhileOn                   // applied while it stays set (access: a new file, not none)
)

func settingNamed(name string) setting {
	i := slices.IndexFunc(serveSettings, func(s setting) bool { return s.name == name })
	if i < 0 {
		return setting{name: name}
	}
	return serveSettings[i]
}

// ServeFlags adds a flag for every serve setting to fs, of its field's
// type; LoadServeConfig reads them back from fs.
func ServeFlags(fs *pflag.FlagSet) {
	fields := settingFields()
	t := settingsType()
	for _, s := range serveSettings {
		switch t.Field(fields[s.name]).Type.Kind().String() {
		case "int":
			n, _ := strconv.Atoi(s.def)
			fs.Int(s.name, n, s.usage)
		case "slice":
			fs.StringSlice(s.name, nil, s.usage)
		default:
			fs.String(s.name, s.def, s.usage)
		}
	}
}

// EnvSettings lists the settings an AIRGAP_ variable (EnvName) may carry,
// by name.
func EnvSettings() []string {
	var out []string
	for _, s := range serveSettings {
		if s.env {
			out = append(out, s.name)
		}
	}
	sort.Strings(out)
	return out
}
