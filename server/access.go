package server

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/verify"
)

// ObserveOptions configure Observe. Every field is optional.
type ObserveOptions struct {
	// Log receives one "request" line per request at info level.
	Log *slog.Logger
	// Metrics counts requests, durations, bytes and downloads.
	Metrics *Metrics
	// Proxies are the peers whose X-Forwarded-For is believed.
	Proxies *TrustedProxies
	// Catalog names downloads (which provider or module version a blob
	// is); usually the store's Catalog method. The Server names them
	// itself (noteDownload) when it is the handler; this is the fallback.
	Catalog func() *dist.Catalog
	// Audit receives one record per package or archive download that
	// completed (AuditLog).
	Audit *AuditLog
}

// Observe wraps h with access logs and metrics. It depends only on the
// http.Handler contract, so it works over any server carrying h.
//
// What is logged is chosen so that the log holds no secret and no
// unbounded client text: never the Authorization header or any other
// header but User-Agent (with an access file the line names the token,
// "anonymous", or why credentials were refused, never the secret), never the query string (no endpoint has one, and
// a query is where a misconfigured client would put a token), the path and
// Host cut to 512 bytes, the User-Agent to 256. Strings are escaped by the
// slog handler (the JSON handler escapes control characters, the text
// handler quotes them). The client address comes from the connection, or
// from X-Forwarded-For only when the peer is a trusted proxy, and is always
// a parsed IP address.
//
// Cost per request: one catalog-snapshot lookup (a pointer compare), a
// response-writer wrapper that keeps io.ReaderFrom, and the log write;
// with no metrics and access lines below the log level, one level check.
// A request gets an access line when access lines are on (the level, which
// SIGHUP may change, is info or lower) both when it arrives and when it
// ends, so a download in flight while SIGHUP turns them on or off may have
// none.
func Observe(h http.Handler, opt ObserveOptions) http.Handler {
	o := &observer{next: h, opt: opt}
	return o
}

type observer struct {
	next http.Handler
	opt  ObserveOptions
	dl   atomic.Pointer[downloadIndex]
	mu   sync.Mutex
}

func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logOn := o.opt.Log != nil && o.opt.Log.Enabled(r.Context(), slog.LevelInfo)
	if o.opt.Metrics == nil && !logOn && o.opt.Audit == nil {
		// Nothing to record (no metrics, access lines below the level,
		// which SIGHUP may change): no clock reads, no wrapper.
		o.next.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	o.next.ServeHTTP(rec, r)
	end := time.Now()
	dur := end.Sub(start)
	code := rec.code
	if code == 0 {
		code = http.StatusOK
	}
	kind := EndpointKind(r.URL.Path)
	var dl *Download
	if (code == http.StatusOK || code == http.StatusPartialContent) && r.Method == http.MethodGet {
		if dl = rec.note.dl; dl == nil && (kind == KindBlob || kind == KindArchive) {
			dl = o.download(r.URL.Path)
		}
	}
	complete := w.Header().Get("Content-Length") == strconv.FormatInt(rec.bytes, 10)
	if m := o.opt.Metrics; m != nil {
		// A download is counted once its whole body was sent in a 200:
		// not a 206 (one-byte ranges would make any version look popular,
		// and a resumed download would count twice), not a download the
		// client broke off. Ranges still count in the request metrics and
		// name their version in the access log.
		whole := dl
		if code != http.StatusOK || !complete || kind == KindOther {
			whole = nil // (OCI blobs: not counted here, as before)
		}
		m.observe(kind, code, dur, rec.bytes, whole)
		if rec.note.auth != "" {
			m.authFailure(rec.note.auth)
		}
	}
	if o.opt.Audit != nil {
		if dl != nil && complete && dl.audited() {
			o.audit(r, code, rec, dl)
		}
		o.auditEvents(r, code, &rec.note)
	}
	if logOn {
		o.log(o.opt.Log, r, code, rec.bytes, end, dur, dl, &rec.note)
	}
}

func (o *observer) log(l *slog.Logger, r *http.Request, code int, n int64, end time.Time, dur time.Duration, dl *Download, note *reqNote) {
	client, peer := o.opt.Proxies.ClientAddr(r)
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.String("client", client))
	if peer != client {
		attrs = append(attrs, slog.String("peer", peer))
	}
	attrs = append(attrs,
		slog.String("method", reply.Cut(r.Method, 16)),
		slog.String("host", reply.Cut(r.Host, 512)),
		slog.String("path", reply.Cut(r.URL.Path, 512)),
		slog.Int("status", code),
		slog.Int64("bytes", n),
		slog.Int64("dur_us", dur.Microseconds()),
	)
	if note.token != "" {
		attrs = append(attrs, slog.String("token", note.token))
	}
	if note.user != "" {
		attrs = append(attrs, slog.String("user", note.user))
	}
	if note.denied != "" {
		attrs = append(attrs, slog.String("denied", note.denied))
	}
	if note.by != "" {
		attrs = append(attrs, slog.String("auth_by", note.by))
	}
	if note.auth != "" {
		attrs = append(attrs, slog.String("auth", note.auth))
	}
	ua := r.UserAgent()
	if name, ver := ClientFromUserAgent(ua); name != "" {
		attrs = append(attrs, slog.String("client_name", name), slog.String("client_version", ver))
	} else if ua != "" {
		attrs = append(attrs, slog.String("user_agent", reply.Cut(ua, 256)))
	}
	if dl != nil {
		attrs = append(attrs, slog.String(dl.Kind, dl.Address), slog.String("version", dl.Version))
		if dl.Platform != "" {
			attrs = append(attrs, slog.String("platform", dl.Platform))
		}
		if dl.Role != dist.RoleProviderPackage && dl.Role != dist.RoleModuleArchive {
			attrs = append(attrs, slog.String("file", dl.Role))
		}
	}
	ops.LogRecord(l, end, "request", attrs)
}

// Endpoint kinds: the values of the "kind" label and of EndpointKind. The
// set is fixed, so a metric labelled by kind has bounded cardinality
// whatever clients send.
const (
	KindDiscovery        = "discovery"
	KindProviderVersions = "provider_versions"
	KindProviderDownload = "provider_download"
	KindModuleVersions   = "module_versions"
	KindModuleDownload   = "module_download"
	KindMirrorIndex      = "mirror_index"
	KindMirrorVersion    = "mirror_version"
	KindBlob             = "blob"
	KindArchive          = "archive"
	KindHealthz          = "healthz"
	KindCA               = "ca"
	KindOrigins          = "origins"
	KindMetrics          = "metrics"
	KindOther            = "other"
)

// EndpointKind names the endpoint a request path is for, from the path
// alone (answers served from the render cache never reach the mux, so the
// mux's pattern is not available to middleware).
func EndpointKind(p string) string {
	if rest, ok := strings.CutPrefix(p, "/origin/"); ok {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return KindOther
		}
		p = rest[i:]
	}
	switch {
	case p == "/.well-known/terraform.json":
		return KindDiscovery
	case strings.HasPrefix(p, "/v1/providers/"):
		if strings.HasSuffix(p, "/versions") {
			return KindProviderVersions
		}
		if strings.Contains(p, "/download/") {
			return KindProviderDownload
		}
	case strings.HasPrefix(p, "/v1/modules/"):
		if strings.HasSuffix(p, "/versions") {
			return KindModuleVersions
		}
		if strings.HasSuffix(p, "/download") {
			return KindModuleDownload
		}
	case strings.HasPrefix(p, "/mirror/"):
		if strings.HasSuffix(p, "/index.json") {
			return KindMirrorIndex
		}
		return KindMirrorVersion
	case strings.HasPrefix(p, "/blobs/sha256/"):
		return KindBlob
	case strings.HasPrefix(p, "/archives/sha256/"):
		return KindArchive
	case p == "/healthz":
		return KindHealthz
	case p == "/ca.pem":
		return KindCA
	case p == "/airgap/v1/origins":
		return KindOrigins
	case p == "/metrics":
		return KindMetrics
	}
	return KindOther
}

// ClientFromUserAgent returns the client name and version from a
// Terraform ("Terraform/1.11.0 (+https://www.terraform.io)") or OpenTofu
// ("OpenTofu/1.11.14") User-Agent, or "", "" for anything else. The
// version is returned only when it looks like one (digits, dots, and a
// short pre-release), so it is safe to use as a log field or label value.
func ClientFromUserAgent(ua string) (name, version string) {
	tok, _, _ := strings.Cut(ua, " ")
	n, v, ok := strings.Cut(tok, "/")
	if !ok {
		return "", ""
	}
	switch strings.ToLower(n) {
	case "terraform":
		name = "terraform"
	case "opentofu", "tofu":
		name = "tofu"
	default:
		return "", ""
	}
	if len(v) == 0 || len(v) > 40 || v[0] < '0' || v[0] > '9' {
		return name, ""
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '-' || c == '+') {
			return name, ""
		}
	}
	return name, v
}

// TrustedProxies is the set of peers whose X-Forwarded-For header is
// believed (--trusted-proxy: balancers that terminate HTTP and append the
// client to it), and of load balancers that pass TLS through
// (--passthrough-proxy), whose X-Forwarded-For is never believed: it
// reaches serve as the client wrote it. Both carry many clients on one
// address, so both are exempt from the per-address limits. The zero value
// and nil trust nobody. Set and SetPassthrough may be called at any time
// (SIGHUP).
type TrustedProxies struct {
	p    atomic.Pointer[[]netip.Prefix]
	pass atomic.Pointer[[]netip.Prefix]
}

// ParseTrustedProxies parses addresses ("10.0.0.5") and CIDR prefixes
// ("10.0.0.0/8", "fd00::/8").
func ParseTrustedProxies(list []string) (*TrustedProxies, error) {
	t := &TrustedProxies{}
	return t, t.Set(list)
}

// Set replaces the list of trusted proxies.
func (t *TrustedProxies) Set(list []string) error {
	ps, err := parsePrefixes(list)
	if err == nil {
		t.p.Store(&ps)
	}
	return err
}

// SetPassthrough replaces the list of passthrough balancers.
func (t *TrustedProxies) SetPassthrough(list []string) error {
	ps, err := parsePrefixes(list)
	if err == nil {
		t.pass.Store(&ps)
	}
	return err
}

func parsePrefixes(list []string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", s, err)
			}
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
		}
		a = a.Unmap()
		ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
	}
	return ps, nil
}

func (t *TrustedProxies) trusts(a netip.Addr) bool {
	return t != nil && inPrefixes(t.p.Load(), a)
}

// carriesMany reports whether a is a trusted proxy or a passthrough
// balancer: an address many clients share, exempt from the per-address
// connection cap and failed-attempt limit.
func (t *TrustedProxies) carriesMany(a netip.Addr) bool {
	return t != nil && (inPrefixes(t.p.Load(), a) || inPrefixes(t.pass.Load(), a))
}

func inPrefixes(ps *[]netip.Prefix, a netip.Addr) bool {
	if ps == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range *ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxForwardHops bounds how many X-Forwarded-For entries are examined.
const maxForwardHops = 16

// ClientAddr returns the client's IP address and the connection peer's.
// When the peer is trusted, X-Forwarded-For is walked from the right (the
// last entry of the last header line: a proxy appends its client there,
// HAProxy as a line of its own, nginx at the end of the one line),
// skipping trusted proxies, and the first other address is the client; an
// entry that is not an IP address stops the walk (the last trusted hop is
// then the client), and so do maxForwardHops trusted entries. Entries left
// of the client are the client's own text and are never read, however many
// it sends. Both results are parsed IP addresses, never client text. Cost:
// at most maxForwardHops address parses, no allocation.
func (t *TrustedProxies) ClientAddr(r *http.Request) (client, peer string) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	pa, err := netip.ParseAddr(host)
	if err != nil {
		return "unknown", "unknown"
	}
	if pa.Is4() {
		peer = host // already canonical: ParseAddr takes no other IPv4 form
	} else {
		pa = pa.Unmap()
		peer = pa.String()
	}
	if !t.trusts(pa) {
		return peer, peer
	}
	lines := r.Header.Values("X-Forwarded-For")
	cur, n := pa, 0
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			if n == maxForwardHops {
				return cur.String(), peer
			}
			j := strings.LastIndexByte(rest, ',')
			a, err := netip.ParseAddr(strings.TrimSpace(rest[j+1:]))
			if err != nil {
				return cur.String(), peer
			}
			cur, n = a.Unmap(), n+1
			if !t.trusts(cur) {
				return cur.String(), peer
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return cur.String(), peer
}

// Download is what a blob is in the catalog.
type Download struct {
	Kind     string // "provider" or "module"
	Address  string // host/namespace/type or host/namespace/name/system
	Version  string
	Platform string // os_arch for provider packages
	Role     string // dist.Role*
	Digest   verify.Digest
}

// audited reports whether a download of this blob goes into the audit
// log: provider packages and module archives (tar.gz, or the zip OCI
// clients fetch), not SHA256SUMS and signatures.
func (d *Download) audited() bool {
	return d.Role == dist.RoleProviderPackage || d.Role == dist.RoleModuleArchive || d.Role == dist.RoleModuleZip
}

// downloadIndex maps a catalog's blobs to what they are (every owner, in
// catalog order: a package can be listed under several addresses), built
// once per catalog snapshot.
type downloadIndex struct {
	cat *dist.Catalog
	m   map[verify.Digest][]*Download
}

func newDownloadIndex(cat *dist.Catalog) *downloadIndex {
	ix := &downloadIndex{cat: cat, m: map[verify.Digest][]*Download{}}
	if cat == nil {
		return ix
	}
	add := func(d verify.Digest, dl *Download) {
		dl.Digest = d
		ix.m[d] = append(ix.m[d], dl)
	}
	for _, p := range cat.Providers {
		for _, pk := range p.Packages {
			add(pk.Digest, &Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), Role: dist.RoleProviderPackage})
			// Its Go build information and gate reports belong to it: a
			// principal that may not read the package may not read them.
			if pk.BuildInfo != "" {
				add(pk.BuildInfo, &Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), Role: dist.RoleGoBuildInfo})
			}
			for _, r := range pk.Gates {
				add(r.Report, &Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), Role: dist.RoleGateReport})
			}
		}
		add(p.Shasums, &Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Role: dist.RoleShasums})
		add(p.ShasumsSig, &Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Role: dist.RoleShasumsSig})
		if p.Docs != nil && p.Docs.Archive != "" {
			add(p.Docs.Archive, &Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Role: dist.RoleProviderDocs})
		}
	}
	for _, m := range cat.Modules {
		add(m.Archive, &Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleModuleArchive})
		if m.Zip != "" {
			add(m.Zip, &Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleModuleZip})
		}
		for _, r := range m.Gates {
			add(r.Report, &Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleGateReport})
		}
		if m.Docs != "" {
			add(m.Docs, &Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleModuleDocs})
		}
	}
	return ix
}

// download names the blob a /blobs/ or /archives/ path asks for, from the
// catalog (nil when there is no catalog or the blob is not in it).
func (o *observer) download(p string) *Download {
	if o.opt.Catalog == nil {
		return nil
	}
	hex := ""
	if rest, ok := strings.CutPrefix(p, "/blobs/sha256/"); ok {
		hex, _, _ = strings.Cut(rest, "/")
	} else if rest, ok := strings.CutPrefix(p, "/archives/sha256/"); ok {
		hex = strings.TrimSuffix(rest, ".tar.gz")
	}
	if !verify.IsHex64(hex) {
		return nil
	}
	cat := o.opt.Catalog()
	ix := o.dl.Load()
	if ix == nil || ix.cat != cat {
		o.mu.Lock()
		if ix = o.dl.Load(); ix == nil || ix.cat != cat {
			ix = newDownloadIndex(cat)
			o.dl.Store(ix)
		}
		o.mu.Unlock()
	}
	if owners := ix.m[verify.Digest("sha256:"+hex)]; len(owners) > 0 {
		return owners[0] // the first (sorted) owner names a shared blob
	}
	return nil
}

// recorder notes the status and body bytes of a response. It keeps
// io.ReaderFrom (net/http's own copy path for blobs; sendfile does not
// apply under TLS) and http.Flusher, and unwraps for
// http.ResponseController.
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int64
	note  reqNote
}

// reqNote is what the protocol handler tells Observe about a request that
// the response does not show: which token it acted as (never the secret),
// why credentials were refused, and which download it was.
type reqNote struct {
	token  string // a token's name, or "anonymous"
	user   string // a login token's person
	by     string // how it was shown: token, oci_bearer, signed_url, signed_url+token, session, anonymous
	auth   string // a refusal: authMissing, authInvalid, …
	denied string // an address the catalog has and the token may not read (answered as missing)
	dl     *Download
	event  *AuditEvent // an event of the request itself (a login), for the audit log
}

// noteOf finds the recorder under w, if Observe wraps the handler.
func noteOf(w http.ResponseWriter) *reqNote {
	for i := 0; i < 8; i++ {
		if rec, ok := w.(*recorder); ok {
			return &rec.note
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

func noteAuth(w http.ResponseWriter, token, refused string) {
	if n := noteOf(w); n != nil {
		n.token, n.auth = token, refused
	}
}

// noteEvent hands Observe an audit event of the request (a login).
func noteEvent(w http.ResponseWriter, ev *AuditEvent) {
	if n := noteOf(w); n != nil {
		n.event = ev
	}
}

// noteDenied tells Observe that the request asked for addr, which its
// token may not read (the answer is the one for a missing address).
func noteDenied(w http.ResponseWriter, addr string) {
	if n := noteOf(w); n != nil && n.denied == "" {
		n.denied = addr
	}
}

func noteDownload(w http.ResponseWriter, dl *Download) {
	if n := noteOf(w); n != nil {
		n.dl = dl
	}
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 && code >= 200 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
