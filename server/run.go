package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/server/protocol"
)

// RunOptions configure Run: what 'airgap serve' resolved from its flags,
// configuration file and environment.
type RunOptions struct {
	Store     string
	Listen    string
	Hostnames []string
	TLS       certs.Options
	Log       *slog.Logger
	Ready     func(addr string) // called once listening (tests)
	Config    *ServeConfig
	Level     *slog.LevelVar
	LogOut    *ops.LogWriter // where Log writes, reopened by SIGHUP (nil: nothing to reopen)
	Version   string         // airgap's, for metrics
}

// Run serves the store at cfg.Store until ctx is done: it opens the store,
// sets up TLS, starts the operations side (metrics, reloads, sd_notify),
// listens, reloads the catalog within a second of an import, and on
// cancellation drains downloads in flight for up to 30 s.
func Run(ctx context.Context, cfg RunOptions) error {
	start := time.Now()
	if os.Getenv("GOGC") == "" {
		// The live heap is small (the catalog), so at the default GOGC=100
		// the collector runs many times a second under load. 400 measured
		// +14% metadata requests/s (median of 5 alternating wrk runs) for
		// a heap of at most about five times the catalog's.
		debug.SetGCPercent(400)
	}
	// A store in object storage is served from a private directory of
	// this replica's own: the index copied there when its ETag changes,
	// the blobs streamed from the bucket (objstore.Replica).
	var replica *objstore.Replica
	shown := cfg.Store // the store as given (a replica serves a directory of its own)
	if objstore.IsObject(cfg.Store) {
		addr := cfg.Store
		dir, rep, cleanup, err := objstore.StartReplica(ctx, addr, cfg.Log)
		if err != nil {
			return err
		}
		defer cleanup()
		cfg.Store, replica = dir, rep
		rep.Redirect = cfg.Config != nil && cfg.Config.ObjectRedirect == "on"
		cfg.Log.Info("serving a store in object storage", "store", addr, "poll", objstore.PollInterval.String())
	}
	st, err := store.Open(cfg.Store)
	if err != nil {
		return err
	}
	if replica != nil {
		cacheMax, _ := cfg.Config.objectCacheMax()
		st.SetRemote(replica, cacheMax)
		if cfg.TLS.Mode == certs.ModeLocal || cfg.TLS.Mode == "" {
			if err := shareLocalCA(ctx, replica.Client(), store.TLSDir(cfg.Store)); err != nil {
				return err
			}
		}
		if cfg.Config != nil && cfg.Config.Access != "" {
			if err := shareURLKeys(ctx, replica.Client(), store.TLSDir(cfg.Store)); err != nil {
				return err
			}
			go followURLKeys(ctx, replica.Client(), store.TLSDir(cfg.Store), cfg.Log)
		}
	}
	names := append([]string{}, cfg.Hostnames...)
	if len(names) == 0 {
		names = append(names, "localhost")
	}
	names = append(names, listenAddrs(cfg.Listen)...)
	cfg.TLS.Dir, cfg.TLS.Names = store.TLSDir(cfg.Store), dedupe(names)
	// The main listener first, so that a port in use fails before anything
	// is set up or logged; but with ACME after the certificates, whose
	// TLS-ALPN challenge may need the same port.
	var ln, metricsLn net.Listener
	if cfg.TLS.Mode != certs.ModeACME {
		if ln, err = listen("the main HTTPS listener", "listen", cfg.Config, cfg.Listen); err != nil {
			return err
		}
		defer ln.Close()
	}
	if m := metricsAddr(cfg.Config); m != "" {
		if metricsLn, err = listen("the metrics listener", "metrics-listen", cfg.Config, m); err != nil {
			return err
		}
		defer metricsLn.Close()
	}
	// Tells tools that would delete the store (the demo) that it is served.
	if release, err := store.HoldServing(cfg.Store); err == nil {
		defer release()
	} else {
		cfg.Log.Debug("cannot mark the store as served", "err", err)
	}
	tlsSetup, err := certs.New(ctx, cfg.TLS)
	if err != nil {
		return err
	}
	defer tlsSetup.Stop()
	ac, audit, err := openAccess(cfg, replica)
	if err != nil {
		return err
	}
	if audit != nil {
		defer audit.Close()
	}
	// Download counts: written once more after the downloads in flight
	// have drained (defers run after serveUntil returns).
	usage := usageFor(cfg.Store, cfg.Config, cfg.Log, replica)
	defer usage.Close()
	srv := New(st, Options{Logger: cfg.Log, CAPEM: tlsSetup.CAPEM, Access: ac, Tool: "airgap " + cfg.Version, Usage: usage})
	ops, err := startOps(ctx, opsOptions{Config: cfg.Config, Store: st, TLS: tlsSetup, Level: cfg.Level, Log: cfg.Log, LogOut: cfg.LogOut,
		Version: cfg.Version, Access: ac, Audit: audit, Replica: replica, MetricsListener: metricsLn})
	if err != nil {
		return err
	}
	if ac != nil {
		go ac.Watch(ctx)
	}
	hs := NewHTTPServer(ops.handler(srv), cfg.Log)
	hs.TLSConfig = tlsSetup.Config
	HTTP1Only(hs.TLSConfig)
	if ln == nil {
		if ln, err = listen("the main HTTPS listener", "listen", cfg.Config, cfg.Listen); err != nil {
			return err
		}
		defer ln.Close()
	}
	ln = ops.listener(ln)
	go watchCatalog(ctx, st, srv, cfg.Log)
	cat := st.Catalog()
	cfg.Log.Info("serving", "addr", ln.Addr().String(), "names", strings.Join(cfg.TLS.Names, ","), "tls", cfg.TLS.Mode,
		"provider_versions", len(cat.Providers), "module_versions", len(cat.Modules), "releases", len(cat.Releases), "startup_ms", time.Since(start).Milliseconds())
	warnEmpty(cfg.Log, shown, cat)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	ops.ready()
	return serveUntil(ctx, hs, ln, ops, cfg.Log)
}

// openAccess loads the access file and opens the audit log the
// configuration names (either may be nil).
// A replica of a store in a bucket keeps its sign-in state in the bucket
// (BucketLogins), shared with every other replica.
func openAccess(cfg RunOptions, replica *objstore.Replica) (*access.AccessControl, *access.AuditLog, error) {
	c := cfg.Config
	if c == nil {
		return nil, nil, nil
	}
	var ac *access.AccessControl
	if c.Access != "" {
		ttl, _ := c.urlTTL()
		var err error
		opt := access.AccessOptions{File: c.Access, TLSDir: store.TLSDir(cfg.Store), StateDir: store.StateDir(cfg.Store), URLTTL: ttl, Log: cfg.Log}
		if replica != nil {
			opt.Logins = BucketLogins(replica.Client())
		}
		ac, err = access.NewAccessControl(opt)
		if err != nil {
			return nil, nil, err
		}
		cfg.Log.Info("access control on", "access", c.Access, "tokens", ac.Current().Tokens(), "anonymous", ac.Current().Anonymous())
		if l := ac.LoginConfig(); l != nil {
			cfg.Log.Info("single sign-on on", "issuer", l.Issuer, "client_id", l.ClientID, "token_lifetime", l.TokenLifetime.String(),
				"redirect_uris", strings.Join(c.RedirectURIs(), " "))
		}
	}
	if c.AuditLog == "" {
		return ac, nil, nil
	}
	max, _ := c.auditMaxSize()
	log := cfg.Log
	audit, err := access.OpenAuditLog(c.AuditLog, max, c.AuditLogKeep, func(err error) {
		log.Error("writing the audit log; the download was served", "err", err)
	})
	return ac, audit, err
}

// metricsAddr is the address of the separate metrics listener, or "".
func metricsAddr(c *ServeConfig) string {
	if c == nil || c.MetricsListen == "" || c.MetricsListen == "off" || c.MetricsListen == metricsOnMain {
		return ""
	}
	return c.MetricsListen
}

// watchCatalog serves a new catalog within a second of an import.
func watchCatalog(ctx context.Context, st *store.Store, srv *Server, log *slog.Logger) {
	st.Watch(ctx, time.Second, func(ix *store.Index, err error) {
		if err != nil {
			log.Error("reloading the store index; still serving the previous catalog", "err", err)
			return
		}
		srv.warm()
		log.Info("catalog reloaded", "provider_versions", len(ix.Catalog.Providers), "module_versions", len(ix.Catalog.Modules))
	})
}

// serveUntil serves ln until ctx is done, then drains downloads in flight
// for up to 30 s.
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener, ops *opsLayer, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	ops.stopping()
	log.Info("shutting down; waiting up to 30s for downloads in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// warnEmpty says at start that an empty store serves nothing (clients
// would fall through to 404s and, with a mirror config, fail). A store of
// Terraform's or OpenTofu's own releases alone is not empty.
func warnEmpty(log *slog.Logger, dir string, cat *dist.Catalog) {
	if len(cat.Providers)+len(cat.Modules)+len(cat.Releases) == 0 {
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

// usageFor starts counting for serve unless the configuration turns it
// off (nil then). Close stops it, once the downloads have drained.
func usageFor(root string, c *ServeConfig, log *slog.Logger, replica *objstore.Replica) *protocol.Usage {
	if c != nil && c.Usage == usageOff {
		return nil
	}
	iv := protocol.DefaultUsageInterval
	if c != nil {
		iv, _ = c.usageInterval()
	}
	opt := protocol.UsageOptions{Interval: iv, Log: log}
	if replica != nil {
		opt.Add = replica.AddUsage // the counts every replica adds to, in the bucket
	}
	return protocol.StartUsage(root, opt)
}

// shareLocalCA gives a replica of a store in object storage the local CA
// every replica uses: the bucket's (objstore.SharedCAName), checked and
// installed; or, if there is none yet, a new one, written to the bucket
// only if still absent (If-None-Match: *), the CA of whichever replica
// wrote first being the one all use.
func shareLocalCA(ctx context.Context, c *objstore.Client, tlsDir string) error {
	install := func(data []byte) error {
		os.RemoveAll(filepath.Join(tlsDir, "ca"))
		if err := certs.InstallCA(tlsDir, data); err != nil {
			return fmt.Errorf("store %s: %s: %w", c.Addr(), objstore.SharedCAName, err)
		}
		return nil
	}
	data, _, err := c.ReadSmall(ctx, objstore.SharedCAName, 64<<10)
	if err == nil {
		return install(data)
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	if _, err := certs.LoadOrCreateCA(tlsDir); err != nil {
		return err
	}
	mine, err := certs.ExportCA(tlsDir)
	if err != nil {
		return err
	}
	_, err = c.PutBytes(ctx, objstore.SharedCAName, "", mine)
	if errors.Is(err, objstore.ErrPrecondition) { // another replica was first
		if data, _, err = c.ReadSmall(ctx, objstore.SharedCAName, 64<<10); err != nil {
			return err
		}
		return install(data)
	}
	if err != nil {
		return fmt.Errorf("%w\nhint: the first replica to start writes the shared local CA to the bucket and needs s3:PutObject on %s; or give certificates with --tls files", err, objstore.SharedCAName)
	}
	return nil
}

// RotateBucketURLKeys rotates the URL keys every replica of the store in
// c's bucket shares, as 'token rotate-url-key' does on disk
// (access.RotateURLKeys, the same rules, run on a scratch copy): the
// object is read with its ETag and written back only if it is still that
// version (If-Match; If-None-Match: * when there is none yet), read again
// and retried on 412, so two rotations at once both land. Replicas install
// the new file within a poll interval (followURLKeys) and use it within a
// second more. It returns the new key's id.
func RotateBucketURLKeys(ctx context.Context, c *objstore.Client, now time.Time) (string, error) {
	for attempt := 0; attempt < 20; attempt++ {
		data, o, err := c.ReadSmall(ctx, objstore.SharedURLKeysName, maxSharedURLKeys)
		etag := o.ETag
		if errors.Is(err, objstore.ErrNotFound) {
			data, etag = nil, ""
		} else if err != nil {
			return "", err
		}
		id, mine, err := rotateCopy(data, now)
		if err != nil {
			return "", fmt.Errorf("%s: %w", objstore.SharedURLKeysName, err)
		}
		_, err = c.PutBytes(ctx, objstore.SharedURLKeysName, etag, mine)
		if errors.Is(err, objstore.ErrPrecondition) {
			time.Sleep(time.Duration(20+attempt*30) * time.Millisecond)
			continue // another rotation landed first: rotate theirs
		}
		if err != nil {
			return "", err
		}
		return id, nil
	}
	return "", fmt.Errorf("rotating %s: other writers kept changing it\nhint: try again", objstore.SharedURLKeysName)
}

// rotateCopy rotates the key file data (nil: none yet) in a private
// scratch directory and returns the new key's id and file.
func rotateCopy(data []byte, now time.Time) (string, []byte, error) {
	scratch, err := os.MkdirTemp("", "airgap-url-keys-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(scratch)
	local := filepath.Join(scratch, "url-keys.json")
	if data != nil {
		if err := os.WriteFile(local, data, 0o600); err != nil {
			return "", nil, err
		}
	}
	id, err := access.RotateURLKeys(scratch, now)
	if err != nil {
		return "", nil, err
	}
	mine, err := os.ReadFile(local)
	return id, mine, err
}

// followURLKeys installs the bucket's URL keys into tlsDir whenever their
// ETag changes (one HEAD every objstore.PollInterval), until ctx ends; the
// access control reloads the file within a second and keeps the keys it
// has if the new file does not load (what the bucket holds is checked
// there: mode, size, every key).
func followURLKeys(ctx context.Context, c *objstore.Client, tlsDir string, log *slog.Logger) {
	t := time.NewTicker(objstore.PollInterval)
	defer t.Stop()
	last := "" // the first poll installs the file again: a rotation since start-up is not missed
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o, err := c.Head(ctx, objstore.SharedURLKeysName)
		if err != nil || o.ETag == last {
			continue
		}
		data, got, err := c.ReadSmall(ctx, objstore.SharedURLKeysName, maxSharedURLKeys)
		if err == nil {
			err = installURLKeys(tlsDir, data)
		}
		if err != nil {
			log.Error("reading the rotated URL keys from the bucket; still using the previous ones", "err", err)
			continue
		}
		last = got.ETag
	}
}

// installURLKeys writes the shared URL keys into tlsDir (mode 0600,
// atomically).
func installURLKeys(tlsDir string, data []byte) error {
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return err
	}
	local := filepath.Join(tlsDir, "url-keys.json")
	tmp := local + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, local)
}

// maxSharedURLKeys bounds the shared URL keys' file (two keys: well
// under 1 KiB).
const maxSharedURLKeys = 64 << 10

// shareURLKeys gives a replica of a store in object storage the keys for
// signed download URLs every replica uses, as shareLocalCA does the CA:
// the bucket's, or new ones written only if still absent. The access
// control reads and checks the file when it opens it.
func shareURLKeys(ctx context.Context, c *objstore.Client, tlsDir string) error {
	local := filepath.Join(tlsDir, "url-keys.json")
	install := func(data []byte) error { return installURLKeys(tlsDir, data) }
	data, _, err := c.ReadSmall(ctx, objstore.SharedURLKeysName, maxSharedURLKeys)
	if err == nil {
		return install(data)
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	if _, err := access.RotateURLKeys(tlsDir, time.Now()); err != nil {
		return err
	}
	mine, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	_, err = c.PutBytes(ctx, objstore.SharedURLKeysName, "", mine)
	if errors.Is(err, objstore.ErrPrecondition) { // another replica was first
		if data, _, err = c.ReadSmall(ctx, objstore.SharedURLKeysName, maxSharedURLKeys); err != nil {
			return err
		}
		return install(data)
	}
	if err != nil {
		return fmt.Errorf("%w\nhint: with an access file, the first replica to start writes the shared URL keys to the bucket and needs s3:PutObject on %s", err, objstore.SharedURLKeysName)
	}
	return nil
}
