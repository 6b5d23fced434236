package main

// serve: the appliance. Its flags, its help text and the call into
// package server, which does the work.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/ops"
)

// --- serve ---

type serveCmd struct {
	// The settings' flags are made from the server's settings table
	// (server.ServeFlags) and read back by server.LoadServeConfig; these
	// two are the verb's own.
	configFile  string
	checkConfig bool
	fs          *pflag.FlagSet
}

func (c *serveCmd) synopsis() string {
	return "serve the store: discovery, provider and module registries, network mirror, over TLS"
}

func (c *serveCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	server.ServeFlags(fs)
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
	// Buffered (ops.LogWriter): written out every 100 ms and in full
	// before serve exits.
	out, err := ops.OpenLogWriter(cfg.LogFile)
	if err != nil {
		return err
	}
	defer out.Close()
	log, _ := ops.NewLogger(out, cfg.LogFormat, level)
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
	// Every name and address serve answers to: a sign-in started on a
	// name whose URI is not registered fails at the identity provider.
	fmt.Fprintf(os.Stderr, "login: register the client %q at the identity provider with these redirect URIs (one per name and address serve answers to; leave out those clients never use):\n", l.ClientID)
	uris := cfg.RedirectURIs()
	for _, u := range uris {
		switch {
		case len(l.RedirectURIs) == 0:
			fmt.Fprintf(os.Stderr, "  %s\n", u)
		case slices.Contains(l.RedirectURIs, u):
			fmt.Fprintf(os.Stderr, "  %s  (in redirect_uris)\n", u)
		default:
			fmt.Fprintf(os.Stderr, "  %s  (not in redirect_uris: a sign-in started there gets a page naming it)\n", u)
		}
	}
	for _, u := range l.RedirectURIs {
		if !slices.Contains(uris, u) {
			fmt.Fprintf(os.Stderr, "warning: login: redirect_uris lists %s, but serve does not answer to that name and port (add the name with --hostname, or check the port)\n", dist.Printable(u))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	chk, err := access.CheckLogin(ctx, l)
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
