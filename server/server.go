package server

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Store is what the server needs of a store: read-only access to the current
// catalog and to blobs. Catalog returns an immutable snapshot; a new pointer
// means a new catalog. OpenBlob returns an error wrapping store.ErrBlobMissing
// or os.ErrNotExist for an absent blob. Implementations must be safe for
// concurrent use. (*store.Store satisfies it.)
type Store interface {
	Catalog() *dist.Catalog
	OpenBlob(verify.Digest) (*os.File, error)
}

// Server answers the registry, mirror and download protocols.
type Server struct {
	store Store
	log   *slog.Logger
	caPEM []byte
	mux   *http.ServeMux

	mu    sync.Mutex // serializes rebuilding the state
	state atomic.Pointer[state]
	oci   ociHolder // the OCI API's state (oci.go)
}

// state is everything derived from one catalog snapshot: the lookup view,
// the set of servable blobs, and rendered JSON answers (bounded).
type state struct {
	cat      *dist.Catalog
	view     *view
	blobs    map[verify.Digest]blobInfo
	rendered sync.Map // host + "\x00" + path -> *answer
	nRender  atomic.Int64
}

// maxRendered bounds the answer cache of one snapshot (the Host header is
// part of the key, so clients could otherwise grow it without limit).
const maxRendered = 200_000

// answer is a rendered JSON response.
type answer struct {
	body   []byte
	header map[string]string
}

type blobInfo struct {
	role string
}

// Options configure New.
type Options struct {
	Logger *slog.Logger
	// CAPEM is offered at /ca.pem when not nil (the local CA certificate).
	CAPEM []byte
}

// New returns a Server reading st.
func New(st Store, opt Options) *Server {
	s := &Server{store: st, log: opt.Logger, caPEM: opt.CAPEM, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.routes()
	s.Warm()
	return s
}

// Warm builds the lookup state of the store's current catalog now, so that
// no request pays for it (call it after the store reloads).
func (s *Server) Warm() { s.current() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.writeError(w, r, fmt.Errorf("%w: %s", errMethod, r.Method))
		return
	}
	// A JSON answer rendered before is served without routing: the key
	// (Host and path) was stored by the handler the mux chose for it.
	if a, ok := s.current().rendered.Load(renderKey(r)); ok {
		writeAnswer(w, r, a.(*answer))
		return
	}
	s.mux.ServeHTTP(w, r)
}

func renderKey(r *http.Request) string { return r.Host + "\x00" + r.URL.EscapedPath() }

func (s *Server) routes() {
	m := s.mux
	for _, p := range []string{"", "/origin/{origin}"} {
		m.HandleFunc("GET "+p+"/.well-known/terraform.json", s.jsonHandler(s.discovery))
		m.HandleFunc("GET "+p+"/v1/providers/{ns}/{type}/versions", s.jsonHandler(s.providerVersions))
		m.HandleFunc("GET "+p+"/v1/providers/{ns}/{type}/{version}/download/{os}/{arch}", s.jsonHandler(s.providerDownload))
		m.HandleFunc("GET "+p+"/v1/modules/{ns}/{name}/{system}/versions", s.jsonHandler(s.moduleVersions))
		m.HandleFunc("GET "+p+"/v1/modules/{ns}/{name}/{system}/{version}/download", s.jsonHandler(s.moduleDownload))
	}
	m.HandleFunc("GET /mirror/{hostname}/{ns}/{type}/index.json", s.jsonHandler(s.mirrorIndex))
	m.HandleFunc("GET /mirror/{hostname}/{ns}/{type}/{file}", s.jsonHandler(s.mirrorVersion))
	m.HandleFunc("GET /blobs/sha256/{hex}", s.blob)
	m.HandleFunc("GET /blobs/sha256/{hex}/{filename}", s.blob)
	m.HandleFunc("GET /archives/sha256/{file}", s.archive)
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /ca.pem", s.caCert)
	m.HandleFunc("GET /airgap/v1/origins", s.jsonHandler(s.originsDoc))
	m.HandleFunc("GET /v2/", s.ociHandler) // OCI distribution API (oci.go)
	s.catalogRoutes(m)                     // HTML catalog: GET /{$} and /ui/ (catalog.go)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound("no such endpoint %s", r.URL.Path))
	})
}

// current returns the state of the store's current catalog, building it
// once per catalog snapshot. The common path is two atomic loads.
func (s *Server) current() *state {
	cat := s.store.Catalog()
	if st := s.state.Load(); st != nil && st.cat == cat {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.state.Load(); st != nil && st.cat == cat {
		return st
	}
	st := &state{cat: cat, view: newView(cat), blobs: map[verify.Digest]blobInfo{}}
	for d, role := range cat.Blobs() {
		st.blobs[d] = blobInfo{role: role}
	}
	s.state.Store(st)
	return st
}

// jsonHandler renders a JSON answer with fn and caches it for the catalog
// snapshot, Host and path (ServeHTTP serves it from there after that).
// Errors are never cached.
func (s *Server) jsonHandler(fn func(r *http.Request, v *view) (any, map[string]string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := s.current()
		v, hdr, err := fn(r, st.view)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		body, err := json.Marshal(v)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		a := &answer{body: body, header: hdr}
		if st.nRender.Add(1) <= maxRendered {
			st.rendered.Store(renderKey(r), a)
		}
		writeAnswer(w, r, a)
	}
}

func writeAnswer(w http.ResponseWriter, r *http.Request, a *answer) {
	h := w.Header()
	h["Content-Type"] = jsonCT
	h["Cache-Control"] = noCache
	h["X-Content-Type-Options"] = nosniff
	h["Content-Length"] = []string{strconv.Itoa(len(a.body))}
	for k, v := range a.header {
		h.Set(k, v)
	}
	if r.Method == http.MethodHead {
		return
	}
	w.Write(a.body)
}

var (
	jsonCT  = []string{"application/json"}
	noCache = []string{"no-cache"}
	nosniff = []string{"nosniff"}
)

// origin picks the view for a request: the {origin} path value, or the Host
// when it names an origin, or the default view.
func (s *Server) origin(r *http.Request, v *view) (string, error) {
	if o := r.PathValue("origin"); o != "" {
		o = strings.ToLower(o)
		if _, ok := v.isOrigin(o); !ok {
			return "", notFound("this appliance serves nothing from origin %q", o)
		}
		return o, nil
	}
	if o, ok := v.isOrigin(strings.ToLower(r.Host)); ok {
		return o, nil
	}
	return defaultOrigin, nil
}

// base is the absolute URL prefix of the appliance as this client reached it.
func base(r *http.Request) string {
	return "https://" + r.Host
}

func (s *Server) discovery(r *http.Request, v *view) (any, map[string]string, error) {
	if _, err := s.origin(r, v); err != nil {
		return nil, nil, err
	}
	prefix := ""
	if o := r.PathValue("origin"); o != "" {
		prefix = "/origin/" + strings.ToLower(o)
	}
	return map[string]string{
		"providers.v1": prefix + "/v1/providers/",
		"modules.v1":   prefix + "/v1/modules/",
	}, nil, nil
}

type platformDoc struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

type versionDoc struct {
	Version   string        `json:"version"`
	Protocols []string      `json:"protocols,omitempty"`
	Platforms []platformDoc `json:"platforms"`
}

func (s *Server) providerVersions(r *http.Request, v *view) (any, map[string]string, error) {
	origin, err := s.origin(r, v)
	if err != nil {
		return nil, nil, err
	}
	ns, typ := r.PathValue("ns"), r.PathValue("type")
	vs := v.providerVersions(origin, ns, typ)
	if len(vs) == 0 {
		return nil, nil, notFound("provider %s/%s is not on this appliance", ns, typ)
	}
	out := make([]versionDoc, 0, len(vs))
	for _, p := range vs {
		d := versionDoc{Version: p.Version, Protocols: p.Protocols, Platforms: []platformDoc{}}
		for _, pk := range p.Packages {
			d.Platforms = append(d.Platforms, platformDoc{pk.OS, pk.Arch})
		}
		out = append(out, d)
	}
	return map[string]any{"versions": out}, nil, nil
}

func findVersion[T any](vs []*T, ver func(*T) string, want string) *T {
	for _, x := range vs {
		if ver(x) == want {
			return x
		}
	}
	return nil
}

func (s *Server) providerDownload(r *http.Request, v *view) (any, map[string]string, error) {
	origin, err := s.origin(r, v)
	if err != nil {
		return nil, nil, err
	}
	ns, typ, ver := r.PathValue("ns"), r.PathValue("type"), r.PathValue("version")
	osName, arch := r.PathValue("os"), r.PathValue("arch")
	p := findVersion(v.providerVersions(origin, ns, typ), func(p *dist.ProviderVersion) string { return p.Version }, ver)
	if p == nil {
		return nil, nil, notFound("provider %s/%s version %s is not on this appliance", ns, typ, ver)
	}
	pk, ok := p.Package(osName, arch)
	if !ok {
		return nil, nil, notFound("provider %s/%s %s has no package for %s_%s on this appliance", ns, typ, ver, osName, arch)
	}
	b := base(r)
	d := dist.ProviderDownload{
		Protocols: p.Protocols, OS: pk.OS, Arch: pk.Arch, Filename: pk.Filename,
		DownloadURL:         b + blobURL(pk.Digest, pk.Filename),
		ShasumsURL:          b + blobURL(p.Shasums, p.ShasumsName),
		ShasumsSignatureURL: b + blobURL(p.ShasumsSig, p.ShasumsName+".sig"),
		Shasum:              pk.Digest.Hex(),
	}
	d.SigningKeys.GPGPublicKeys = p.SigningKeys
	if d.SigningKeys.GPGPublicKeys == nil {
		d.SigningKeys.GPGPublicKeys = []dist.SigningKey{}
	}
	return d, nil, nil
}

func blobURL(d verify.Digest, filename string) string {
	return "/blobs/sha256/" + d.Hex() + "/" + filename
}

func archiveURL(d verify.Digest, subdir string) string {
	u := "/archives/sha256/" + d.Hex() + ".tar.gz"
	if subdir != "" {
		u += "//" + subdir
	}
	return u
}

func (s *Server) moduleVersions(r *http.Request, v *view) (any, map[string]string, error) {
	origin, err := s.origin(r, v)
	if err != nil {
		return nil, nil, err
	}
	ns, name, system := r.PathValue("ns"), r.PathValue("name"), r.PathValue("system")
	vs := v.moduleVersions(origin, ns, name, system)
	if len(vs) == 0 {
		return nil, nil, notFound("module %s/%s/%s is not on this appliance", ns, name, system)
	}
	type mv struct {
		Version string `json:"version"`
	}
	out := make([]mv, 0, len(vs))
	for _, m := range vs {
		out = append(out, mv{m.Version})
	}
	return map[string]any{"modules": []any{map[string]any{"versions": out}}}, nil, nil
}

func (s *Server) moduleDownload(r *http.Request, v *view) (any, map[string]string, error) {
	origin, err := s.origin(r, v)
	if err != nil {
		return nil, nil, err
	}
	ns, name, system, ver := r.PathValue("ns"), r.PathValue("name"), r.PathValue("system"), r.PathValue("version")
	m := findVersion(v.moduleVersions(origin, ns, name, system), func(m *dist.ModuleVersion) string { return m.Version }, ver)
	if m == nil {
		return nil, nil, notFound("module %s/%s/%s version %s is not on this appliance", ns, name, system, ver)
	}
	loc := base(r) + archiveURL(m.Archive, m.Subdir)
	return map[string]string{"location": loc}, map[string]string{"X-Terraform-Get": loc}, nil
}

type mirrorArchive struct {
	URL    string   `json:"url"`
	Hashes []string `json:"hashes"`
}

func (s *Server) mirrorVersions(r *http.Request, v *view) ([]*dist.ProviderVersion, error) {
	host := strings.ToLower(r.PathValue("hostname"))
	origin := defaultOrigin
	if o, ok := v.isOrigin(host); ok {
		origin = o
	}
	ns, typ := r.PathValue("ns"), r.PathValue("type")
	vs := v.providerVersions(origin, ns, typ)
	if len(vs) == 0 {
		return nil, notFound("provider %s/%s/%s is not on this appliance", host, ns, typ)
	}
	return vs, nil
}

func (s *Server) mirrorIndex(r *http.Request, v *view) (any, map[string]string, error) {
	vs, err := s.mirrorVersions(r, v)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]struct{}{}
	for _, p := range vs {
		out[p.Version] = struct{}{}
	}
	return map[string]any{"versions": out}, nil, nil
}

func (s *Server) mirrorVersion(r *http.Request, v *view) (any, map[string]string, error) {
	ver, ok := strings.CutSuffix(r.PathValue("file"), ".json")
	if !ok {
		return nil, nil, notFound("no such endpoint %s", r.URL.Path)
	}
	vs, err := s.mirrorVersions(r, v)
	if err != nil {
		return nil, nil, err
	}
	p := findVersion(vs, func(p *dist.ProviderVersion) string { return p.Version }, ver)
	if p == nil {
		return nil, nil, notFound("version %s is not on this appliance", ver)
	}
	archives := map[string]mirrorArchive{}
	for _, pk := range p.Packages {
		archives[pk.Platform()] = mirrorArchive{URL: blobURL(pk.Digest, pk.Filename), Hashes: []string{pk.H1, pk.ZH()}}
	}
	return map[string]any{"archives": archives}, nil, nil
}

func (s *Server) blob(w http.ResponseWriter, r *http.Request) {
	s.serveBlob(w, r, r.PathValue("hex"), "")
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	hex, ok := strings.CutSuffix(r.PathValue("file"), ".tar.gz")
	if !ok {
		s.writeError(w, r, notFound("no such archive %s", r.URL.Path))
		return
	}
	s.serveBlob(w, r, hex, dist.RoleModuleArchive)
}

func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, hex, wantRole string) {
	if !verify.IsHex64(hex) {
		s.writeError(w, r, notFound("no such blob %q", hex))
		return
	}
	d := verify.Digest("sha256:" + hex)
	info, ok := s.current().blobs[d]
	if !ok || wantRole != "" && info.role != wantRole {
		s.writeError(w, r, notFound("blob %s is not served by this appliance", d.Short()))
		return
	}
	f, err := s.store.OpenBlob(d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("ETag", `"`+string(d)+`"`)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	switch info.role {
	case dist.RoleProviderPackage, dist.RoleModuleZip:
		h.Set("Content-Type", "application/zip")
	case dist.RoleModuleArchive:
		h.Set("Content-Type", "application/gzip")
	case dist.RoleShasums:
		h.Set("Content-Type", "text/plain; charset=utf-8")
	default:
		h.Set("Content-Type", "application/octet-stream")
	}
	http.ServeContent(w, r, "", time.Time{}, f)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	cat := s.current().cat
	writeJSON(w, r, map[string]any{"status": "ok", "provider_versions": len(cat.Providers), "module_versions": len(cat.Modules)})
}

func (s *Server) caCert(w http.ResponseWriter, r *http.Request) {
	if s.caPEM == nil {
		s.writeError(w, r, notFound("this appliance does not use the built-in CA"))
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(s.caPEM)
}

// OriginsDoc is the JSON at /airgap/v1/origins, read by 'airgap client-config --url'.
type OriginsDoc struct {
	Origins   []string `json:"origins"`
	Providers int      `json:"provider_versions"`
	Modules   int      `json:"module_versions"`
}

func (s *Server) originsDoc(r *http.Request, v *view) (any, map[string]string, error) {
	return OriginsDoc{Origins: append([]string{}, v.origins...), Providers: len(v.cat.Providers), Modules: len(v.cat.Modules)}, nil, nil
}

// Origins lists the origins of a catalog in default-view order.
func Origins(cat *dist.Catalog) []string { return newView(cat).origins }

// HTTP1Only makes a TLS config's ALPN list match HTTPServer: "http/1.1"
// first, no "h2", and anything else (ACME's acme-tls/1) kept.
func HTTP1Only(c *tls.Config) {
	protos := []string{"http/1.1"}
	for _, p := range c.NextProtos {
		if p != "h2" && p != "http/1.1" {
			protos = append(protos, p)
		}
	}
	c.NextProtos = protos
}

// ListenAddrs returns the IPs of a listen address for certificates: the host
// part if it is an IP, or loopback when it is empty.
func ListenAddrs(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "0.0.0.0" || host == "::" {
		return []string{"127.0.0.1", "::1"}
	}
	return []string{host}
}
