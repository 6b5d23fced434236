package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/server/ops"
)

// opsOptions configure startOps.
type opsOptions struct {
	Config  *ServeConfig
	Store   *store.Store
	TLS     *certs.Setup
	Level   *slog.LevelVar // the logger's level, changed by SIGHUP
	Log     *slog.Logger
	LogOut  *ops.LogWriter // reopened by SIGHUP (nil: nothing to reopen)
	Version string
	Access  *access.AccessControl // the access file, if any
	Audit   *access.AuditLog      // the audit log, if any
	// Replica is the bucket a store in object storage is served from
	// (nil: a directory store).
	Replica *objstore.Replica
	// MetricsListener, if set, is the --metrics-listen listener, opened
	// already (Run opens every listener before anything else).
	MetricsListener net.Listener
}

// opsLayer is the operational layer around the protocol handler, independent
// of the HTTP server that carries it: access logs, metrics (on the main
// listener or --metrics-listen), SIGHUP reloads and systemd notifications.
type opsLayer struct {
	Metrics *ops.Metrics // nil with metrics-listen "" or "off"
	Proxies *access.TrustedProxies
	opt     opsOptions
}

// startOps sets up metrics, starts the --metrics-listen listener if one is
// configured, and handles SIGHUP until ctx ends.
func startOps(ctx context.Context, opt opsOptions) (*opsLayer, error) {
	proxies, err := access.ParseTrustedProxies(opt.Config.TrustedProxy)
	if err != nil {
		return nil, fmt.Errorf("%w: trusted-proxy %v", errConfig, err)
	}
	if err := proxies.SetPassthrough(opt.Config.PassthroughProxy); err != nil {
		return nil, fmt.Errorf("%w: passthrough-proxy %v", errConfig, err)
	}
	o := &opsLayer{Proxies: proxies, opt: opt}
	if opt.Access != nil {
		opt.Access.SetProxies(proxies)
	}
	if m := opt.Config.MetricsListen; m != "off" && m != "" {
		mo := ops.MetricsOptions{Version: opt.Version, Catalog: opt.Store.Catalog, LastImport: lastImport(opt.Store)}
		if a := opt.Audit; a != nil {
			mo.AuditErrors = func() float64 { return float64(a.Errors.Load()) }
			mo.AuditUnitemised = func() float64 { return float64(a.Unitemised.Load()) }
		}
		if r := opt.Replica; r != nil {
			mo.ObjectMismatches = func() float64 { return float64(r.Mismatches.Load()) }
		}
		if opt.TLS != nil {
			mo.Certificate = ops.CertificateFunc(opt.TLS.Config, certs.FirstDNSName(opt.Config.certNames()))
		}
		o.Metrics = ops.NewMetrics(mo)
		if addr := opt.Config.MetricsListen; addr != metricsOnMain {
			ln := opt.MetricsListener
			if ln == nil {
				if ln, err = listen("the metrics listener", "metrics-listen", opt.Config, addr); err != nil {
					return nil, err
				}
			}
			bound := o.Metrics.Serve(ctx, ln, opt.Log)
			opt.Log.Info("metrics listening (plain HTTP)", "addr", bound.String(), "path", "/metrics")
		}
	}
	reloadOnSignal(ctx, &reloadable{Config: opt.Config, Level: opt.Level, Proxies: proxies, TLS: opt.TLS, Log: opt.Log, Access: opt.Access, LogOut: opt.LogOut})
	return o, nil
}

// handler wraps the protocol handler with access logs and metrics (and
// serves /metrics with metrics-listen = "main").
func (o *opsLayer) handler(h http.Handler) http.Handler {
	if o.Metrics != nil && o.opt.Config.MetricsListen == metricsOnMain {
		h = o.Metrics.Mount(h)
	}
	return ops.Observe(h, ops.ObserveOptions{Log: o.opt.Log, Metrics: o.Metrics, Proxies: o.Proxies, Catalog: o.opt.Store.Catalog, Audit: o.opt.Audit})
}

// listener applies the connection limits (max-conns, max-conns-per-ip,
// send-timeout; see LimitConns) to the main listener and counts its
// connections for the metrics, whatever server accepts from it.
func (o *opsLayer) listener(ln net.Listener) net.Listener {
	lim := o.opt.Config.connLimits(o.Proxies)
	if o.Metrics != nil {
		lim.Refused = o.Metrics.RefusedConn
	}
	ln = ops.LimitConns(ln, lim)
	if o.Metrics == nil {
		return ln
	}
	return o.Metrics.CountConns(ln)
}

// ready tells systemd the service is up (call once listening).
func (o *opsLayer) ready() { ops.Notify(ops.NotifyReady) }

// stopping tells systemd the service is shutting down.
func (o *opsLayer) stopping() { ops.Notify(ops.NotifyStopping) }

// lastImport returns the time of a store's newest import.
func lastImport(st *store.Store) func() time.Time {
	return func() time.Time {
		var t time.Time
		for _, e := range st.Index().Imports {
			if e.Time.After(t) {
				t = e.Time
			}
		}
		return t
	}
}
