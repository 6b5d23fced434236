// Command airgap carries Terraform and OpenTofu providers and modules into
// networks with no internet, and serves them there. See README.md.
//
// This file is the verb table, one struct and flag set per verb, and the
// calls into the packages; help.go holds each verb's help text.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/verify"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "0.1.0-dev"

// verb is one subcommand: its own flag set, its own Run.
type verb interface {
	flags() *pflag.FlagSet
	synopsis() string
	run(args []string) error
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func verbs() map[string]verb {
	return map[string]verb{
		"keygen":        &keygenCmd{},
		"verify":        &verifyCmd{},
		"import":        &importCmd{},
		"inventory":     &inventoryCmd{},
		"export":        &exportCmd{},
		"serve":         &serveCmd{},
		"ca":            &caCmd{},
		"client-config": &clientConfigCmd{},
		"split":         &splitCmd{},
		"join":          &joinCmd{},
		"healthcheck":   &healthcheckCmd{},
		"push":          &pushCmd{},
	}
}

func main() { os.Exit(run(os.Args[1:])) }

// run is the whole CLI. Exit codes: 0 done, 1 failed, 2 the command line
// itself is wrong (nothing was done).
func run(args []string) int {
	vs := verbs()
	if code, done := topLevel(args, vs); done {
		return code
	}
	v := vs[args[0]]
	fs := v.flags()
	fs.SetOutput(io.Discard)
	if err := checkDashes(args[1:], fs); err != nil {
		return usageFail(args[0], err)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printVerbHelp(os.Stdout, args[0], v)
			return 0
		}
		return usageFail(args[0], suggestFlag(err, fs))
	}
	if err := v.run(fs.Args()); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return usageFail(args[0], err)
		}
		fmt.Fprintf(os.Stderr, "airgap %s: %s\n", args[0], dist.PrintableLines(err.Error()))
		return 1
	}
	return 0
}

func usageFail(name string, err error) int {
	fmt.Fprintf(os.Stderr, "airgap %s: %s\nhint: run 'airgap help %s'\n", name, dist.PrintableLines(err.Error()), name)
	return 2
}

// printJSON writes one indented JSON document to stdout.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// --- keygen ---

type keygenCmd struct {
	out          string
	name         string
	bits         int
	noPassphrase bool
}

func (c *keygenCmd) synopsis() string {
	return "create a site signing key: PREFIX.key.asc (private, 0600) and PREFIX.pub.asc"
}

func (c *keygenCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("keygen", pflag.ContinueOnError)
	fs.StringVar(&c.out, "out", "", "path prefix of the key files (required)")
	fs.StringVar(&c.name, "name", "", `user ID, e.g. "Site Ops <ops@site>"`)
	fs.IntVar(&c.bits, "bits", verify.DefaultRSABits, "RSA key size (at least 3072)")
	fs.BoolVar(&c.noPassphrase, "no-passphrase", false, "write the private key unprotected (needed when there is no terminal and no "+verify.PassphraseEnv+")")
	return fs
}

func (c *keygenCmd) run(args []string) error {
	if c.out == "" || len(args) > 0 {
		return usageError{"--out PREFIX is required and no arguments are taken"}
	}
	if c.bits < 3072 || c.bits > 8192 {
		return usageError{fmt.Sprintf("--bits %d: RSA site keys have 3072 to 8192 bits", c.bits)}
	}
	kf, err := verify.WriteKeyFiles(c.out, verify.KeyOptions{Name: c.name, RSABits: c.bits}, c.noPassphrase)
	if err != nil {
		return err
	}
	fmt.Printf("private key: %s (keep it on the connected side; mode 0600)\npublic key:  %s (give it to the offline site's keyring)\nkey ID:      %s\nfingerprint: %s\n",
		kf.Private, kf.Public, verify.KeyID(kf.Entity), verify.Fingerprint(kf.Entity))
	if kf.Unprotected {
		fmt.Fprintf(os.Stderr, "warning: %s is NOT protected by a passphrase: anyone who copies it can sign bundles your site trusts\n", kf.Private)
	}
	return nil
}

// --- verify ---

type verifyCmd struct {
	keyring string
	asJSON  bool
}

func (c *verifyCmd) synopsis() string {
	return "check a bundle's signature and every digest, writing nothing"
}

func (c *verifyCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("verify", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON")
	return fs
}

func (c *verifyCmd) run(args []string) error {
	if c.keyring == "" || len(args) != 1 {
		return usageError{"usage: airgap verify --keyring FILE BUNDLE"}
	}
	rep := bundle.Report{File: args[0]}
	err := func() error {
		kr, err := verify.ReadKeyringFile(c.keyring)
		if err != nil {
			return err
		}
		f, err := bundle.Open(args[0], kr)
		if err != nil {
			return err
		}
		defer f.Close()
		rep.Parts = f.Parts
		return progress.Stream(os.Stderr, "verify "+filepath.Base(args[0]), f.Size, func(n *progress.Counter) error {
			return bundle.Check(n.Reader(f), kr, &rep)
		})
	}()
	rep.OK = err == nil
	if err != nil {
		rep.Error = err.Error()
	}
	if c.asJSON {
		printJSON(rep)
		if err != nil {
			return errors.New("verification failed")
		}
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Print(rep.Text())
	return nil
}

// --- import ---

type importCmd struct {
	keyring string
	storeD  string
	wait    bool
	asJSON  bool
}

func (c *importCmd) synopsis() string {
	return "check a bundle and add it to the content-addressed store, all or nothing"
}

func (c *importCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("import", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.storeD, "store", "", "store directory (required; created if absent)")
	fs.BoolVar(&c.wait, "wait", false, "wait for a running import to finish instead of failing")
	fs.BoolVar(&c.asJSON, "json", false, "print what was added and what was already there as JSON")
	return fs
}

func (c *importCmd) run(args []string) error {
	if c.keyring == "" || c.storeD == "" || len(args) != 1 {
		return usageError{"usage: airgap import --keyring FILE --store DIR BUNDLE"}
	}
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	f, err := bundle.Open(args[0], kr)
	if err != nil {
		return fmt.Errorf("%s: %w\nthe store was not changed", args[0], err)
	}
	defer f.Close()
	var res *store.ImportResult
	err = progress.Stream(os.Stderr, "import "+filepath.Base(args[0]), f.Size, func(n *progress.Counter) (err error) {
		res, err = store.Import(c.storeD, n.Reader(f), store.ImportOptions{Keyring: kr, Wait: c.wait})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err) // says whether the store changed
	}
	if c.asJSON {
		return printJSON(res.Report(args[0]))
	}
	res.WriteText(os.Stdout)
	return nil
}

// --- inventory ---

type inventoryCmd struct {
	storeD string
	asJSON bool
}

func (c *inventoryCmd) synopsis() string {
	return "list what a store serves and the bundles imported into it"
}

func (c *inventoryCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("inventory", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (usable as 'airgap export --have')")
	return fs
}

func (c *inventoryCmd) run(args []string) error {
	if c.storeD == "" || len(args) != 0 {
		return usageError{"usage: airgap inventory --store DIR"}
	}
	inv, err := store.LoadInventory(c.storeD)
	if err != nil {
		return err
	}
	if c.asJSON {
		return printJSON(inv)
	}
	inv.WriteText(os.Stdout, c.storeD)
	return nil
}

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
	// operations (issue 13): see server/config.go and server/ops.go
	configFile, logFormat, metricsListen string
	trustedProxies                       []string
	maxConns, maxConnsPerIP              int // server/conns.go
	sendTimeout                          string
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
	fs.StringSliceVar(&c.trustedProxies, "trusted-proxy", nil, "believe X-Forwarded-For from these addresses or CIDR prefixes (repeatable)")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "serve Prometheus /metrics over plain HTTP on this address (main: on the main TLS listener, to any client; default: none)")
	fs.IntVar(&c.maxConns, "max-conns", server.DefaultMaxConns, "client connections open at once; more are closed at accept (0: no cap)")
	fs.IntVar(&c.maxConnsPerIP, "max-conns-per-ip", server.DefaultMaxConnsPerIP, "connections one client address (IPv6: /64) holds at once; --trusted-proxy addresses are exempt (0: no cap)")
	fs.StringVar(&c.sendTimeout, "send-timeout", "60s", "close a connection whose client reads nothing for this long (0: never)")
	fs.StringVar(&c.configFile, "config", "", "HCL file with the same settings as these flags (flags win; see README)")
	fs.BoolVar(&c.checkConfig, "check-config", false, "validate the configuration, print the effective settings and exit")
	c.fs = fs
	return fs
}

func (c *serveCmd) run(args []string) error {
	if len(args) != 0 {
		return usageError{"usage: airgap serve --store DIR [--listen ADDR] [--hostname NAME]... [--config FILE]"}
	}
	cfg, err := server.LoadServeConfig(c.fs, c.configFile, os.Getenv)
	if err != nil {
		return usageError{err.Error()}
	}
	if c.checkConfig {
		return cfg.WriteHCL(os.Stdout)
	}
	level := new(slog.LevelVar)
	lv, _ := cfg.Level()
	level.Set(lv)
	log, _ := server.NewLogger(os.Stderr, cfg.LogFormat, level)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, serveConfig{
		Store: cfg.Store, Listen: cfg.Listen, Hostnames: cfg.Hostname, Log: log, TLS: cfg.TLSOptions(log),
		Config: cfg, Level: level,
	})
}

type serveConfig struct {
	Store     string
	Listen    string
	Hostnames []string
	TLS       server.TLSOptions
	Log       *slog.Logger
	Ready     func(addr string) // called once listening (tests)
	Config    *server.ServeConfig
	Level     *slog.LevelVar
}

func serve(ctx context.Context, cfg serveConfig) error {
	start := time.Now()
	if os.Getenv("GOGC") == "" {
		// The live heap is small (the catalog), so at the default GOGC=100
		// the collector runs many times a second under load. 400 measured
		// +14% metadata requests/s (median of 5 alternating wrk runs) for
		// a heap of at most about five times the catalog's.
		debug.SetGCPercent(400)
	}
	st, err := store.Open(cfg.Store)
	if err != nil {
		return err
	}
	names := append([]string{}, cfg.Hostnames...)
	if len(names) == 0 {
		names = append(names, "localhost")
	}
	names = append(names, server.ListenAddrs(cfg.Listen)...)
	cfg.TLS.Dir, cfg.TLS.Names = store.TLSDir(cfg.Store), dedupe(names)
	tlsSetup, err := server.SetupTLS(ctx, cfg.TLS)
	if err != nil {
		return err
	}
	defer tlsSetup.Stop()
	srv := server.New(st, server.Options{Logger: cfg.Log, CAPEM: tlsSetup.CAPEM})
	ops, err := server.StartOps(ctx, server.OpsOptions{Config: cfg.Config, Store: st, TLS: tlsSetup, Level: cfg.Level, Log: cfg.Log, Version: Version})
	if err != nil {
		return err
	}
	hs := server.NewHTTPServer(ops.Handler(srv), cfg.Log)
	hs.TLSConfig = tlsSetup.Config
	server.HTTP1Only(hs.TLSConfig)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	ln = ops.Listener(ln)
	go st.Watch(ctx, time.Second, func(ix *store.Index, err error) {
		if err != nil {
			cfg.Log.Error("reloading the store index; still serving the previous catalog", "err", err)
			return
		}
		srv.Warm()
		cfg.Log.Info("catalog reloaded", "provider_versions", len(ix.Catalog.Providers), "module_versions", len(ix.Catalog.Modules))
	})
	cat := st.Catalog()
	cfg.Log.Info("serving", "addr", ln.Addr().String(), "names", strings.Join(cfg.TLS.Names, ","), "tls", cfg.TLS.Mode,
		"provider_versions", len(cat.Providers), "module_versions", len(cat.Modules), "startup", time.Since(start).Round(time.Millisecond))
	warnEmpty(cfg.Log, cfg.Store, cat)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	ops.Ready()
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	ops.Stopping()
	cfg.Log.Info("shutting down; waiting up to 30s for downloads in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// warnEmpty says at start that an empty store serves nothing (clients
// would fall through to 404s and, with a mirror config, fail).
func warnEmpty(log *slog.Logger, dir string, cat *dist.Catalog) {
	if len(cat.Providers)+len(cat.Modules) == 0 {
		log.Warn("the store is empty: every request will be answered 404 until a bundle is imported", "hint", "airgap import --keyring site.pub.asc --store "+dir+" BUNDLE (picked up within 2s, no restart)")
	}
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// --- healthcheck ---

type healthcheckCmd struct{ opt server.HealthCheckOptions }

func (c *healthcheckCmd) synopsis() string {
	return "ask a running appliance's /healthz (container health checks; exit 0 when healthy)"
}

func (c *healthcheckCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("healthcheck", pflag.ContinueOnError)
	fs.StringVar(&c.opt.URL, "url", "https://127.0.0.1:8443/healthz", "the appliance's /healthz URL")
	fs.StringVar(&c.opt.CAFile, "ca", "", "PEM CA to trust (e.g. STORE/tls/ca/ca.pem); default the system roots")
	fs.StringVar(&c.opt.ServerName, "server-name", "", "verify the certificate for this name instead of the URL's host")
	fs.DurationVar(&c.opt.Timeout, "timeout", 5*time.Second, "give up after this long")
	return fs
}

func (c *healthcheckCmd) run(args []string) error {
	if len(args) != 0 {
		return usageError{"usage: airgap healthcheck [--url URL] [--ca FILE]"}
	}
	return server.HealthCheck(context.Background(), c.opt)
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
	if c.storeD == "" || len(args) != 0 {
		return usageError{"usage: airgap ca --store DIR"}
	}
	if _, err := os.Stat(c.storeD); err != nil {
		return fmt.Errorf("%w\nhint: give the store 'airgap serve' uses; 'airgap import --keyring KEYRING --store DIR BUNDLE' creates one", err)
	}
	ca, err := server.LoadOrCreateCA(store.TLSDir(c.storeD))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "SHA-256 fingerprint: %s\n", server.CAFingerprint(ca.Cert))
	os.Stdout.Write(ca.PEM)
	return nil
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
	if c.storeD == "" || c.to == "" || len(args) != 0 {
		return usageError{"usage: airgap push --store DIR --to REGISTRY[/PREFIX]"}
	}
	opt := oci.PushOptions{Target: c.to, Jobs: c.jobs, Username: c.username}
	if c.username != "" {
		p, err := oci.Password(c.passwordStdin, os.Stdin)
		if err != nil {
			return err
		}
		opt.Password = p
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return oci.PushStore(ctx, c.storeD, opt, c.json, os.Stdout)
}

// --- client-config ---

type clientConfigCmd struct {
	url    string
	storeD string
	tool   string
	mode   string
}

func (c *clientConfigCmd) synopsis() string {
	return "print a terraform/tofu CLI config that points every origin at the appliance"
}

func (c *clientConfigCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("client-config", pflag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "the appliance's base URL, e.g. https://airgap.site:8443/ (required)")
	fs.StringVar(&c.storeD, "store", "", "read the origins from this store instead of asking the server")
	fs.StringVar(&c.tool, "tool", "terraform", "terraform or tofu")
	fs.StringVar(&c.mode, "mode", "registry", "registry (host overrides; best lock files), mirror (network mirror) or oci (OpenTofu oci_mirror; with --tool tofu)")
	return fs
}

func (c *clientConfigCmd) run(args []string) error {
	if c.url == "" || len(args) != 0 {
		return usageError{"usage: airgap client-config --url https://HOST:PORT/ [--store DIR]"}
	}
	if c.tool != "terraform" && c.tool != "tofu" {
		return usageError{"--tool must be terraform or tofu"}
	}
	opt := server.ClientConfigOptions{URL: c.url, Tool: c.tool, Mode: c.mode}
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
	} else {
		doc, err := server.FetchOrigins(opt.URL)
		if err != nil {
			return err
		}
		opt.Origins = doc.Origins
	}
	if len(opt.Origins) == 0 {
		return errors.New("the appliance serves nothing yet, so the config would send terraform to the internet\nhint: import a bundle first: airgap import --keyring site.pub.asc --store DIR BUNDLE")
	}
	return server.WriteClientConfig(os.Stdout, opt)
}

// --- export ---

type exportCmd struct {
	manifest    string
	from        string
	signKey     string
	out         string
	platforms   []string
	jobs        int
	cache       string
	dryRun      bool
	noDeps      bool
	compression string
	split       string
	since       string
	have        string
	allowEmpty  bool
	asJSON      bool
	maxPackage  string
	maxModule   string
}

func (c *exportCmd) synopsis() string {
	return "resolve, download and verify providers and modules into one signed bundle"
}

func (c *exportCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("export", pflag.ContinueOnError)
	fs.StringVar(&c.manifest, "manifest", "", "HCL file saying what to export")
	fs.StringVar(&c.from, "from", "", "derive what to export from this Terraform/OpenTofu project (and its .terraform.lock.hcl)")
	fs.StringVar(&c.signKey, "sign-key", "", "site private key (from 'airgap keygen') that signs the bundle (required unless --dry-run)")
	fs.StringVar(&c.out, "out", "", "bundle file to write (required unless --dry-run)")
	fs.StringSliceVar(&c.platforms, "platform", nil, "os_arch to export (repeatable; overrides the manifest's platforms)")
	fs.IntVar(&c.jobs, "jobs", 8, "parallel downloads")
	fs.StringVar(&c.cache, "cache", "", "download cache (default: the user cache dir/airgap)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "resolve and print the plan (module dependencies included) without downloading provider packages")
	fs.BoolVar(&c.noDeps, "no-deps", false, "do not follow the modules and providers that exported modules need")
	fs.StringVar(&c.compression, "compression", "zstd", "zstd or none")
	fs.StringVar(&c.split, "split", "", "also split the bundle into volumes of at most SIZE (4GiB, 700MB, fat32, dvd, …)")
	fs.StringVar(&c.since, "since", "", "write a delta: carry only blobs that this previous bundle (or split set) lacks")
	fs.StringVar(&c.have, "have", "", "write a delta: carry only blobs missing from this 'airgap inventory --json' of the offline store")
	fs.BoolVar(&c.allowEmpty, "allow-empty", false, "write a bundle even if the manifest or project asks for nothing")
	fs.BoolVar(&c.asJSON, "json", false, "print the plan (--dry-run) or the result as JSON on stdout")
	fs.StringVar(&c.maxPackage, "max-package-size", "1GiB", "refuse a provider package larger than SIZE (the download is cut off there)")
	fs.StringVar(&c.maxModule, "max-module-size", "256MiB", "refuse a module archive downloaded over HTTP larger than SIZE")
	return fs
}

// exportPlan is an export's checked command line.
type exportPlan struct {
	req       *export.Request
	comp      bundle.Compression
	splitSize int64
	modTime   time.Time
	key       *openpgp.Entity
	cache     string
	delta     *export.DeltaBase
	maxPkg    int64
	maxMod    int64
}

// check validates every flag and input before anything is fetched.
func (c *exportCmd) check(args []string) (p *exportPlan, err error) {
	p = &exportPlan{}
	switch {
	case len(args) != 0 || (c.manifest == "") == (c.from == ""):
		return nil, usageError{"give exactly one of --manifest FILE or --from DIR"}
	case !c.dryRun && (c.signKey == "" || c.out == ""):
		return nil, usageError{"--sign-key and --out are required (or use --dry-run)"}
	case c.since != "" && c.have != "":
		return nil, usageError{"give at most one of --since and --have"}
	case c.jobs < 1 || c.jobs > 64:
		return nil, usageError{fmt.Sprintf("--jobs %d: give 1 to 64 parallel downloads", c.jobs)}
	}
	if c.out != "" {
		if fi, err := os.Stat(filepath.Dir(c.out)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--out %s: the directory %s does not exist\nhint: create it first; nothing was downloaded", c.out, filepath.Dir(c.out))
		}
	}
	if p.comp, err = bundle.ParseCompression(c.compression); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.split != "" {
		if p.splitSize, err = bundle.ParseSize(c.split); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	if p.maxPkg, err = bundle.ParseSize(c.maxPackage); err != nil {
		return nil, usageError{"--max-package-size: " + err.Error()}
	}
	if p.maxMod, err = bundle.ParseSize(c.maxModule); err != nil {
		return nil, usageError{"--max-module-size: " + err.Error()}
	}
	if err := export.CheckPlatforms(c.platforms); err != nil {
		return nil, usageError{err.Error()}
	}
	if p.modTime, err = bundle.SourceDate(); err != nil {
		return nil, err
	}
	if p.req, err = export.LoadRequest(c.manifest, c.from, c.platforms, c.allowEmpty); err != nil {
		return nil, err
	}
	p.req.NoDeps = c.noDeps
	if c.signKey != "" {
		if p.key, err = verify.ReadSigningKeyFile(c.signKey); err != nil {
			return nil, err
		}
	}
	if !c.dryRun && (c.since != "" || c.have != "") {
		if p.delta, err = export.ReadDeltaBase(c.since, c.have, p.key); err != nil {
			return nil, err
		}
	}
	p.cache, err = export.CacheDir(c.cache)
	return p, err
}

func (c *exportCmd) run(args []string) error {
	p, err := c.check(args)
	if err != nil {
		return err
	}
	creds, err := registry.LoadCredentials()
	if err != nil {
		return fmt.Errorf("reading the CLI config for credentials: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	client := registry.New(registry.Options{Credentials: creds})
	prog := &export.Progress{}
	line := progress.Start(os.Stderr, prog.Status(client.Received.Load))
	res, err := export.Run(ctx, p.req, export.Options{
		Client: client, CacheDir: p.cache, Jobs: c.jobs,
		SiteKey: p.key, DryRun: c.dryRun, Log: line.Logf, Progress: prog,
		MaxPackageSize: p.maxPkg, MaxModuleSize: p.maxMod,
	})
	line.Stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w\nhint: run the same command again; verified downloads are kept in %s and partial ones resume", err, p.cache)
		}
		return err
	}
	sum := res.Summarize(c.dryRun, time.Since(start))
	if !c.dryRun {
		ix, err := export.WriteBundle(res, sum, export.WriteOptions{Out: c.out, Key: p.key, Tool: "airgap " + Version,
			Compression: p.comp, ModTime: p.modTime, Delta: p.delta, SplitSize: p.splitSize, Log: line.Logf})
		if err != nil {
			return err
		}
		sum.Seconds = time.Since(start).Round(time.Millisecond).Seconds()
		if ix != nil && !c.asJSON {
			ix.WriteText(os.Stdout, c.out)
		}
	}
	if c.asJSON {
		return printJSON(sum)
	}
	fmt.Print(sum.Text())
	return nil
}

// --- split / join ---

type splitCmd struct {
	size    string
	signKey string
	asJSON  bool
}

func (c *splitCmd) synopsis() string {
	return "split an existing bundle into signed volumes (BUNDLE.000 index, BUNDLE.001…)"
}

func (c *splitCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("split", pflag.ContinueOnError)
	fs.StringVar(&c.size, "size", "fat32", "largest part: e.g. 4GiB, 700MB, or fat32, dvd, dvd-dl, bd, cd")
	fs.StringVar(&c.signKey, "sign-key", "", "site private key that signs the parts index (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print the signed parts index as JSON")
	return fs
}

func (c *splitCmd) run(args []string) error {
	if c.signKey == "" || len(args) != 1 {
		return usageError{"usage: airgap split --size SIZE --sign-key KEY BUNDLE"}
	}
	size, err := bundle.ParseSize(c.size)
	if err != nil {
		return usageError{err.Error()}
	}
	fi, err := os.Stat(args[0])
	if err != nil {
		return err
	}
	at, err := bundle.SourceDate()
	if err != nil {
		return err
	}
	key, err := verify.ReadSigningKeyFile(c.signKey)
	if err != nil {
		return err
	}
	var ix *bundle.PartsIndex
	err = progress.Stream(os.Stderr, "split "+filepath.Base(args[0]), fi.Size(), func(n *progress.Counter) (err error) {
		ix, err = bundle.SplitFileCounting(args[0], size, key, at, n)
		return err
	})
	if err != nil {
		return err
	}
	if c.asJSON {
		return printJSON(ix)
	}
	ix.WriteText(os.Stdout, args[0])
	return nil
}

type joinCmd struct {
	keyring string
	out     string
	asJSON  bool
}

func (c *joinCmd) synopsis() string {
	return "check a split set against its signed index and join it into one bundle file"
}

func (c *joinCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.out, "out", "", "bundle file to write (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON")
	return fs
}

func (c *joinCmd) run(args []string) error {
	if c.keyring == "" || c.out == "" || len(args) != 1 {
		return usageError{"usage: airgap join --keyring FILE --out BUNDLE PART"}
	}
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	rc, ix, err := bundle.OpenSet(args[0], kr)
	if err != nil {
		return err
	}
	defer rc.Close()
	err = progress.Stream(os.Stderr, "join "+filepath.Base(c.out), ix.Size, func(n *progress.Counter) error {
		return bundle.CreateAtomic(c.out, func(f *os.File) error { _, err := io.Copy(f, n.Reader(rc)); return err })
	})
	if err != nil {
		return err
	}
	if c.asJSON {
		return printJSON(map[string]any{"ok": true, "out": c.out, "parts": len(ix.Parts), "size": ix.Size, "sha256": ix.Digest.Hex(), "bundle": ix.Bundle})
	}
	fmt.Printf("joined %d parts into %s (%s, sha256 %s)\n", len(ix.Parts), c.out, progress.Size(ix.Size), ix.Digest.Hex())
	return nil
}
