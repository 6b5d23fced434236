package ops

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/verify"
)

// ObserveOptions configure Observe. Every field is optional.
type ObserveOptions struct {
	// Log receives one "request" line per request at info level.
	Log *slog.Logger
	// Metrics counts requests, durations, bytes and downloads.
	Metrics *Metrics
	// Proxies are the peers whose X-Forwarded-For is believed.
	Proxies *access.TrustedProxies
	// Catalog names downloads (which provider or module version a blob
	// is); usually the store's Catalog method. The Server names them
	// itself (noteDownload) when it is the handler; this is the fallback.
	Catalog func() *dist.Catalog
	// Audit receives one record per package or archive download that
	// completed (AuditLog).
	Audit *access.AuditLog
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
	var dl *access.Download
	if (code == http.StatusOK || code == http.StatusPartialContent) && r.Method == http.MethodGet {
		if dl = rec.note.Download; dl == nil && (kind == KindBlob || kind == KindArchive) {
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
		if code != http.StatusOK || !complete || kind == KindOther && (dl == nil || dl.Role != dist.RoleReleaseZip) {
			whole = nil // (OCI blobs: not counted here, as before; CLI release archives are)
		}
		m.observe(kind, code, dur, rec.bytes, whole)
		if rec.note.Auth != "" {
			m.authFailure(rec.note.Auth)
		}
	}
	if o.opt.Audit != nil {
		if dl != nil && complete && dl.Audited() {
			o.audit(r, code, rec, dl)
		}
		o.auditEvents(r, code, &rec.note)
	}
	if logOn {
		o.log(o.opt.Log, r, code, rec.bytes, end, dur, dl, &rec.note)
	}
}

func (o *observer) log(l *slog.Logger, r *http.Request, code int, n int64, end time.Time, dur time.Duration, dl *access.Download, note *access.Note) {
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
	if note.Token != "" {
		attrs = append(attrs, slog.String("token", note.Token))
	}
	if note.User != "" {
		attrs = append(attrs, slog.String("user", note.User))
	}
	if note.Denied != "" {
		attrs = append(attrs, slog.String("denied", note.Denied))
	}
	if note.By != "" {
		attrs = append(attrs, slog.String("auth_by", note.By))
	}
	if note.Auth != "" {
		attrs = append(attrs, slog.String("auth", note.Auth))
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
		if dl.Role != dist.RoleProviderPackage && dl.Role != dist.RoleModuleArchive && dl.Role != dist.RoleReleaseZip {
			attrs = append(attrs, slog.String("file", dl.Role))
		}
	}
	logRecord(l, end, "request", attrs)
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

// downloadIndex maps a catalog's blobs to what they are (every owner, in
// catalog order: a package can be listed under several addresses), built
// once per catalog snapshot.
type downloadIndex struct {
	cat *dist.Catalog
	m   map[verify.Digest][]*access.Download
}

// DownloadOwners maps each blob of cat to what it is, every owner in
// catalog order.
func DownloadOwners(cat *dist.Catalog) map[verify.Digest][]*access.Download {
	return newDownloadIndex(cat).m
}

func newDownloadIndex(cat *dist.Catalog) *downloadIndex {
	ix := &downloadIndex{cat: cat, m: map[verify.Digest][]*access.Download{}}
	if cat == nil {
		return ix
	}
	add := func(d verify.Digest, dl *access.Download) {
		dl.Digest = d
		ix.m[d] = append(ix.m[d], dl)
	}
	for _, p := range cat.Providers {
		for _, pk := range p.Packages {
			add(pk.Digest, &access.Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), Role: dist.RoleProviderPackage})
			// Its Go build information and gate reports belong to it: a
			// principal that may not read the package may not read them.
			if pk.BuildInfo != "" {
				add(pk.BuildInfo, &access.Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), Role: dist.RoleGoBuildInfo})
			}
			for _, r := range pk.Gates {
				add(r.Report, &access.Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), Role: dist.RoleGateReport})
			}
		}
		add(p.Shasums, &access.Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Role: dist.RoleShasums})
		add(p.ShasumsSig, &access.Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Role: dist.RoleShasumsSig})
		if p.Docs != nil && p.Docs.Archive != "" {
			add(p.Docs.Archive, &access.Download{Kind: "provider", Address: p.Addr(), Version: p.Version, Role: dist.RoleProviderDocs})
		}
	}
	for _, m := range cat.Modules {
		add(m.Archive, &access.Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleModuleArchive})
		if m.Zip != "" {
			add(m.Zip, &access.Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleModuleZip})
		}
		for _, r := range m.Gates {
			add(r.Report, &access.Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleGateReport})
		}
		if m.Docs != "" {
			add(m.Docs, &access.Download{Kind: "module", Address: m.Addr(), Version: m.Version, Role: dist.RoleModuleDocs})
		}
	}
	return ix
}

// download names the blob a /blobs/ or /archives/ path asks for, from the
// catalog (nil when there is no catalog or the blob is not in it).
func (o *observer) download(p string) *access.Download {
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
	note  access.Note
}

// Note is the request's note (access.Noter): access control and the
// handlers fill it in, the access log reads it.
func (r *recorder) Note() *access.Note { return &r.note }

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

// audit writes the record of a completed download.
func (o *observer) audit(r *http.Request, code int, rec *recorder, dl *access.Download) {
	client, _ := o.opt.Proxies.ClientAddr(r)
	ar := &access.AuditRecord{
		Time: access.AuditTime(time.Now()), Token: rec.note.Token, User: rec.note.User, Client: client,
		Kind: dl.Kind, Address: dl.Address, Version: dl.Version, Platform: dl.Platform, Digest: string(dl.Digest),
		Bytes: rec.bytes, Status: code, Via: "registry",
	}
	if EndpointKind(r.URL.Path) == KindOther {
		ar.Via = "oci"
		if dl.Role == dist.RoleReleaseZip {
			ar.Via = "releases"
		}
	}
	ar.ClientName, ar.ClientVersion = ClientFromUserAgent(r.UserAgent())
	o.opt.Audit.Write(ar)
}

// auditEvents writes the events a request noted: its own (a login), and
// its refusal when the audit keeps that kind.
func (o *observer) auditEvents(r *http.Request, code int, note *access.Note) {
	evs := make([]*access.AuditEvent, 0, 2)
	if note.Event != nil {
		evs = append(evs, note.Event)
	}
	if reason := access.AuditedRefusal(note); reason != "" {
		evs = append(evs, &access.AuditEvent{Event: access.EventRefused, Token: note.Token, User: note.User, Reason: reason,
			Endpoint: EndpointKind(r.URL.Path), Address: note.Denied, Status: code})
	}
	if len(evs) == 0 {
		return
	}
	client, _ := o.opt.Proxies.ClientAddr(r)
	name, ver := ClientFromUserAgent(r.UserAgent())
	for _, ev := range evs {
		ev.Client, ev.ClientName, ev.ClientVersion = client, name, ver
		o.opt.Audit.WriteEvent(ev)
	}
}

// Recorder is a recorder of its own for a handler that must know how its
// answer went (the download counts: whether the last byte went out),
// whatever wraps it.
type Recorder = recorder

// NewRecorder records what is written to w.
func NewRecorder(w http.ResponseWriter) *Recorder { return &recorder{ResponseWriter: w} }

// Status is the status written (0: none yet), Written the body bytes.
func (r *recorder) Status() int    { return r.code }
func (r *recorder) Written() int64 { return r.bytes }
