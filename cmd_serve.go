package main

// The offline side's serving verbs: serve, healthcheck, ca, client-config
// and push. Each verb is one struct, its flag set and the calls into the
// server and dist/oci packages that do the work.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/server/ops"
	"github.com/spf13/pflag"
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
	names := cfg.Hostname
	if len(names) == 0 {
		names = []string{"localhost"}
	}
	fmt.Fprintf(os.Stderr, "login: register the client %q at the identity provider with these redirect URIs (one per name clients use for the appliance):\n", l.ClientID)
	for _, u := range access.LoginRedirectURIs(names, cfg.Listen) {
		fmt.Fprintf(os.Stderr, "  %s\n", u)
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

// --- healthcheck ---

type healthcheckCmd struct{ opt ops.HealthCheckOptions }

func (c *healthcheckCmd) synopsis() string {
	return "ask a running appliance's /healthz (container health checks; exit 0 when healthy)"
}

func (c *healthcheckCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("healthcheck", pflag.ContinueOnError)
	fs.StringVar(&c.opt.URL, "url", "https://127.0.0.1:8443/healthz", "the appliance's /healthz URL")
	fs.StringVar(&c.opt.CAFile, "ca", "", "PEM CA to trust (e.g. STORE/tls/ca/ca.pem); default the system roots")
	fs.StringVar(&c.opt.ServerName, "server-name", "", "verify the certificate for this name instead of the URL's host")
	fs.DurationVar(&c.opt.Timeout, "timeout", 5*time.Second, "give up on one request after this long")
	fs.DurationVar(&c.opt.Wait, "wait", 0, "ask again until the appliance answers or this long has passed (for scripts that just started serve)")
	return fs
}

func (c *healthcheckCmd) run(args []string) error {
	if err := checkUsage("healthcheck", args, nil); err != nil {
		return err
	}
	return ops.HealthCheck(context.Background(), c.opt)
}

// --- ca ---

type caCmd struct{ storeD string }

func (c *caCmd) synopsis() string {
	return "print the local CA certificate (PEM) and its SHA-256 fingerprint"
}

func (c *caCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("ca", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory (required)")
	return fs
}

func (c *caCmd) run(args []string) error {
	if err := checkUsage("ca", args, nil, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	if _, err := os.Stat(c.storeD); err != nil {
		return fmt.Errorf("%w\nhint: give the store 'airgap serve' uses; 'airgap import --keyring KEYRING --store DIR BUNDLE' creates one", err)
	}
	ca, err := certs.LoadOrCreateCA(store.TLSDir(c.storeD))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "SHA-256 fingerprint: %s\n", certs.CAFingerprint(ca.Cert))
	os.Stdout.Write(ca.PEM)
	return nil
}

// --- client-config ---

type clientConfigCmd struct {
	url       string
	storeD    string
	tool      string
	mode      string
	tokenFile string
	login     bool
}

func (c *clientConfigCmd) synopsis() string {
	return "print a terraform/tofu CLI config that points every origin at the appliance"
}

func (c *clientConfigCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("client-config", pflag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "the appliance's base URL, e.g. https://airgap.site:8443/ (required)")
	fs.StringVar(&c.storeD, "store", "", "read the origins from this store instead of asking the server (--url is still checked; a failed check is a warning)")
	fs.StringVar(&c.tool, "tool", "terraform", "terraform or tofu")
	fs.StringVar(&c.mode, "mode", "registry", "registry (host overrides; best lock files), mirror (network mirror) or oci (OpenTofu oci_mirror; with --tool tofu)")
	fs.StringVar(&c.tokenFile, "token-file", "", "a file holding your token ('airgap token create' printed it; - for stdin): written into the configuration as credentials blocks, and used to ask --url")
	fs.BoolVar(&c.login, "login", false, "the appliance signs people in (single sign-on): add login.v1 to every host block and list the 'terraform login' commands to run (the default when --url's discovery document offers login.v1)")
	return fs
}

func (c *clientConfigCmd) run(args []string) error {
	if err := checkUsage("client-config", args, nil, flagVal{"url", c.url}); err != nil {
		return err
	}
	if c.tool != "terraform" && c.tool != "tofu" {
		return usageError{"--tool must be terraform or tofu"}
	}
	opt := server.ClientConfigOptions{URL: c.url, Tool: c.tool, Mode: c.mode}
	if c.tokenFile != "" {
		tok, err := readTokenFile(c.tokenFile)
		if err != nil {
			return err
		}
		opt.Token = tok
	}
	// Every flag is checked before the network or the store is asked.
	if err := server.WriteClientConfig(io.Discard, opt); err != nil {
		return usageError{err.Error()}
	}
	opt.URL, _ = server.NormalizeBaseURL(c.url)
	if c.storeD != "" {
		st, err := store.Open(c.storeD)
		if err != nil {
			return err
		}
		opt.Origins = server.Origins(st.Catalog())
		// The origins come from the store; the URL is checked all the same,
		// and a failed check is said plainly (the config is still printed:
		// the appliance may not be running yet, or be reachable only from
		// the clients' network).
		if len(opt.Origins) > 0 {
			err := server.CheckAppliance(opt.URL, opt.Token, opt.Origins, 5*time.Second)
			switch {
			case errors.Is(err, server.ErrSignInRequired):
				opt.Login = true
				fmt.Fprintf(os.Stderr, "checked: %s answers with a certificate this machine trusts, and signs people in (single sign-on; its origins are listed only to them)\n", dist.Printable(opt.URL))
			case err != nil:
				fmt.Fprintf(os.Stderr, "warning: could not confirm that %s is this store's appliance: %s\nthe configuration was printed anyway (its origins come from --store); check --url before you hand it out\n",
					dist.Printable(opt.URL), dist.PrintableLines(err.Error()))
			default:
				fmt.Fprintf(os.Stderr, "checked: %s answers as the airgap appliance of this store, with a certificate this machine trusts\n", dist.Printable(opt.URL))
			}
		}
	} else {
		doc, err := server.FetchOrigins(opt.URL, opt.Token)
		if err != nil {
			return err
		}
		opt.Origins = doc.Origins
	}
	if len(opt.Origins) == 0 {
		return errors.New("the appliance serves nothing yet, so the config would send terraform to the internet\nhint: import a bundle first: airgap import --keyring site.pub.asc --store DIR BUNDLE")
	}
	if c.login {
		opt.Login = true
	} else if !opt.Login {
		opt.Login, _ = server.ApplianceLogin(opt.URL, 5*time.Second)
	}
	return server.WriteClientConfig(os.Stdout, opt)
}

// --- push ---

type pushCmd struct {
	storeD, to, username string
	jobs                 int
	passwordStdin, json  bool
}

func (c *pushCmd) synopsis() string {
	return "publish the store's providers and modules to an OCI registry in OpenTofu's layout"
}

func (c *pushCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("push", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "the store to publish (required)")
	fs.StringVar(&c.to, "to", "", "REGISTRY[/PREFIX], e.g. registry.site.example/airgap (required)")
	fs.IntVar(&c.jobs, "jobs", 4, "tags pushed in parallel")
	fs.StringVar(&c.username, "username", "", "registry user (password from "+oci.PasswordEnv+" or --password-stdin); default: Docker's config")
	fs.BoolVar(&c.passwordStdin, "password-stdin", false, "read the password for --username from stdin")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	return fs
}

func (c *pushCmd) run(args []string) error {
	if err := checkUsage("push", args, nil, flagVal{"store", c.storeD}, flagVal{"to", c.to}); err != nil {
		return err
	}
	opt := oci.PushOptions{Target: c.to, Jobs: c.jobs, Username: c.username}
	if c.username != "" {
		p, err := oci.Password(c.passwordStdin, os.Stdin)
		if err != nil {
			return err
		}
		opt.Password = p
	}
	intr := catchInterrupt()
	defer intr.Stop()
	res, err := oci.PushStore(intr.ctx, c.storeD, opt, c.json, os.Stdout)
	if err != nil {
		return intr.Err(err, "run the same command again; what was pushed is skipped")
	}
	if c.json {
		return printJSON(res)
	}
	return nil
}
