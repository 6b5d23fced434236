package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/verify"
)

// Store is what the answers need of a store: read-only access to the current
// catalog and to blobs. Catalog returns an immutable snapshot; a new pointer
// means a new catalog. OpenBlob returns an error wrapping store.ErrBlobMissing
// or os.ErrNotExist for an absent blob. Implementations must be safe for
// concurrent use. (*store.Store satisfies it.)
type Store interface {
	Catalog() *dist.Catalog
	OpenBlob(verify.Digest) (*os.File, error)
}

// Answers answers the registry, mirror, download and OCI protocols from
// the store's current catalog, in the scope of each request's principal.
type Answers struct {
	store Store
	log   *slog.Logger
	// cacheBytes bounds the rendered answers of one snapshot.
	cacheBytes int64
	// access enforces the access file; nil: everyone may read
	// everything.
	access *access.AccessControl
	// usage counts completed downloads; nil: not counted.
	usage *Usage

	mu    sync.Mutex // serializes rebuilding the state
	state atomic.Pointer[Snapshot]
	oci   ociHolder // the OCI API's state
}

// Snapshot is everything derived from one catalog snapshot and one version
// of the access file (the app admits a request against the latter before
// it is answered from the former): the lookup view and its scopes, the set of servable
// blobs, and rendered JSON answers.
type Snapshot struct {
	cat      *dist.Catalog
	access   *access.Set // nil without access control
	view     *view
	full     *scope   // the whole view (no access control)
	scopes   sync.Map // acl.Rules.Key() -> *scope
	blobs    map[verify.Digest]blobInfo
	rendered sync.Map     // renderKey -> *answer
	nRender  atomic.Int64 // entries in rendered
	nBytes   atomic.Int64 // their cost (entryCost), at most Answers.cacheBytes

	ownersOnce sync.Once
	owners     map[verify.Digest][]*access.Download // what each blob is (ownerIndex)
}

// scopeFor returns the scope of a principal: the whole view without
// access control; with it, the view filtered by the principal's rules (no
// principal: nothing, a safeguard, since only open paths get that far
// without one).
func (st *Snapshot) scopeFor(p *access.Principal) *scope {
	if st.access == nil {
		return st.full
	}
	var rules *acl.Rules = noRules
	if p != nil {
		rules = p.Rules()
	}
	k := rules.Key()
	if sc, ok := st.scopes.Load(k); ok {
		return sc.(*scope)
	}
	sc, _ := st.scopes.LoadOrStore(k, newScope(st.view, rules))
	return sc.(*scope)
}

// noRules allows nothing.
var noRules, _ = acl.CompileRules(nil)

// ownerIndex maps each blob to what it is in the catalog, built on first
// use per snapshot (audit lines and unsigned downloads under access
// control need it).
func (st *Snapshot) ownerIndex() map[verify.Digest][]*access.Download {
	st.ownersOnce.Do(func() { st.owners = ops.DownloadOwners(st.cat) })
	return st.owners
}

// renderKey is what a rendered JSON answer is cached under: the principal
// it was rendered for (with an access file), the view and the canonical
// path of its route (see canonicalKey).
//
// Nothing a client chooses freely enters the key. The Host header only picks
// the view, one of the catalog's origins or the default view, and only for
// /v1/… paths (every other answer is the same whatever the Host); the URLs
// inside answers are relative, so no answer repeats the Host. The path is
// rebuilt from the route's matched values, lower-cased where the protocols
// match case-insensitively, so percent-encoded and differently cased
// variants of one path share one entry (or, when a value holds a "/", none).
// Unknown paths and errors are never cached. The key space is therefore
// bounded by the catalog. With O origins, Np provider names (origin,
// namespace, type), Npv provider versions, Npkg packages, Nm module names
// and Nmv module versions, one snapshot holds at most
//
//	2 + O                discovery (plain, /origin/{o}) and /airgap/v1/origins
//	3·Np + 3·Npkg        provider versions and downloads: the default view,
//	                     the Host's origin view, and /origin/{o}/…
//	3·Nm + 3·Nmv         the same for modules
//	Np + Npv             mirror index.json and <version>.json (origin
//	                     hostnames only; another hostname's answer, the
//	                     default view's, is rendered but not kept)
//
// entries, times the principals that asked (tokens in the access file, and
// anonymous) when there is an access file: each principal's answers carry
// URLs signed for it, and are rendered again when their expiry bucket
// passes (urlExpiry), replacing the old entry. Each holds its key (a path of at most a few hundred bytes) and
// an answer made of catalog data plus fixed-length relative URLs: a
// versions list (~40 bytes a version and ~35 a platform), a download
// answer (~600 bytes plus its version's signing keys, ~1.7–3.5 KiB of
// ASCII armour each, plus ~170 bytes for each platform of its version in
// the "packages" object OpenTofu 1.12 reads), a module location (~150
// bytes) or a mirror document (~250 bytes a platform). The bulk, at most
// 3·Npkg download answers, is about 3·Npkg·(0.6 KiB + keys + 0.17 KiB·P)
// for versions of P platforms: ~13 MiB for 1,000 packages of 3-platform
// versions signed by one key (~15 MiB at 14 platforms, the most a real
// provider publishes), but ~500 MiB for the 50,000-package catalog of make bench (measured:
// serve's RSS reached 750 MB when a client asked for every download answer
// through the three routes). So the cache also has a byte budget
// (Options.CacheBytes, default DefaultCacheBytes, counted by entryCost):
// once it is spent, further answers are rendered for each request and not
// kept, and one snapshot's cache never holds more than
// min(that sum, the budget). (With it, the same walk over the 50,000
// packages left serve at 360 MB: the rest is the collector's headroom at
// GOGC=400 over a live heap of ~90 MB, most of it the catalog.) A new
// catalog snapshot starts an empty cache; the old one is freed with its
// snapshot.
type renderKey struct {
	// who is the principal the answer was rendered for (nil without access
	// control and on open paths): the object of one version of the access
	// file, never its name, so that a token created again under the name
	// of another never gets what was rendered for that one.
	who  *access.Principal
	view string // an origin, or defaultOrigin
	path string
}

// answer is a rendered JSON response.
// DefaultCacheBytes is the default budget of the rendered-answer cache of
// one catalog snapshot: every answer of a catalog of ~2,500 packages
// through all three routes, or ~8,000 through one.
const DefaultCacheBytes = 32 << 20

// entryCost is what a cache entry is counted as: its key, its body, and an
// allowance for the map entry, the answer and its header.
func entryCost(k renderKey, a *answer) int64 {
	return int64(len(k.view) + len(k.path) + len(a.body) + 256)
}

type answer struct {
	// exp is the expiry of the signed URLs in body (0: none); the answer is
	// stale once a request's expiry bucket differs.
	exp  int64
	body []byte
	// Content-Length and the handler's own header fields, canonical keys;
	// shared by every request, never modified (a slice: ranging over a map
	// on every request costs its random start).
	header []headerField
}

type headerField struct {
	key string
	val []string
}

func newAnswer(body []byte, hdr map[string]string) *answer {
	a := &answer{body: body, header: []headerField{{"Content-Length", []string{strconv.Itoa(len(body))}}}}
	for k, v := range hdr {
		a.header = append(a.header, headerField{http.CanonicalHeaderKey(k), []string{v}})
	}
	return a
}

type blobInfo struct {
	role string
}

// Options configure New.
type Options struct {
	Logger *slog.Logger
	// CacheBytes bounds the rendered-answer cache of one catalog snapshot;
	// zero means DefaultCacheBytes.
	CacheBytes int64
	// Access enforces an access file; nil: none.
	Access *access.AccessControl
	// Usage counts package and archive downloads; nil: none.
	Usage *Usage
}

// New returns the answers of st, its current catalog's state built.
func New(st Store, opt Options) *Answers {
	s := &Answers{store: st, log: opt.Logger, cacheBytes: opt.CacheBytes, access: opt.Access, usage: opt.Usage}
	if s.cacheBytes <= 0 {
		s.cacheBytes = DefaultCacheBytes
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.Warm()
	return s
}

// Warm builds the lookup state of the store's current catalog now, so that
// no request pays for it (call it after the store reloads).
func (s *Answers) Warm() { s.current() }

// Snapshot returns the state of the store's current catalog.
func (s *Answers) Snapshot() *Snapshot { return s.current() }

// Access is the version of the access file the snapshot was built for
// (nil without access control).
func (st *Snapshot) Access() *access.Set { return st.access }

// Catalog is the snapshot's catalog.
func (st *Snapshot) Catalog() *dist.Catalog { return st.cat }

// ServeCached answers r from the cache of sn if a JSON answer for it was
// rendered before for principal p and is still fresh, and reports whether
// it did. Only a request whose path is canonical (it is then its own key)
// is looked up here, before routing; any other variant goes through the
// app's ServeMux to the handler, which looks it up under its canonical
// key.
func (s *Answers) ServeCached(w http.ResponseWriter, r *http.Request, sn *Snapshot, p *access.Principal) bool {
	if r.URL.RawPath != "" {
		return false
	}
	k := renderKey{who: p, path: r.URL.Path}
	if strings.HasPrefix(k.path, "/v1/") {
		k.view = sn.scopeFor(p).hostOrigin(r.Host)
	}
	if a, ok := sn.rendered.Load(k); ok && s.fresh(a.(*answer)) {
		writeAnswer(w, r, a.(*answer))
		return true
	}
	return false
}

// Cached is the number of answers in the cache of the current catalog
// snapshot, and what they are counted as (entryCost): what the bound on
// renderKey and the budget limit (for tests).
func (s *Answers) Cached() (entries, bytes int64) {
	st := s.current()
	return st.nRender.Load(), st.nBytes.Load()
}

// fresh reports whether a cached answer may still be sent: its signed URLs
// (if any) carry the current bucket's expiry.
func (s *Answers) fresh(a *answer) bool {
	return a.exp == 0 || s.access == nil || a.exp == s.access.Expiry()
}

// current returns the state of the store's current catalog, building it
// once per catalog snapshot. The common path is two atomic loads.
func (s *Answers) current() *Snapshot {
	cat := s.store.Catalog()
	var acc *access.Set
	if s.access != nil {
		acc = s.access.Current()
	}
	if st := s.state.Load(); st != nil && st.cat == cat && st.access == acc {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.state.Load(); st != nil && st.cat == cat && st.access == acc {
		return st
	}
	st := &Snapshot{cat: cat, access: acc, view: newView(cat), blobs: map[verify.Digest]blobInfo{}}
	st.full = newScope(st.view, nil)
	for d, role := range cat.Blobs() {
		st.blobs[d] = blobInfo{role: role}
	}
	s.state.Store(st)
	return st
}

// isOriginName reports whether h names an origin (any case).
func (sc *scope) isOriginName(h string) bool {
	_, ok := sc.isOrigin(strings.ToLower(h))
	return ok
}

// deniedAddr is the address a /v1/… or /mirror/… request names in the
// whole view (no access rules), or "": with the request's own scope it
// tells a denied address from a missing one, for the audit (the answer is
// the same).
func (st *Snapshot) deniedAddr(r *http.Request) string {
	full := st.full
	origin := full.hostOrigin(r.Host)
	if h := r.PathValue("hostname"); h != "" {
		if origin = defaultOrigin; full.isOriginName(h) {
			origin = strings.ToLower(h)
		}
	} else if o := r.PathValue("origin"); o != "" {
		c, ok := full.isOrigin(strings.ToLower(o))
		if !ok {
			return ""
		}
		origin = c
	}
	ns := r.PathValue("ns")
	if typ := r.PathValue("type"); typ != "" {
		if vs := full.providerVersions(origin, ns, typ); len(vs) > 0 {
			return vs[0].Addr()
		}
	}
	if name := r.PathValue("name"); name != "" {
		if vs := full.moduleVersions(origin, ns, name, r.PathValue("system")); len(vs) > 0 {
			return vs[0].Addr()
		}
	}
	return ""
}

// reqCtx is what a JSON handler works with: the scope of the request's
// principal and how to write download URLs for it.
type reqCtx struct {
	sc     *scope
	p      *access.Principal
	ac     *access.AccessControl // nil without access control
	exp    int64                 // expiry of URLs signed for this answer
	signed bool                  // a URL was signed: the answer expires with exp's bucket
}

// url returns a download URL for path (module archives: with subdir):
// signed for the principal under access control, plain otherwise.
func (rc *reqCtx) url(path, subdir string) string {
	if rc.ac == nil || rc.p == nil {
		if subdir != "" {
			return path + "//" + subdir
		}
		return path
	}
	rc.signed = true
	return rc.ac.SignURL(path, subdir, rc.p, rc.exp)
}

// jsonHandler renders a JSON answer with fn and caches it for the catalog
// snapshot under the request's canonical key (ServeCached serves it from
// there after that). Errors are never cached.
func (s *Answers) jsonHandler(fn func(r *http.Request, rc *reqCtx) (any, map[string]string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := s.current()
		ra := access.Of(r)
		rc := &reqCtx{sc: st.scopeFor(ra.Principal()), p: ra.Principal(), ac: s.access}
		key, cacheable := canonicalKey(r, rc.sc)
		key.who = ra.Principal()
		if cacheable {
			if a, ok := st.rendered.Load(key); ok && s.fresh(a.(*answer)) {
				writeAnswer(w, r, a.(*answer))
				return
			}
		}
		if rc.ac != nil {
			rc.exp = rc.ac.Expiry()
		}
		v, hdr, err := fn(r, rc)
		if err != nil {
			if rc.sc.rules != nil && errors.Is(err, errNotFound) {
				if addr := st.deniedAddr(r); addr != "" && !rc.sc.allows(addr) {
					access.NoteDenied(w, addr)
				}
			}
			s.writeError(w, r, err)
			return
		}
		body, err := json.Marshal(v)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		a := newAnswer(body, hdr)
		if rc.signed {
			a.exp = rc.exp
		}
		if cacheable {
			s.keep(st, key, a)
		}
		writeAnswer(w, r, a)
	}
}

// keep caches a under k unless that would overspend the snapshot's budget.
// A stale answer (signed URLs of a past bucket) is replaced.
func (s *Answers) keep(st *Snapshot, k renderKey, a *answer) {
	cost := entryCost(k, a)
	if old, ok := st.rendered.Load(k); ok {
		if o := old.(*answer); o.exp != a.exp && st.rendered.CompareAndSwap(k, old, a) {
			st.nBytes.Add(cost - entryCost(k, o))
		}
		return
	}
	if st.nBytes.Add(cost) > s.cacheBytes {
		st.nBytes.Add(-cost) // over budget: answered, not kept
		return
	}
	if _, loaded := st.rendered.LoadOrStore(k, a); loaded {
		st.nBytes.Add(-cost)
		return
	}
	st.nRender.Add(1)
}

// foldedValues are the route values the protocols match case-insensitively.
var foldedValues = map[string]bool{"origin": true, "hostname": true, "ns": true, "type": true, "name": true, "system": true}

// canonicalKey returns the cache key of a request the app's ServeMux routed to a JSON
// handler: the path rebuilt from the route's pattern and matched values,
// lower-cased where the protocols fold case and as sent elsewhere
// (versions, os, arch), and the view its Host chose for /v1/… routes. ok is
// false when the answer must not be cached: a value holds a "/" (only a
// percent-encoded one can, and the rebuilt path would be ambiguous), or a
// mirror hostname names no origin (the default view's answer would be
// cached under unboundedly many names).
func canonicalKey(r *http.Request, v *scope) (k renderKey, ok bool) {
	_, pattern, _ := strings.Cut(r.Pattern, " ")
	if pattern == "" {
		return k, false
	}
	var b strings.Builder
	for seg := range strings.SplitSeq(pattern[1:], "/") {
		b.WriteByte('/')
		name, isVar := strings.CutPrefix(seg, "{")
		if !isVar {
			b.WriteString(seg)
			continue
		}
		name = strings.TrimSuffix(name, "}")
		val := r.PathValue(name)
		if strings.Contains(val, "/") {
			return k, false
		}
		if foldedValues[name] {
			val = strings.ToLower(val)
		}
		if name == "hostname" || name == "origin" {
			o, ok := v.isOrigin(val)
			if !ok {
				return k, false
			}
			val = o
		}
		b.WriteString(val)
	}
	k.path = b.String()
	if strings.HasPrefix(pattern, "/v1/") {
		k.view = v.hostOrigin(r.Host)
	}
	return k, true
}

func writeAnswer(w http.ResponseWriter, r *http.Request, a *answer) {
	h := w.Header()
	h["Content-Type"] = jsonCT
	h["Cache-Control"] = noCache
	h["X-Content-Type-Options"] = nosniff
	h["Date"] = httpDate()
	for _, f := range a.header {
		h[f.key] = f.val
	}
	if r.Method == http.MethodHead {
		return
	}
	w.Write(a.body)
}

// httpDate returns the Date header value, formatted once a second: net/http
// formats it for every answer that lacks one, which was ~7% of the server's
// CPU for cached JSON answers in a profile.
func httpDate() []string {
	now := time.Now().Unix()
	if d := dateCache.Load(); d != nil && d.sec == now {
		return d.val
	}
	d := &dateEntry{sec: now, val: []string{time.Unix(now, 0).UTC().Format(http.TimeFormat)}}
	dateCache.Store(d)
	return d.val
}

type dateEntry struct {
	sec int64
	val []string
}

var dateCache atomic.Pointer[dateEntry]

var (
	jsonCT  = []string{"application/json"}
	noCache = []string{"no-cache"}
	nosniff = []string{"nosniff"}
)

// origin picks the view for a request: the {origin} path value, or the Host
// when it names an origin, or the default view.
func (s *Answers) origin(r *http.Request, v *scope) (string, error) {
	if o := r.PathValue("origin"); o != "" {
		canon, ok := v.isOrigin(strings.ToLower(o))
		if !ok {
			return "", notFound("this appliance serves nothing from origin %q", reply.Cut(o, 256))
		}
		return canon, nil
	}
	return v.hostOrigin(r.Host), nil
}

func (s *Answers) discovery(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
	origin, err := s.origin(r, v)
	if err != nil {
		return nil, nil, err
	}
	prefix := ""
	if r.PathValue("origin") != "" {
		prefix = "/origin/" + origin // the catalog's spelling, never the request's
	}
	doc := map[string]any{
		"providers.v1": prefix + "/v1/providers/",
		"modules.v1":   prefix + "/v1/modules/",
	}
	if rc.ac.LoginConfig() != nil {
		// 'terraform login HOST' (access.LoginService); the answer is cached per
		// access-file version, which decides whether there is a login block.
		doc["login.v1"] = access.LoginDiscovery("")
	}
	return doc, nil, nil
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

func (s *Answers) providerVersions(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
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

func (s *Answers) providerDownload(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
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
	// Relative URLs: the clients resolve them against the request's URL
	// (Terraform and OpenTofu both use ResolveReference), so the answer does
	// not depend on the Host the client used.
	d := dist.ProviderDownload{
		Protocols: p.Protocols, OS: pk.OS, Arch: pk.Arch, Filename: pk.Filename,
		DownloadURL:         rc.url(blobURL(pk.Digest, pk.Filename), ""),
		ShasumsURL:          rc.url(blobURL(p.Shasums, p.ShasumsName), ""),
		ShasumsSignatureURL: rc.url(blobURL(p.ShasumsSig, p.ShasumsName+".sig"), ""),
		Shasum:              pk.Digest.Hex(),
	}
	d.SigningKeys.GPGPublicKeys = p.SigningKeys
	if d.SigningKeys.GPGPublicKeys == nil {
		d.SigningKeys.GPGPublicKeys = []dist.SigningKey{}
	}
	d.Packages = packageHashes(p)
	return d, nil, nil
}

// packageHashes is the download answer's "packages" object: each
// platform's zh: and h1: and size, from the catalog (checked at import:
// zh: against the signed SHA256SUMS, h1: recomputed from the zip).
// OpenTofu ≥ 1.12 checks the installed package's size and zh: against
// its entry, then records every platform's hashes, so a fresh 'tofu init'
// in registry mode gets a lock file that verifies on every platform.
func packageHashes(p *dist.ProviderVersion) map[string]dist.PackageHashes {
	out := make(map[string]dist.PackageHashes, len(p.Packages))
	for _, pk := range p.Packages {
		out[pk.Platform()] = dist.PackageHashes{Hashes: []string{pk.ZH(), pk.H1}, PackageSize: pk.Size}
	}
	return out
}

func blobURL(d verify.Digest, filename string) string {
	return "/blobs/sha256/" + d.Hex() + "/" + filename
}

func archiveURL(d verify.Digest) string {
	return "/archives/sha256/" + d.Hex() + ".tar.gz"
}

func (s *Answers) moduleVersions(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
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

func (s *Answers) moduleDownload(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
	origin, err := s.origin(r, v)
	if err != nil {
		return nil, nil, err
	}
	ns, name, system, ver := r.PathValue("ns"), r.PathValue("name"), r.PathValue("system"), r.PathValue("version")
	m := findVersion(v.moduleVersions(origin, ns, name, system), func(m *dist.ModuleVersion) string { return m.Version }, ver)
	if m == nil {
		return nil, nil, notFound("module %s/%s/%s version %s is not on this appliance", ns, name, system, ver)
	}
	// A location starting with "/" is resolved against the download URL by
	// both clients (Terraform reads only X-Terraform-Get, OpenTofu prefers
	// the body).
	loc := rc.url(archiveURL(m.Archive), m.Subdir)
	body := map[string]any{"location": loc}
	if rc.ac != nil && m.Subdir == "" {
		// OpenTofu >= 1.12 then fetches the location itself, with the
		// token (older clients and Terraform ignore the field and use the
		// signed URL). Not with a subdirectory: this form has no //subdir.
		body["use_registry_credentials"] = true
	}
	return body, map[string]string{"X-Terraform-Get": loc}, nil
}

type mirrorArchive struct {
	URL    string   `json:"url"`
	Hashes []string `json:"hashes"`
}

func (s *Answers) mirrorVersions(r *http.Request, v *scope) ([]*dist.ProviderVersion, error) {
	host := strings.ToLower(r.PathValue("hostname"))
	origin := defaultOrigin
	if o, ok := v.isOrigin(host); ok {
		origin = o
	} else if !dist.ValidHost(host) {
		// A name that is no origin gets the default view (answered, not
		// cached); one that is not even a host name is no provider source.
		return nil, notFound("%q is not a host name", reply.Cut(host, 256))
	}
	ns, typ := r.PathValue("ns"), r.PathValue("type")
	vs := v.providerVersions(origin, ns, typ)
	if len(vs) == 0 {
		return nil, notFound("provider %s/%s/%s is not on this appliance", host, ns, typ)
	}
	return vs, nil
}

func (s *Answers) mirrorIndex(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
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

func (s *Answers) mirrorVersion(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
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
		archives[pk.Platform()] = mirrorArchive{URL: rc.url(blobURL(pk.Digest, pk.Filename), ""), Hashes: []string{pk.H1, pk.ZH()}}
	}
	return map[string]any{"archives": archives}, nil, nil
}

func (s *Answers) blob(w http.ResponseWriter, r *http.Request) {
	s.serveBlob(w, r, r.PathValue("hex"), "")
}

func (s *Answers) archive(w http.ResponseWriter, r *http.Request) {
	hex, ok := strings.CutSuffix(r.PathValue("file"), ".tar.gz")
	if !ok {
		s.writeError(w, r, notFound("no such archive %s", r.URL.Path))
		return
	}
	s.serveBlob(w, r, hex, dist.RoleModuleArchive)
}

func (s *Answers) serveBlob(w http.ResponseWriter, r *http.Request, hex, wantRole string) {
	if !verify.IsHex64(hex) {
		s.writeError(w, r, notFound("no such blob %q", hex))
		return
	}
	d := verify.Digest("sha256:" + hex)
	st := s.current()
	info, ok := st.blobs[d]
	var dl *access.Download
	if ok {
		dl, ok = s.whatBlob(w, r, st, d)
	}
	if !ok || wantRole != "" && info.role != wantRole {
		s.writeError(w, r, notFound("blob %s is not served by this appliance", d.Short()))
		return
	}
	access.NoteDownload(w, dl)
	if bs, ok := s.store.(blobStreamer); ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("Range") == "" {
		if u, ok, err := bs.RedirectBlob(r.Context(), r.Method, d); ok {
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			w.Header().Set("Cache-Control", "no-store") // the URL expires
			if s.usage != nil && r.Method == http.MethodGet && countedRole(info.role) {
				s.countBlob(st, d) // counted when sent on: the bucket answers it
			}
			http.Redirect(w, r, u, http.StatusFound)
			return
		}
		if r.Method == http.MethodHead { // (Terraform 1.11 asks before it downloads)
			if size, ok, err := bs.StatBlob(r.Context(), d); ok {
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				blobHeaders(w.Header(), d, info.role)
				w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
				return
			}
		}
		if rc, size, ok, err := streamGet(bs, r, d); ok {
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			defer rc.Close()
			blobHeaders(w.Header(), d, info.role)
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			if err := copyHeld(w, rc); err != nil {
				// Cut off short of Content-Length: the client sees a
				// broken download, never a whole wrong one.
				s.log.Error("blob download cut off", "blob", string(d), "err", err)
				return
			}
			if s.usage != nil && countedRole(info.role) {
				s.countBlob(st, d)
			}
			return
		}
	}
	f, err := s.store.OpenBlob(d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	blobHeaders(w.Header(), d, info.role)
	if s.usage != nil && r.Method == http.MethodGet && countedRole(info.role) {
		s.serveCounted(w, r, st, d, f)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, f)
}

// streamGet is StreamBlob for a GET (ok false for any other method).
func streamGet(bs blobStreamer, r *http.Request, d verify.Digest) (io.ReadCloser, int64, bool, error) {
	if r.Method != http.MethodGet {
		return nil, 0, false, nil
	}
	return bs.StreamBlob(r.Context(), d)
}

// blobStreamer is a store whose blobs may live elsewhere (a replica of a
// store in object storage, *store.Store with a remote): StreamBlob opens
// one for a single read that fails at its end on a digest mismatch; ok is
// false for a blob to be opened with OpenBlob.
type blobStreamer interface {
	StreamBlob(ctx context.Context, d verify.Digest) (rc io.ReadCloser, size int64, ok bool, err error)
	StatBlob(ctx context.Context, d verify.Digest) (size int64, ok bool, err error)
	RedirectBlob(ctx context.Context, method string, d verify.Digest) (url string, ok bool, err error)
}

// copyHeld copies r to w holding the last chunk read back until r has
// ended cleanly, so a read that fails at its end (a digest mismatch found
// at the last byte) leaves the answer short of its Content-Length.
// Each chunk is filled whole before it is written: a body over TLS
// arrives a record (16 KiB or less) per read, and writing each as it came
// cost a quarter more CPU per byte (measured over a TLS endpoint). Memory:
// two 64 KiB buffers per download in flight, swapped, never copied.
// Only r's own io.EOF is a clean end: io.ReadFull's io.ErrUnexpectedEOF
// cannot be told from the same error of a body whose connection to the
// object store broke (a reset), which must cut the answer off too.
func copyHeld(w io.Writer, r io.Reader) error {
	buf, held := make([]byte, 64<<10), make([]byte, 64<<10)
	nh := 0
	for {
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[n:])
			n += m
		}
		if n > 0 {
			if nh > 0 {
				if _, werr := w.Write(held[:nh]); werr != nil {
					return werr
				}
			}
			buf, held, nh = held, buf, n
		}
		if err == io.EOF { // ended cleanly (r checked its digest)
			_, werr := w.Write(held[:nh])
			return werr
		}
		if err != nil {
			return err
		}
	}
}

// blobHeaders are a blob answer's headers, by its role.
func blobHeaders(h http.Header, d verify.Digest, role string) {
	h.Set("ETag", `"`+string(d)+`"`)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	switch role {
	case dist.RoleProviderPackage, dist.RoleModuleZip:
		h.Set("Content-Type", "application/zip")
	case dist.RoleModuleArchive:
		h.Set("Content-Type", "application/gzip")
	case dist.RoleShasums:
		h.Set("Content-Type", "text/plain; charset=utf-8")
	case dist.RoleGateReport:
		// A scanner's report (SARIF or text) of untrusted input: shown as
		// text, never rendered, and sandboxed should a browser try.
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	case dist.RoleGoBuildInfo:
		h.Set("Content-Type", "application/json")
	default:
		h.Set("Content-Type", "application/octet-stream")
	}
}

// whatBlob names blob d for the access log and the audit (the first owner
// the request's principal may see), and says whether the request may have
// it: with an access file, the blob must be owned by an address the
// principal's rules allow now, whether a token or a signed URL admitted
// it (a URL issued before its token's rules were narrowed stops working
// at once, as one of a revoked token does); else it is answered as a
// missing blob.
func (s *Answers) whatBlob(w http.ResponseWriter, r *http.Request, st *Snapshot, d verify.Digest) (*access.Download, bool) {
	if s.access == nil && access.NoteOf(w) == nil {
		return nil, true // nothing to name it for, nothing to check
	}
	owners := st.ownerIndex()[d]
	if dl := st.scopeFor(access.Of(r).Principal()).owner(owners); dl != nil {
		return dl, true
	}
	if s.access != nil {
		if len(owners) > 0 {
			access.NoteDenied(w, owners[0].Address)
		}
		return nil, false
	}
	if len(owners) > 0 {
		return owners[0], true
	}
	return nil, true
}

// OriginsDoc is the JSON at /airgap/v1/origins, read by 'airgap client-config --url'.
type OriginsDoc struct {
	Origins   []string `json:"origins"`
	Providers int      `json:"provider_versions"`
	Modules   int      `json:"module_versions"`
}

func (s *Answers) originsDoc(r *http.Request, rc *reqCtx) (any, map[string]string, error) {
	v := rc.sc
	np, nm := v.count()
	return OriginsDoc{Origins: append([]string{}, v.origins...), Providers: np, Modules: nm}, nil, nil
}

// Origins lists the origins of a catalog in default-view order.
func Origins(cat *dist.Catalog) []string { return newView(cat).origins }
