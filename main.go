// Command airgap carries Terraform and OpenTofu providers and modules into
// networks with no internet, and serves them there. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist/export"
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
	}
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	vs := verbs()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(os.Stdout, vs)
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Println("airgap", Version)
		return 0
	}
	if args[0] == "help" {
		if len(args) > 1 {
			if v, ok := vs[args[1]]; ok {
				printVerbHelp(os.Stdout, args[1], v)
				return 0
			}
		}
		usage(os.Stdout, vs)
		return 0
	}
	v, ok := vs[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "airgap: unknown command %q\nhint: run 'airgap help' for the list\n", args[0])
		return 2
	}
	fs := v.flags()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printVerbHelp(os.Stdout, args[0], v)
			return 0
		}
		fmt.Fprintf(os.Stderr, "airgap %s: %v\nhint: run 'airgap help %s'\n", args[0], err, args[0])
		return 2
	}
	if err := v.run(fs.Args()); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "airgap %s: %v\nhint: run 'airgap help %s'\n", args[0], err, args[0])
			return 2
		}
		fmt.Fprintf(os.Stderr, "airgap %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer, vs map[string]verb) {
	fmt.Fprintf(w, "airgap %s: carry Terraform/OpenTofu providers and modules into air-gapped networks\n\nUsage: airgap COMMAND [flags]\n\nCommands:\n", Version)
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, vs[n].synopsis())
	}
	fmt.Fprintf(w, "\nRun 'airgap help COMMAND' for a command's flags. 'airgap --version' prints the version.\n")
}

func printVerbHelp(w io.Writer, name string, v verb) {
	fmt.Fprintf(w, "airgap %s: %s\n\nFlags:\n%s", name, v.synopsis(), v.flags().FlagUsages())
}

// --- keygen ---

type keygenCmd struct {
	out  string
	name string
	bits int
	fs   *pflag.FlagSet
}

func (c *keygenCmd) synopsis() string {
	return "create a site signing key: PREFIX.key.asc (private, 0600) and PREFIX.pub.asc"
}

func (c *keygenCmd) flags() *pflag.FlagSet {
	c.fs = pflag.NewFlagSet("keygen", pflag.ContinueOnError)
	c.fs.StringVar(&c.out, "out", "", "path prefix of the key files (required)")
	c.fs.StringVar(&c.name, "name", "", `user ID, e.g. "Site Ops <ops@site>"`)
	c.fs.IntVar(&c.bits, "bits", verify.DefaultRSABits, "RSA key size (at least 3072)")
	return c.fs
}

func (c *keygenCmd) run(args []string) error {
	if c.out == "" || len(args) > 0 {
		return usageError{"--out PREFIX is required and no arguments are taken"}
	}
	privPath, pubPath := c.out+".key.asc", c.out+".pub.asc"
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s already exists; refusing to overwrite a key\nhint: choose another --out prefix or move the old key away", p)
		}
	}
	if err := os.MkdirAll(filepath.Dir(privPath), 0o700); err != nil {
		return err
	}
	pass, err := passphrase(true)
	if err != nil {
		return err
	}
	priv, err := os.OpenFile(privPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			priv.Close()
			os.Remove(privPath)
			os.Remove(pubPath)
		}
	}()
	pub, err := os.OpenFile(pubPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer pub.Close()
	e, err := verify.GenerateKey(priv, pub, verify.KeyOptions{Name: c.name, RSABits: c.bits, Passphrase: pass})
	if err != nil {
		return err
	}
	if err := priv.Sync(); err != nil {
		return err
	}
	if err := priv.Close(); err != nil {
		return err
	}
	if err := pub.Close(); err != nil {
		return err
	}
	ok = true
	fmt.Printf("private key: %s (keep it on the connected side; mode 0600)\npublic key:  %s (give it to the offline site's keyring)\nkey ID:      %s\nfingerprint: %s\n",
		privPath, pubPath, verify.KeyID(e), verify.Fingerprint(e))
	return nil
}

// passphrase reads AIRGAP_PASSPHRASE, or prompts on a terminal. For keygen
// (confirm) an empty answer means no passphrase.
func passphrase(confirm bool) ([]byte, error) {
	if p, ok := os.LookupEnv("AIRGAP_PASSPHRASE"); ok {
		return []byte(p), nil
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return nil, nil
	}
	fmt.Fprint(os.Stderr, "passphrase for the private key (empty for none): ")
	p, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(os.Stderr)
	if err != nil || !confirm || len(p) == 0 {
		return p, err
	}
	fmt.Fprint(os.Stderr, "again: ")
	p2, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return nil, err
	}
	if string(p) != string(p2) {
		return nil, errors.New("the passphrases differ")
	}
	return p, nil
}

func readSigningKey(path string) (*openpgp.Entity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := verify.ReadSigningKey(f, func() ([]byte, error) {
		p, err := passphrase(false)
		if err == nil && len(p) == 0 {
			return nil, errors.New("the private key is encrypted\nhint: set AIRGAP_PASSPHRASE or run on a terminal")
		}
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return e, nil
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

type verifyReport struct {
	OK         bool          `json:"ok"`
	Bundle     string        `json:"bundle"`
	File       string        `json:"file"`
	Signer     verify.Signer `json:"signer"`
	Compressed bool          `json:"compressed"`
	Tool       string        `json:"tool"`
	Delta      *bundle.Delta `json:"delta,omitempty"`
	Providers  int           `json:"provider_versions"`
	Packages   int           `json:"provider_packages"`
	Modules    int           `json:"module_versions"`
	Blobs      int           `json:"blobs"`
	Omitted    int           `json:"blobs_omitted"`
	Parts      int           `json:"parts,omitempty"`
	Bytes      int64         `json:"bytes"`
	Error      string        `json:"error,omitempty"`
}

func (c *verifyCmd) run(args []string) error {
	if c.keyring == "" || len(args) != 1 {
		return usageError{"usage: airgap verify --keyring FILE BUNDLE"}
	}
	rep := verifyReport{File: args[0]}
	err := func() error {
		kr, err := verify.ReadKeyringFile(c.keyring)
		if err != nil {
			return err
		}
		f, parts, err := openBundle(args[0], kr)
		if err != nil {
			return err
		}
		defer f.Close()
		rep.Parts = parts
		br, err := bundle.NewReader(f, kr)
		if err != nil {
			return err
		}
		defer br.Close()
		m := br.Manifest()
		rep.Bundle, rep.Signer, rep.Compressed, rep.Tool, rep.Delta = string(br.ID()), br.Signer(), br.Compressed(), m.Tool, m.Delta
		rep.Providers, rep.Modules = len(m.Catalog.Providers), len(m.Catalog.Modules)
		for _, p := range m.Catalog.Providers {
			rep.Packages += len(p.Packages)
		}
		rep.Omitted = len(m.Blobs) - len(m.Carried())
		for {
			b, rd, err := br.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, rd)
			if err != nil {
				return err
			}
			rep.Blobs++
			rep.Bytes += n
			_ = b
		}
	}()
	rep.OK = err == nil
	if err != nil {
		rep.Error = err.Error()
	}
	if c.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
		if err != nil {
			return errors.New("verification failed")
		}
		return nil
	}
	if err != nil {
		return err
	}
	kind := "full bundle"
	if rep.Delta != nil {
		kind = "delta bundle (base " + rep.Delta.Base + "; " + fmt.Sprint(rep.Omitted) + " blobs omitted, the offline store must already have them)"
	}
	if rep.Parts > 0 {
		kind += fmt.Sprintf(", split into %d parts (each checked against the signed index)", rep.Parts)
	}
	fmt.Printf("OK: %s\n  kind:      %s\n  bundle:    %s\n  signed by: %s\n  content:   %d provider versions (%d packages), %d module versions\n  blobs:     %d, %s, all digests match\n",
		args[0], kind, rep.Bundle, rep.Signer, rep.Providers, rep.Packages, rep.Modules, rep.Blobs, humanBytes(rep.Bytes))
	return nil
}

// --- import ---

type importCmd struct {
	keyring string
	storeD  string
	wait    bool
}

func (c *importCmd) synopsis() string {
	return "check a bundle and add it to the content-addressed store, all or nothing"
}

func (c *importCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("import", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.storeD, "store", "", "store directory (required; created if absent)")
	fs.BoolVar(&c.wait, "wait", false, "wait for a running import to finish instead of failing")
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
	f, _, err := openBundle(args[0], kr)
	if err != nil {
		return fmt.Errorf("%s: %w\nthe store was not changed", args[0], err)
	}
	defer f.Close()
	res, err := store.Import(c.storeD, f, store.ImportOptions{Keyring: kr, Wait: c.wait})
	if err != nil {
		return fmt.Errorf("%s: %w\nthe store was not changed", args[0], err)
	}
	if res.Cleaned > 0 {
		fmt.Printf("removed %d leftover(s) of an interrupted import\n", res.Cleaned)
	}
	if res.Unchanged {
		fmt.Printf("already imported: bundle %s (signed by %s); nothing changed\n", res.Bundle.Short(), res.Signer)
		return nil
	}
	fmt.Printf("imported bundle %s\n  signed by: %s\n  new blobs: %d (%s); already present: %d\n",
		res.Bundle.Short(), res.Signer, res.BlobsAdded, humanBytes(res.BytesAdded), res.BlobsShared)
	if len(res.Added) == 0 {
		fmt.Println("  the catalog already had everything in this bundle")
	}
	for _, a := range res.Added {
		fmt.Println("  added", a)
	}
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

// Inventory is the JSON 'airgap inventory --json' prints.
type Inventory struct {
	store.Index
	Blobs []verify.Digest `json:"blobs"`
}

func (c *inventoryCmd) run(args []string) error {
	if c.storeD == "" || len(args) != 0 {
		return usageError{"usage: airgap inventory --store DIR"}
	}
	ix, blobs, err := store.ReadInventory(c.storeD)
	if err != nil {
		return err
	}
	if c.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", " ")
		return enc.Encode(Inventory{Index: *ix, Blobs: blobs})
	}
	fmt.Printf("store %s: %d provider versions, %d module versions, %d blobs\n\nProviders:\n", c.storeD, len(ix.Catalog.Providers), len(ix.Catalog.Modules), len(blobs))
	for _, p := range ix.Catalog.Providers {
		plats := make([]string, 0, len(p.Packages))
		for _, pk := range p.Packages {
			plats = append(plats, pk.Platform())
		}
		signed := ""
		if p.SiteSigned {
			signed = " (re-signed by the site key)"
		}
		fmt.Printf("  %-50s %-10s %s%s\n", p.Addr(), p.Version, strings.Join(plats, " "), signed)
	}
	fmt.Println("\nModules:")
	for _, m := range ix.Catalog.Modules {
		fmt.Printf("  %-50s %-10s %s\n", m.Addr(), m.Version, m.Source)
	}
	fmt.Println("\nImported bundles:")
	for _, e := range ix.Imports {
		kind := ""
		if e.Delta {
			kind = " delta"
		}
		fmt.Printf("  %s %s%s signer %s: %d blobs (%s) added, %d catalog changes\n",
			e.Time.Format("2006-01-02T15:04:05Z"), e.Bundle.Short(), kind, e.Signer.Fingerprint, e.BlobsAdded, humanBytes(e.BytesAdded), len(e.Added))
	}
	return nil
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
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
	fs.StringVar(&c.logLevel, "log-level", "info", "debug (logs every request), info, warn or error")
	return fs
}

func (c *serveCmd) run(args []string) error {
	if c.storeD == "" || len(args) != 0 {
		return usageError{"usage: airgap serve --store DIR [--listen ADDR] [--hostname NAME]..."}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return usageError{"--log-level: " + err.Error()}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, serveConfig{
		Store: c.storeD, Listen: c.listen, Hostnames: c.hostnames, Log: log,
		TLS: server.TLSOptions{Mode: c.tlsMode, ACMECA: c.acmeCA, ACMECARoot: c.acmeRoot, ACMEEmail: c.acmeEmail,
			ACMEHTTPPort: c.acmeHTTP, ACMETLSALPNPort: c.acmeALPN, CertFile: c.certFile, KeyFile: c.keyFile, Logger: log},
	})
}

type serveConfig struct {
	Store     string
	Listen    string
	Hostnames []string
	TLS       server.TLSOptions
	Log       *slog.Logger
	Ready     func(addr string) // called once listening (tests)
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
	hs := server.NewHTTPServer(logRequests(cfg.Log, srv), cfg.Log)
	hs.TLSConfig = tlsSetup.Config
	server.HTTP1Only(hs.TLSConfig)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
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
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	cfg.Log.Info("shutting down; waiting up to 30s for downloads in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
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

func logRequests(log *slog.Logger, h http.Handler) http.Handler {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: 200}
		t := time.Now()
		h.ServeHTTP(sw, r)
		log.Debug("request", "method", r.Method, "host", r.Host, "path", r.URL.Path, "status", sw.code, "dur", time.Since(t))
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(c int) { s.code = c; s.ResponseWriter.WriteHeader(c) }

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
		return err
	}
	ca, err := server.LoadOrCreateCA(store.TLSDir(c.storeD))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "SHA-256 fingerprint: %s\n", server.CAFingerprint(ca.Cert))
	os.Stdout.Write(ca.PEM)
	return nil
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
	fs.StringVar(&c.mode, "mode", "registry", "registry (host overrides; best lock files) or mirror (network mirror)")
	return fs
}

func (c *clientConfigCmd) run(args []string) error {
	if c.url == "" || len(args) != 0 {
		return usageError{"usage: airgap client-config --url https://HOST:PORT/ [--store DIR]"}
	}
	if c.tool != "terraform" && c.tool != "tofu" {
		return usageError{"--tool must be terraform or tofu"}
	}
	base, err := server.NormalizeBaseURL(c.url)
	if err != nil {
		return err
	}
	var origins []string
	if c.storeD != "" {
		st, err := store.Open(c.storeD)
		if err != nil {
			return err
		}
		origins = server.Origins(st.Catalog())
	} else {
		origins, err = fetchOrigins(base)
		if err != nil {
			return err
		}
	}
	return server.WriteClientConfig(os.Stdout, server.ClientConfigOptions{URL: base, Origins: origins, Tool: c.tool, Mode: c.mode})
}

func fetchOrigins(base string) ([]string, error) {
	cl := &http.Client{Timeout: 15 * time.Second}
	resp, err := cl.Get(base + "airgap/v1/origins")
	if err != nil {
		return nil, fmt.Errorf("asking the appliance for its origins: %w\nhint: trust its CA with SSL_CERT_FILE (get it with 'airgap ca'), or pass --store", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("asking the appliance for its origins: %s", resp.Status)
	}
	var doc server.OriginsDoc
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading the appliance's origins: %w", err)
	}
	return doc.Origins, nil
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
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the resolved plan without downloading packages")
	fs.BoolVar(&c.noDeps, "no-deps", false, "do not follow the modules and providers that exported modules need")
	fs.StringVar(&c.compression, "compression", "zstd", "zstd or none")
	fs.StringVar(&c.split, "split", "", "also split the bundle into volumes of at most SIZE (4GiB, 700MB, fat32, dvd, …)")
	fs.StringVar(&c.since, "since", "", "write a delta: carry only blobs that this previous bundle (or split set) lacks")
	fs.StringVar(&c.have, "have", "", "write a delta: carry only blobs missing from this 'airgap inventory --json' of the offline store")
	return fs
}

func (c *exportCmd) run(args []string) error {
	if len(args) != 0 || (c.manifest == "") == (c.from == "") {
		return usageError{"give exactly one of --manifest FILE or --from DIR"}
	}
	if !c.dryRun && (c.signKey == "" || c.out == "") {
		return usageError{"--sign-key and --out are required (or use --dry-run)"}
	}
	comp, err := bundle.ParseCompression(c.compression)
	if err != nil {
		return usageError{err.Error()}
	}
	if c.since != "" && c.have != "" {
		return usageError{"give at most one of --since and --have"}
	}
	var splitSize int64
	if c.split != "" {
		if splitSize, err = bundle.ParseSize(c.split); err != nil {
			return usageError{err.Error()}
		}
	}
	var modTime time.Time
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		var n int64
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
		}
		modTime = time.Unix(n, 0).UTC()
	}
	var req *export.Request
	if c.manifest != "" {
		req, err = export.ParseSpec(c.manifest, c.platforms)
	} else {
		req, err = export.FromProject(c.from, c.platforms)
	}
	if err != nil {
		return err
	}
	req.NoDeps = c.noDeps
	var key *openpgp.Entity
	if c.signKey != "" {
		if key, err = readSigningKey(c.signKey); err != nil {
			return err
		}
	}
	cache := c.cache
	if cache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no user cache dir (%v)\nhint: pass --cache DIR", err)
		}
		cache = filepath.Join(d, "airgap")
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
	disp := newProgressDisplay(os.Stderr, prog, &client.Received)
	res, err := export.Run(ctx, req, export.Options{
		Client: client, CacheDir: cache, Jobs: c.jobs,
		SiteKey: key, DryRun: c.dryRun, Log: disp.logf, Progress: prog,
	})
	disp.stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w\nhint: run the same command again; verified downloads are kept in %s and partial ones resume", err, cache)
		}
		return err
	}
	if c.dryRun {
		fmt.Println("plan (nothing downloaded):")
		for _, l := range res.Plan {
			fmt.Println(" ", l)
		}
		return nil
	}
	m := res.Manifest
	m.Tool = "airgap " + Version
	if !modTime.IsZero() {
		m.Created = &modTime
	}
	if c.since != "" || c.have != "" {
		base, err := deltaBase(c.since, c.have, key)
		if err != nil {
			return err
		}
		omitted := base.apply(m)
		fmt.Fprintf(os.Stderr, "delta against %s: %d of %d blobs are already on the offline side and are not carried\n", base.desc, omitted, len(m.Blobs))
	}
	if err := writeBundleFile(c.out, m, res.Files, key, bundle.WriterOptions{Compression: comp, ModTime: modTime}); err != nil {
		return err
	}
	fi, _ := os.Stat(c.out)
	n, total := m.Totals()

	fmt.Printf("wrote %s (%s): %d provider versions, %d module versions, %d blobs (%s); downloaded %s, %d packages from the cache, in %s\n",
		c.out, humanBytes(fi.Size()), len(m.Catalog.Providers), len(m.Catalog.Modules), n, humanBytes(total), humanBytes(res.Bytes), res.Cached, time.Since(start).Round(time.Millisecond))
	for _, w := range res.Warnings {
		fmt.Println("warning:", w)
	}
	if splitSize > 0 {
		ix, err := bundle.SplitFile(c.out, splitSize, key, modTime)
		if err != nil {
			return fmt.Errorf("splitting %s: %w (the whole bundle is kept)", c.out, err)
		}
		if err := os.Remove(c.out); err != nil {
			return err
		}
		printParts(c.out, ix)
	}
	return nil
}

// writeBundleFile writes the bundle through a temporary file next to out and
// renames it into place only when complete: no partial bundle is left.
func writeBundleFile(out string, m *bundle.Manifest, files map[verify.Digest]string, key *openpgp.Entity, opt bundle.WriterOptions) error {
	return createAtomic(out, func(f *os.File) error {
		bw, err := bundle.NewWriter(f, m, key, opt)
		if err != nil {
			return err
		}
		if err := bw.WriteFiles(files); err != nil {
			return err
		}
		return bw.Close()
	})
}

// createAtomic creates out through a temporary file in the same directory:
// fill, fsync, rename. If anything fails, nothing is left behind.
func createAtomic(out string, fill func(f *os.File) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}

// openBundle opens a bundle file, or a split set given any of its parts
// (checking every part against the signed index first). It never changes
// the files.
func openBundle(path string, kr openpgp.EntityList) (io.ReadCloser, int, error) {
	if bundle.IsSplitSet(path) {
		rc, ix, err := bundle.OpenSet(path, kr)
		if err != nil {
			return nil, 0, err
		}
		return rc, len(ix.Parts), nil
	}
	f, err := os.Open(path)
	if err != nil {
		if prefix, ok := bundle.SetPrefix(path); ok {
			return nil, 0, fmt.Errorf("%w: the index %s.000 is missing\nhint: copy every part, including .000", bundle.ErrParts, filepath.Base(prefix))
		}
		return nil, 0, err
	}
	return f, 0, nil
}

// --- split / join ---

type splitCmd struct {
	size    string
	signKey string
}

func (c *splitCmd) synopsis() string {
	return "split an existing bundle into signed volumes (BUNDLE.000 index, BUNDLE.001…)"
}

func (c *splitCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("split", pflag.ContinueOnError)
	fs.StringVar(&c.size, "size", "fat32", "largest part: e.g. 4GiB, 700MB, or fat32, dvd, dvd-dl, bd, cd")
	fs.StringVar(&c.signKey, "sign-key", "", "site private key that signs the parts index (required)")
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
	key, err := readSigningKey(c.signKey)
	if err != nil {
		return err
	}
	ix, err := bundle.SplitFile(args[0], size, key, sourceDate())
	if err != nil {
		return err
	}
	printParts(args[0], ix)
	return nil
}

func printParts(path string, ix *bundle.PartsIndex) {
	fmt.Printf("split %s (%s) into %d parts plus the signed index %s.000:\n", path, humanBytes(ix.Size), len(ix.Parts), filepath.Base(path))
	for _, p := range ix.Parts {
		fmt.Printf("  %s  %s  %s\n", p.Name, humanBytes(p.Size), p.Digest.Short())
	}
}

type joinCmd struct {
	keyring string
	out     string
}

func (c *joinCmd) synopsis() string {
	return "check a split set against its signed index and join it into one bundle file"
}

func (c *joinCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.out, "out", "", "bundle file to write (required)")
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
	if err := createAtomic(c.out, func(f *os.File) error { _, err := io.Copy(f, rc); return err }); err != nil {
		return err
	}
	fmt.Printf("joined %d parts into %s (%s, sha256 %s)\n", len(ix.Parts), c.out, humanBytes(ix.Size), ix.Digest.Hex())
	return nil
}

// sourceDate is SOURCE_DATE_EPOCH as a time, or zero.
func sourceDate() time.Time {
	var n int64
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &n); err == nil && n >= 0 {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Time{}
}

// deltaSource is what the offline side already has.
type deltaSource struct {
	desc    string
	base    string
	bundles []string
	have    map[verify.Digest]bool
}

// deltaBase reads the blobs of a previous bundle (--since, checked against
// the signing key) or of an offline store's inventory (--have).
func deltaBase(since, have string, key *openpgp.Entity) (*deltaSource, error) {
	ds := &deltaSource{have: map[verify.Digest]bool{}}
	if since != "" {
		var rc io.ReadCloser
		var err error
		if bundle.IsSplitSet(since) {
			rc, _, err = bundle.OpenSet(since, openpgp.EntityList{key})
		} else {
			rc, err = os.Open(since)
		}
		if err != nil {
			return nil, fmt.Errorf("--since: %w", err)
		}
		defer rc.Close()
		br, err := bundle.NewReader(rc, openpgp.EntityList{key})
		if err != nil {
			return nil, fmt.Errorf("--since %s: %w\nhint: --since takes a bundle signed by the same --sign-key", since, err)
		}
		defer br.Close()
		pm := br.Manifest()
		for _, b := range pm.Blobs {
			ds.have[b.Digest] = true
		}
		ds.base = string(br.ID())
		ds.desc = fmt.Sprintf("%s (bundle %s)", filepath.Base(since), br.ID().Short())
		ds.bundles = append([]string{filepath.Base(since) + " (" + string(br.ID()) + ")"}, baseBundles(pm)...)
		return ds, nil
	}
	b, err := os.ReadFile(have)
	if err != nil {
		return nil, fmt.Errorf("--have: %w", err)
	}
	var inv Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return nil, fmt.Errorf("--have %s: not an 'airgap inventory --json' document: %w", have, err)
	}
	for _, d := range inv.Blobs {
		ds.have[d] = true
	}
	ds.base = "inventory"
	ds.desc = fmt.Sprintf("the inventory %s (%d blobs)", filepath.Base(have), len(inv.Blobs))
	for _, e := range inv.Imports {
		ds.bundles = append(ds.bundles, string(e.Bundle))
	}
	return ds, nil
}

func baseBundles(m *bundle.Manifest) []string {
	if m.Delta == nil {
		return nil
	}
	return m.Delta.BaseBundles
}

// apply marks the blobs the base has as omitted and makes m a delta.
func (ds *deltaSource) apply(m *bundle.Manifest) int {
	n := 0
	for i := range m.Blobs {
		if ds.have[m.Blobs[i].Digest] {
			m.Blobs[i].Omitted = true
			n++
		}
	}
	m.Delta = &bundle.Delta{Base: ds.base, BaseBundles: ds.bundles}
	return n
}

// progressDisplay shows a live status line on a terminal (packages done of
// total, bytes and rate, the downloads under way) and plain log lines
// otherwise.
type progressDisplay struct {
	mu    sync.Mutex
	w     *os.File
	tty   bool
	prog  *export.Progress
	bytes *atomic.Int64
	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

func newProgressDisplay(w *os.File, prog *export.Progress, bytes *atomic.Int64) *progressDisplay {
	d := &progressDisplay{w: w, tty: term.IsTerminal(int(w.Fd())), prog: prog, bytes: bytes, start: time.Now(), done: make(chan struct{})}
	if d.tty {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-d.done:
					return
				case <-t.C:
					d.mu.Lock()
					d.draw()
					d.mu.Unlock()
				}
			}
		}()
	}
	return d
}

func (d *progressDisplay) draw() {
	total := d.prog.PackagesTotal.Load()
	if total == 0 {
		return
	}
	secs := time.Since(d.start).Seconds()
	b := d.bytes.Load()
	line := fmt.Sprintf("%d/%d packages  %s  %s/s", d.prog.PackagesDone.Load(), total, humanBytes(b), humanBytes(int64(float64(b)/max(secs, 0.001))))
	if act := d.prog.Active(); len(act) > 0 {
		line += "  ↓ " + strings.Join(act, ", ")
	}
	if width, _, err := term.GetSize(int(d.w.Fd())); err == nil && width > 4 && len([]rune(line)) > width-1 {
		line = string([]rune(line)[:width-2]) + "…"
	}
	fmt.Fprintf(d.w, "\r\033[K%s", line)
}

func (d *progressDisplay) logf(format string, a ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty {
		fmt.Fprint(d.w, "\r\033[K")
	}
	fmt.Fprintf(d.w, format+"\n", a...)
	if d.tty {
		d.draw()
	}
}

func (d *progressDisplay) stop() {
	close(d.done)
	d.wg.Wait()
	if d.tty {
		fmt.Fprint(d.w, "\r\033[K")
	}
}
