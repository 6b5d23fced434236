package main

// serve: the appliance. Its flags, its help text and the call into
// package server, which does the work.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/acl"
)

// --- serve ---

type serveCmd struct {
	storeD    string
	listen    string
	hostnames []string
	tlsMode   string
	acmeCA    string
	acmeRoot  string
	acmeEmail string
	acmeHTTP  int
	acmeALPN  int
	certFile  string
	keyFile   string
	logLevel  string
	logFile   string
	// operations (issue 13): see server/config.go and server/ops.go
	configFile, logFormat, metricsListen string
	trustedProxies, passthroughProxies   []string
	maxConns, maxConnsPerIP              int // server/conns.go
	sendTimeout                          string
	access, auditLog, auditMaxSize       string
	auditKeep                            int
	urlTTL                               string
	usage, usageFlush                    string
	checkConfig                          bool
	fs                                   *pflag.FlagSet
}

func (c *serveCmd) synopsis() string {
	return "serve the store: discovery, provider and module registries, network mirror, over TLS"
}

func (c *serveCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory (required)")
	fs.StringVar(&c.listen, "listen", ":8443", "address to listen on")
	fs.StringSliceVar(&c.hostnames, "hostname", nil, "name clients use for the appliance (repeatable); add registry.terraform.io etc. if DNS points them here")
	fs.StringVar(&c.tlsMode, "tls", "local", "certificates: local (built-in CA), acme, or files")
	fs.StringVar(&c.acmeCA, "acme-ca", "", "ACME directory URL (--tls acme)")
	fs.StringVar(&c.acmeRoot, "acme-ca-root", "", "PEM root of a private ACME server (--tls acme)")
	fs.StringVar(&c.acmeEmail, "acme-email", "", "ACME account e-mail (--tls acme)")
	fs.IntVar(&c.acmeHTTP, "acme-http-port", 0, "port for the HTTP-01 challenge listener if not 80 (--tls acme)")
	fs.IntVar(&c.acmeALPN, "acme-tls-alpn-port", 0, "port for the TLS-ALPN-01 challenge listener if not 443 (--tls acme)")
	fs.StringVar(&c.certFile, "cert", "", "certificate chain PEM (--tls files; reloaded on change)")
	fs.StringVar(&c.keyFile, "key", "", "private key PEM (--tls files)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info (one access line per request), warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logFile, "log-file", "", "append the log to this file, reopened on SIGHUP (for logrotate); default stderr")
	fs.StringSliceVar(&c.trustedProxies, "trusted-proxy", nil, "believe X-Forwarded-For from these addresses or CIDR prefixes: balancers that terminate HTTP and append the client to it (repeatable)")
	fs.StringSliceVar(&c.passthroughProxies, "passthrough-proxy", nil, "load balancers that pass TLS through (TCP mode): exempt from the per-address limits, their X-Forwarded-For not believed (repeatable)")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "serve Prometheus /metrics over plain HTTP on this address (main: on the main TLS listener, to any client, not with --access; default: none)")
	fs.IntVar(&c.maxConns, "max-conns", server.DefaultMaxConns, "client connections open at once; more are closed at accept (0: no cap)")
	fs.IntVar(&c.maxConnsPerIP, "max-conns-per-ip", server.DefaultMaxConnsPerIP, "connections one client address (IPv6: /64) holds at once; --trusted-proxy and --passthrough-proxy addresses are exempt (0: no cap)")
	fs.StringVar(&c.sendTimeout, "send-timeout", "60s", "close a connection whose client reads nothing for this long (0: never)")
	fs.StringVar(&c.access, "access", "", "access file: tokens and what each may fetch ('airgap token' edits it; reloaded when it changes)")
	fs.StringVar(&c.auditLog, "audit-log", "", "append one JSON line per package or archive download to this file (shared by replicas)")
	fs.StringVar(&c.auditMaxSize, "audit-log-max-size", "100MiB", "rotate the audit log past this size")
	fs.IntVar(&c.auditKeep, "audit-log-keep", server.DefaultAuditKeep, "rotated audit logs kept (FILE.1 … FILE.N)")
	fs.StringVar(&c.urlTTL, "download-url-ttl", "15m", "with --access: how long the signed package and archive URLs in answers stay valid")
	fs.StringVar(&c.usage, "usage", server.UsageOn, "count package and module downloads in the store's state, shown by the catalog, 'inventory --usage' and 'prune --unused-for' (on or off)")
	fs.StringVar(&c.usageFlush, "usage-flush", server.DefaultUsageInterval.String(), "how often the download counts are written to STORE/state/usage (1s to 1h)")
	fs.StringVar(&c.configFile, "config", "", "HCL file with the same settings as these flags (flags win; see docs/operations.md)")
	fs.BoolVar(&c.checkConfig, "check-config", false, "validate the configuration, print the effective settings and exit")
	c.fs = fs
	return fs
}

func (c *serveCmd) run(args []string) error {
	if err := checkUsage("serve", args, nil); err != nil {
		return err
	}
	cfg, err := server.LoadServeConfig(c.fs, c.configFile, os.Getenv)
	if err != nil {
		return usageError{err.Error()}
	}
	if c.checkConfig {
		if cfg.Access != "" {
			f, err := acl.Load(cfg.Access)
			if err != nil {
				return err
			}
			if f.Login != nil {
				if err := checkLogin(cfg, f.Login); err != nil {
					return err
				}
			}
		}
		return cfg.WriteHCL(os.Stdout)
	}
	level := new(slog.LevelVar)
	lv, _ := cfg.Level()
	level.Set(lv)
	// Buffered (server.LogWriter): written out every 100 ms and in full
	// before serve exits.
	out, err := server.OpenLogWriter(cfg.LogFile)
	if err != nil {
		return err
	}
	defer out.Close()
	log, _ := server.NewLogger(out, cfg.LogFormat, level)
	out.SetNotice(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.Run(ctx, server.RunOptions{
		Store: cfg.Store, Listen: cfg.Listen, Hostnames: cfg.Hostname, Log: log, LogOut: out, TLS: cfg.TLSOptions(log),
		Config: cfg, Level: level, Version: Version,
	})
}

// checkLogin reports a login block for --check-config: the redirect URIs
// to register at the identity provider, and whether its discovery document
// answers (with the login block's CA and client secret files).
func checkLogin(cfg *server.ServeConfig, l *acl.Login) error {
	names := cfg.Hostname
	if len(names) == 0 {
		names = []string{"localhost"}
	}
	fmt.Fprintf(os.Stderr, "login: register the client %q at the identity provider with these redirect URIs (one per name clients use for the appliance):\n", l.ClientID)
	for _, u := range server.LoginRedirectURIs(names, cfg.Listen) {
		fmt.Fprintf(os.Stderr, "  %s\n", u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	chk, err := server.CheckLogin(ctx, l)
	if err != nil {
		return fmt.Errorf("login: %w\nhint: check the login block's issuer (its discovery document is ISSUER/.well-known/openid-configuration), ca_file and client_secret_file; serve still starts without the identity provider, but nobody can sign in", err)
	}
	fmt.Fprintf(os.Stderr, "login: the identity provider at %s answers: authorization %s, token %s\n", dist.Printable(chk.Issuer), dist.Printable(chk.AuthURL), dist.Printable(chk.TokenURL))
	if !chk.PKCE {
		fmt.Fprintf(os.Stderr, "warning: login: the identity provider does not list S256 among its code_challenge_methods_supported; sign-ins use PKCE S256 and may fail\n")
	}
	return nil
}

func (*serveCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR [--listen ADDR] [--hostname NAME]... [--tls local|acme|files]",
		about: "Serves the store to unmodified terraform/tofu: service discovery, provider and module\nregistries and a network mirror, over TLS (a built-in CA by default).",
		envOf: func(fs *pflag.FlagSet) []string {
			return append(serveEnv(fs), "GOGC  Go's collector setting (default here 400)",
				"(a flag wins over its variable, a variable over the --config file)")
		},
		examples: []string{"airgap serve --store /srv/airgap --listen :8443 --hostname airgap.site.example",
			"airgap serve --store /srv/airgap --tls files --cert chain.pem --key key.pem",
			"airgap serve --store /srv/airgap --access /etc/airgap/access.hcl --audit-log /var/log/airgap/audit.jsonl"},
	}
}

// serveEnv lists the AIRGAP_ variables serve reads, from the table its
// configuration loader uses, each with its flag's description.
func serveEnv(fs *pflag.FlagSet) []string {
	var out []string
	for _, name := range server.EnvSettings() {
		usage := ""
		if f := fs.Lookup(name); f != nil {
			usage = f.Usage
		}
		line := fmt.Sprintf("%s  as --%s: %s", server.EnvName(name), name, usage)
		if f := fs.Lookup(name); f != nil && f.Value.Type() == "stringSlice" {
			line += " (comma-separated)"
		}
		out = append(out, line)
	}
	return out
}
