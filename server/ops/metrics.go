package ops

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
)

// MetricsOptions configure NewMetrics. Every function is optional and is
// called at scrape time.
type MetricsOptions struct {
	Version string
	// Catalog is the catalog being served (size gauges).
	Catalog func() *dist.Catalog
	// LastImport is the time of the store's newest import (zero: none).
	LastImport func() time.Time
	// Certificate is the certificate served for the appliance's main name
	// (see CertificateFunc).
	Certificate func() *x509.Certificate
	// AuditErrors counts failed audit log writes (with --audit-log).
	AuditErrors func() float64
	// AuditUnitemised counts refusals the audit log counted together
	// under client "other": from addresses past the ones it counts apart.
	AuditUnitemised func() float64
	// ObjectMismatches counts objects in a bucket whose bytes did not
	// match their names (a store in object storage only).
	ObjectMismatches func() float64
}

// Metrics are the appliance's Prometheus metrics, on a registry of their
// own (no global state). Label values come only from a fixed set (endpoint
// kinds, status codes the server writes) or from the catalog (download
// addresses and versions), never from request text, so the number of
// series is bounded by the catalog.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	bytes     *prometheus.CounterVec
	downloads *prometheus.CounterVec
	open      prometheus.Gauge
	accepted  prometheus.Counter
	refused   *prometheus.CounterVec
	authFails *prometheus.CounterVec
	conns     sync.Map // net.Conn -> struct{}: counted as open
	// kinds holds each endpoint kind's series, resolved once, so a request
	// costs no label hashing (read-only after NewMetrics).
	kinds map[string]*kindSeries
}

type kindSeries struct {
	duration prometheus.Observer
	bytes    prometheus.Counter
	codes    [600]atomic.Pointer[prometheus.Counter] // by status code
}

// allKinds lists the endpoint kinds (the "kind" label's values).
var allKinds = []string{KindDiscovery, KindProviderVersions, KindProviderDownload, KindModuleVersions, KindModuleDownload,
	KindMirrorIndex, KindMirrorVersion, KindBlob, KindArchive, KindHealthz, KindCA, KindOrigins, KindMetrics, KindOther}

// NewMetrics registers the metrics.
func NewMetrics(opt MetricsOptions) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airgap_http_requests_total", Help: "HTTP requests answered, by endpoint kind and status code.",
	}, []string{"kind", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "airgap_http_request_duration_seconds", Help: "Time from request to the end of the response body, by endpoint kind.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30, 120, 600},
	}, []string{"kind"})
	m.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airgap_http_response_bytes_total", Help: "Response body bytes sent, by endpoint kind.",
	}, []string{"kind"})
	m.downloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airgap_downloads_total",
		Help: "Provider packages, module archives and CLI release archives sent whole (a 200 answer to a GET with the complete body), by catalog address and version.",
	}, []string{"kind", "address", "version"})
	m.open = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "airgap_http_open_connections", Help: "Client connections open now (main listener).",
	})
	m.accepted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "airgap_http_connections_total", Help: "Client connections accepted (main listener).",
	})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airgap_http_connections_refused_total", Help: "Client connections closed at accept: over max-conns (total) or max-conns-per-ip (per_ip).",
	}, []string{"reason"})
	m.refused.WithLabelValues("total")
	m.refused.WithLabelValues("per_ip")
	m.authFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airgap_auth_failures_total",
		Help: "Requests refused by the access file: no credentials (missing), not a token (invalid), an expired token, too many failures from one address (throttled), a download URL altered (url_invalid) or expired (url_expired), a login token while the sign-in state cannot be read (unchecked). Never names a token.",
	}, []string{"reason"})
	m.reg.MustRegister(m.requests, m.duration, m.bytes, m.downloads, m.open, m.accepted, m.refused, m.authFails,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&stateCollector{opt: opt})
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "airgap_build_info", Help: "Always 1; the version label is the airgap version.",
		ConstLabels: prometheus.Labels{"version": opt.Version},
	}, func() float64 { return 1 }))
	if opt.AuditErrors != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "airgap_audit_write_errors_total", Help: "Audit log lines that could not be written (the downloads were served).",
		}, opt.AuditErrors))
	}
	if opt.AuditUnitemised != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "airgap_audit_refusals_unitemised_total",
			Help: "Refusals the audit log did not count by address: from addresses past the 4,096 it counts apart in a minute (its \"refusals\" line of client \"other\" says from how many).",
		}, opt.AuditUnitemised))
	}
	if opt.ObjectMismatches != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "airgap_store_object_mismatches_total",
			Help: "Blobs read from the bucket whose bytes did not match their names (sha256): each download of one was cut off short, never served whole.",
		}, opt.ObjectMismatches))
	}
	m.kinds = map[string]*kindSeries{}
	for _, k := range allKinds {
		m.kinds[k] = &kindSeries{duration: m.duration.WithLabelValues(k), bytes: m.bytes.WithLabelValues(k)}
	}
	return m
}

// observe records one answered request.
func (m *Metrics) observe(kind string, code int, dur time.Duration, n int64, dl *access.Download) {
	ks := m.kinds[kind]
	if ks == nil {
		ks = m.kinds[KindOther]
	}
	if code < 0 || code >= len(ks.codes) {
		code = 0 // "other"
	}
	c := ks.codes[code].Load()
	if c == nil {
		nc := m.requests.WithLabelValues(kind, codeLabel(code))
		ks.codes[code].CompareAndSwap(nil, &nc)
		c = ks.codes[code].Load()
	}
	(*c).Inc()
	ks.duration.Observe(dur.Seconds())
	ks.bytes.Add(float64(n))
	if dl != nil && (dl.Role == dist.RoleProviderPackage || dl.Role == dist.RoleModuleArchive || dl.Role == dist.RoleReleaseZip) {
		m.downloads.WithLabelValues(dl.Kind, dl.Address, dl.Version).Inc()
	}
}

// authFailure counts a refusal; reason is one of the fixed set of auth failures (authMissing …).
func (m *Metrics) authFailure(reason string) { m.authFails.WithLabelValues(reason).Inc() }

// codeLabel keeps the code label to three digits whatever a handler does.
func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return string([]byte{byte('0' + code/100), byte('0' + code/10%10), byte('0' + code%10)})
}

// ConnState counts open connections. Set it as the http.Server's ConnState
// (or call it from another server's equivalent hook).
func (m *Metrics) ConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		if _, dup := m.conns.LoadOrStore(c, struct{}{}); !dup {
			m.accepted.Inc()
			m.open.Inc()
		}
	case http.StateClosed, http.StateHijacked:
		if _, ok := m.conns.LoadAndDelete(c); ok {
			m.open.Dec()
		}
	}
}

// Handler serves the metrics in the Prometheus text format (gzip when
// asked), at most 4 scrapes at a time.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 10 * time.Second})
}

// Mount serves the metrics at /metrics and everything else with h.
func (m *Metrics) Mount(h http.Handler) http.Handler {
	mh := m.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			mh.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Serve serves /metrics over plain HTTP on ln (--metrics-listen, opened
// already) until ctx ends, with read and write timeouts and a 16 KiB
// header limit, and returns the bound address.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, log *slog.Logger) net.Addr {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	return ln.Addr()
}

// CertificateFunc returns the leaf a TLS config serves for name, for
// MetricsOptions.Certificate (nil when it has none).
func CertificateFunc(tc *tls.Config, name string) func() *x509.Certificate {
	return func() *x509.Certificate {
		if tc == nil {
			return nil
		}
		var c *tls.Certificate
		if tc.GetCertificate != nil {
			c, _ = tc.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
		} else if len(tc.Certificates) > 0 {
			c = &tc.Certificates[0]
		}
		if c == nil {
			return nil
		}
		if c.Leaf != nil {
			return c.Leaf
		}
		if len(c.Certificate) == 0 {
			return nil
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return nil
		}
		return leaf
	}
}

// stateCollector reports the catalog's size, the last import and the
// certificate's expiry, read at scrape time.
type stateCollector struct {
	opt MetricsOptions

	mu    sync.Mutex
	cat   *dist.Catalog
	sizes catalogSizes
}

type catalogSizes struct {
	providerVersions, moduleVersions, packages, blobs int
	bytes                                             int64
}

var (
	descProviderVersions = prometheus.NewDesc("airgap_catalog_provider_versions", "Provider versions served.", nil, nil)
	descModuleVersions   = prometheus.NewDesc("airgap_catalog_module_versions", "Module versions served.", nil, nil)
	descPackages         = prometheus.NewDesc("airgap_catalog_provider_packages", "Provider packages (version x platform) served.", nil, nil)
	descBlobs            = prometheus.NewDesc("airgap_catalog_blobs", "Blobs the catalog refers to (packages, SHA256SUMS, signatures, module archives).", nil, nil)
	descBytes            = prometheus.NewDesc("airgap_catalog_bytes", "Bytes of the provider packages and module archives served.", nil, nil)
	descLastImport       = prometheus.NewDesc("airgap_store_last_import_timestamp_seconds", "Unix time of the newest import in the store's history (0: none).", nil, nil)
	descCertExpiry       = prometheus.NewDesc("airgap_tls_certificate_expiry_timestamp_seconds", "Unix time the served certificate expires (NotAfter).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProviderVersions, descModuleVersions, descPackages, descBlobs, descBytes, descLastImport, descCertExpiry} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.opt.Catalog != nil {
		s := c.catalogSizes(c.opt.Catalog())
		gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
		gauge(descProviderVersions, float64(s.providerVersions))
		gauge(descModuleVersions, float64(s.moduleVersions))
		gauge(descPackages, float64(s.packages))
		gauge(descBlobs, float64(s.blobs))
		gauge(descBytes, float64(s.bytes))
	}
	if c.opt.LastImport != nil {
		v := 0.0
		if t := c.opt.LastImport(); !t.IsZero() {
			v = float64(t.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(descLastImport, prometheus.GaugeValue, v)
	}
	if c.opt.Certificate != nil {
		if leaf := c.opt.Certificate(); leaf != nil {
			ch <- prometheus.MustNewConstMetric(descCertExpiry, prometheus.GaugeValue, float64(leaf.NotAfter.Unix()))
		}
	}
}

// catalogSizes computes the size figures once per catalog snapshot.
func (c *stateCollector) catalogSizes(cat *dist.Catalog) catalogSizes {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cat == c.cat {
		return c.sizes
	}
	var s catalogSizes
	if cat != nil {
		s.providerVersions, s.moduleVersions = len(cat.Providers), len(cat.Modules)
		for _, p := range cat.Providers {
			s.packages += len(p.Packages)
			for _, pk := range p.Packages {
				s.bytes += pk.Size
			}
		}
		for _, m := range cat.Modules {
			s.bytes += m.Size
		}
		s.blobs = len(cat.Blobs())
	}
	c.cat, c.sizes = cat, s
	return s
}

// RefusedConn counts a connection the main listener's limits refused, by
// reason (LimitConns' ConnLimits.Refused).
func (m *Metrics) RefusedConn(reason string) { m.refused.WithLabelValues(reason).Inc() }

// CountConns counts the connections accepted from ln and those open.
func (m *Metrics) CountConns(ln net.Listener) net.Listener {
	return &countingListener{Listener: ln, m: m}
}

type countingListener struct {
	net.Listener
	m *Metrics
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	l.m.accepted.Inc()
	l.m.open.Inc()
	return &countedConn{Conn: c, m: l.m}, nil
}

type countedConn struct {
	net.Conn
	m    *Metrics
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.m.open.Dec() })
	return c.Conn.Close()
}
