package access

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/internal/filestamp"
	"github.com/airgap/airgap/server/internal/reply"
)

// Access control: with an access file (serve --access FILE, package acl)
// every request but a few needs a principal, a token the file lists or the
// anonymous rule, and sees only the scope its rules allow (scope).
//
// What the clients send, read from their sources (Terraform 1.11
// internal/getproviders, internal/registry, terraform-svchost; OpenTofu
// 1.11/1.12 the same and registry/client.go; oras-go 2.6 auth.Client):
//
//   - "Authorization: Bearer <token>" from TF_TOKEN_<host> or a credentials
//     block, looked up for the host of the *address* (registry.terraform.io
//     for hashicorp/aws, also when a host block sends it to the appliance)
//     or, for a network mirror, the mirror URL's host; on the provider and
//     module registry APIs and the mirror's index.json / <version>.json.
//   - Nothing on package downloads and module archives (go-getter): those
//     URLs are signed (urlKeys). OpenTofu ≥ 1.12 sends the token on a
//     module archive when the download answer says use_registry_credentials.
//   - OCI (OpenTofu's oci_mirror and oci:// sources): nothing until a 401
//     with a WWW-Authenticate challenge; then, for a Bearer challenge, it
//     asks the realm for a token (with Basic credentials from an
//     oci_credentials block's username and password, or none), or uses an
//     oci_credentials access_token directly.
//
// Where each kind of request gets its principal:
//
//	/healthz, /ca.pem, /.well-known/terraform.json   open (no catalog data)
//	/blobs/…, /archives/…  a valid signed URL, else a principal (either way, its rules must allow an owner of the blob now)
//	/v2/token              Basic (any user name, the token as password) or none
//	/v2/…                  Bearer (a /v2/token bearer or a token) or Basic
//	/, /ui/…               Basic or Bearer (the browser's prompt), else anonymous
//	everything else        Bearer or Basic, else anonymous
//
// A request without credentials gets the anonymous rule when the file has
// one and 401 otherwise; a request with bad credentials always gets 401
// (never a quiet fall back to anonymous), an expired token a 401 whose
// body says it expired. 401 answers do not depend on the path, so they say
// nothing about what exists; a principal's request for an address outside
// its rules is answered as for one that does not exist (scope).
//
// Failed attempts (a credential that is not a valid token, a forged URL
// signature) are limited per client address (failLimiter), so the
// appliance does not become an oracle worth hammering; tokens have 256
// bits, so this bounds noise and CPU, not guessing odds. The secret itself
// is never logged, counted or echoed: logs and the audit name the token.

// DefaultURLTTL is how long a signed download URL is valid (before the
// bucket; see urlExpiry).
const DefaultURLTTL = 15 * time.Minute

// AccessOptions configure NewAccessControl.
type AccessOptions struct {
	File   string // the access file
	TLSDir string // STORE/tls: the URL signing keys live there
	// StateDir is STORE/state: login tokens live there (LoginState);
	// "" refuses an access file with a login block.
	StateDir string
	// Logins, when set, is where login tokens live instead of StateDir
	// (a store in a bucket: the state every replica shares).
	Logins LoginStore
	URLTTL time.Duration // zero: DefaultURLTTL
	Log    *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// AccessControl enforces an access file. Safe for concurrent use; the
// file is re-read by Reload (SIGHUP) and Watch (when it changes).
type AccessControl struct {
	file    string
	keys    *urlKeys
	ttl     time.Duration
	log     *slog.Logger
	now     func() time.Time
	set     atomic.Pointer[Set]
	proxies atomic.Pointer[TrustedProxies]
	fails   *failLimiter

	mu    sync.Mutex // serializes reloads
	stamp string

	// Single sign-on (LoginService): the state of login tokens (nil until the
	// file has a login block), and their principals for the current
	// access set.
	stateDir   string
	loginStore LoginStore
	logins     atomic.Pointer[LoginState]
	lset       atomic.Pointer[loginSet]
	lmu        sync.Mutex
	lastScan   atomic.Int64 // Unix ns of the last scan a name miss asked for
	// lastMiss is when (Unix ns) an unknown token last made us look at the
	// file (refreshOnMiss).
	lastMiss atomic.Int64
	// staleLog is when (Unix ns) a login token refused for a sign-in
	// state that cannot be read was last logged (at most every 10 s).
	staleLog atomic.Int64
	// watching: Watch runs, re-reading the tokens every second; only then
	// is a state not read for loginStaleAfter a sign of trouble.
	watching atomic.Bool
}

// loginsStale reports whether login tokens must be refused: Watch runs and
// the sign-in state ls was not read for loginStaleAfter.
func (a *AccessControl) loginsStale(ls *LoginState) bool {
	return ls != nil && a.watching.Load() && !ls.fresh(time.Now())
}

// staleLogins logs, at most every 10 s, that login tokens are refused
// because the sign-in state cannot be read.
func (a *AccessControl) staleLogins() {
	now := time.Now().UnixNano()
	last := a.staleLog.Load()
	if now-last < int64(10*time.Second) || !a.staleLog.CompareAndSwap(last, now) {
		return
	}
	a.log.Error("login tokens refused: the sign-in state has not been read for a while (a revocation could be missed)", "stale_after", loginStaleAfter)
}

// Set is one version of the access file, compiled for lookups.
type Set struct {
	file   *acl.File
	byHash map[[32]byte]*Principal
	byName map[string]*Principal // lower-case name
	anon   *Principal
	tokens int
}

// principal is who a request acts as.
type Principal struct {
	name     string // the token's name, or acl.AnonymousName
	hash     [32]byte
	rules    *acl.Rules
	expires  time.Time
	admitted *Admission // {p: itself}, made once
	// id is what the MACs of the signed URLs and OCI bearers issued to
	// the principal bind besides its name: the token's hash (hex), "" for
	// anonymous. A token revoked and created again under the same name
	// has another hash, so what was issued to the old one stops working.
	id string
	// revoked is when the token was revoked (zero: it was not): it is
	// refused, under its name.
	revoked time.Time
	// login is the record of a login token (nil for the access file's).
	login *LoginToken
}

// Name is the token's name, or acl.AnonymousName.
func (p *Principal) Name() string { return p.name }

// Rules are what the principal may read.
func (p *Principal) Rules() *acl.Rules { return p.rules }

// Login is the record of a login token (nil for the access file's tokens).
func (p *Principal) Login() *LoginToken { return p.login }

// User is the person of a login token ("" for the access file's tokens, and for no principal).
func (p *Principal) User() string { return p.user() }

// user is the person of a login token ("" for the access file's tokens).
func (p *Principal) user() string {
	if p == nil || p.login == nil {
		return ""
	}
	return p.login.Who()
}

// macID is p's id, or "" for no principal (a name the file lacks: no
// token's MAC verifies with it, so a URL or bearer of a revoked token is
// refused as invalid, at the same cost as any other).
func (p *Principal) macID() string {
	if p == nil {
		return ""
	}
	return p.id
}

// expired reports whether p's token has expired at now.
func (p *Principal) expired(now time.Time) bool { return !p.expires.IsZero() && !now.Before(p.expires) }

// NewAccessControl loads the access file and the store's URL keys
// (creating them on first use).
func NewAccessControl(opt AccessOptions) (*AccessControl, error) {
	a := &AccessControl{file: opt.File, ttl: opt.URLTTL, log: opt.Log, now: opt.Now, fails: newFailLimiter(), stateDir: opt.StateDir, loginStore: opt.Logins}
	if a.ttl <= 0 {
		a.ttl = DefaultURLTTL
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	keys, err := openURLKeys(opt.TLSDir)
	if err != nil {
		return nil, fmt.Errorf("the URL signing keys: %w", err)
	}
	a.keys = keys
	if _, err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Current is the version of the access file in force.
func (a *AccessControl) Current() *Set { return a.set.Load() }

// Tokens is how many tokens the version lists; Anonymous whether it has an
// anonymous rule.
func (s *Set) Tokens() int     { return s.tokens }
func (s *Set) Anonymous() bool { return s.anon != nil }

// SetProxies makes failed-attempt limits count per client address as
// X-Forwarded-For from these proxies says.
func (a *AccessControl) SetProxies(p *TrustedProxies) { a.proxies.Store(p) }

// Reload re-reads the access file if it changed (or was never read). A
// file that does not load changes nothing: the previous rules stay.
func (a *AccessControl) Reload() (changed bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, err := filestamp.Of(a.file)
	if err != nil {
		return false, fmt.Errorf("the access file: %w", err)
	}
	if st == a.stamp && a.set.Load() != nil {
		return false, nil
	}
	f, err := acl.Load(a.file)
	if err != nil {
		return false, err
	}
	if err := a.openLogins(f); err != nil {
		return false, err
	}
	a.set.Store(compileAccess(f))
	a.stamp = st
	return true, nil
}

// ReloadFrom switches to the access file at path (SIGHUP) and re-reads it;
// on failure the previous file and rules stay.
func (a *AccessControl) ReloadFrom(path string) (string, error) {
	a.mu.Lock()
	prev, prevStamp := a.file, a.stamp
	a.file, a.stamp = path, ""
	a.mu.Unlock()
	if _, err := a.Reload(); err != nil {
		a.mu.Lock()
		a.file, a.stamp = prev, prevStamp
		a.mu.Unlock()
		return "", err
	}
	return fmt.Sprintf("access=%s (%d tokens)", path, a.set.Load().tokens), nil
}

// noRules allows nothing.
var noRules, _ = acl.CompileRules(nil)

func compileAccess(f *acl.File) *Set {
	s := &Set{file: f, byHash: map[[32]byte]*Principal{}, byName: map[string]*Principal{}, tokens: len(f.Tokens)}
	for _, r := range f.Revoked {
		// Only by hash: the name may belong to a new token.
		s.byHash[r.Hash] = &Principal{name: r.Name, hash: r.Hash, revoked: r.Revoked, rules: noRules, id: hex.EncodeToString(r.Hash[:])}
	}
	for _, t := range f.Tokens {
		p := &Principal{name: t.Name, hash: t.Hash, rules: t.Rules, expires: t.Expires, id: hex.EncodeToString(t.Hash[:])}
		p.admitted = &Admission{p: p}
		s.byHash[t.Hash] = p
		s.byName[strings.ToLower(t.Name)] = p
	}
	if f.Anonymous != nil {
		s.anon = &Principal{name: acl.AnonymousName, rules: f.Anonymous}
		s.anon.admitted = &Admission{p: s.anon}
		s.byName[acl.AnonymousName] = s.anon
	}
	return s
}

// Watch re-reads the access file and the URL keys within a second of a
// change until ctx ends, so that 'airgap token revoke' takes effect on
// every replica without a signal.
func (a *AccessControl) Watch(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	a.watching.Store(true)
	defer a.watching.Store(false)
	var lastErr string
	var sweeping atomic.Bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ls := a.logins.Load(); ls != nil {
			if _, err := ls.scan(false); err != nil {
				a.log.Error("reading the login tokens", "err", err)
			}
			// Aside: removing thousands of expired codes from a bucket
			// takes a while, and the tokens must still be looked at
			// every second (loginStaleAfter).
			if sweeping.CompareAndSwap(false, true) {
				go func() {
					defer sweeping.Store(false)
					ls.sweep(time.Now())
				}()
			}
		}
		changed, err := a.Reload()
		switch {
		case err != nil && err.Error() != lastErr:
			a.log.Error("the access file changed but does not load; still enforcing the previous one", "file", a.file, "err", err)
		case changed:
			a.log.Info("access file reloaded", "file", a.file, "tokens", a.set.Load().tokens)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		if changed, err := a.keys.reload(); err != nil {
			a.log.Error("reloading the URL signing keys; still using the previous ones", "err", err)
		} else if changed {
			a.log.Info("URL signing keys reloaded")
		}
	}
}

// refreshOnMiss re-reads the access file, if it changed, when a token is
// not in it: a token created a moment ago works at once, instead of
// failing (and counting as failed attempts) until Watch notices. At most
// one look (a stat) per 100 ms, whatever clients send.
func (a *AccessControl) refreshOnMiss() bool {
	now := time.Now().UnixNano()
	last := a.lastMiss.Load()
	if now-last < int64(100*time.Millisecond) || !a.lastMiss.CompareAndSwap(last, now) {
		return false
	}
	changed, err := a.Reload()
	return err == nil && changed
}

// Auth failures, as the access log and the metrics name them.
const (
	authMissing   = "missing"     // no credentials where they are needed
	authInvalid   = "invalid"     // not a token of the access file
	authExpired   = "expired"     // a token past its expiry
	authThrottled = "throttled"   // too many failures from the address
	authRevoked   = "revoked"     // a token that was revoked
	urlInvalid    = "url_invalid" // a download URL with a bad signature
	urlExpired    = "url_expired" // a download URL past its expiry, or whose token went away
	authUnchecked = "unchecked"   // a login token while the sign-in state cannot be read
)

// authFail is a refused request: why, and for an expired token which.
type authFail struct {
	reason string
	token  string    // the expired or revoked token's name
	user   string    // a login token's person
	at     time.Time // its expiry or revocation, or the URL's expiry
	retry  int       // seconds, for throttled
}

// credential returns the secret a request presents: a Bearer token, or the
// password of Basic credentials (the user name is ignored: OCI clients and
// browsers insist on one), or without either the catalog's session cookie
// (a login token, LoginService).
func credential(r *http.Request) (secret string, present bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if c, err := r.Cookie(sessionCookie); err == nil {
			return c.Value, true
		}
		return "", false
	}
	scheme, rest, _ := strings.Cut(h, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return strings.TrimSpace(rest), true
	case strings.EqualFold(scheme, "Basic"):
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
		if err != nil {
			return "", true
		}
		_, pw, _ := strings.Cut(string(b), ":")
		return pw, true
	}
	return "", true
}

// authenticate finds the principal of a request in set. fail is nil on
// success.
func (a *AccessControl) authenticate(r *http.Request, set *Set) (*Principal, *authFail) {
	secret, present := credential(r)
	if !present {
		if set.anon != nil {
			return set.anon, nil
		}
		return nil, &authFail{reason: authMissing}
	}
	if fail := a.throttled(r); fail != nil {
		return nil, fail
	}
	if strings.HasPrefix(secret, ociBearerPrefix) && strings.HasPrefix(r.URL.Path, "/v2/") && r.URL.Path != "/v2/token" {
		// A bearer works on the OCI API, never to get another bearer:
		// a leaked one ends when it expires.
		return a.checkBearer(r, secret, set)
	}
	if !acl.LooksLikeSecret(secret) {
		a.failed(r)
		return nil, &authFail{reason: authInvalid}
	}
	h := acl.HashSecret(secret)
	p := set.byHash[h]
	if p == nil {
		p = a.loginPrincipal(h, set)
	}
	if p == nil && a.refreshOnMiss() {
		cur := a.set.Load()
		if p = cur.byHash[h]; p == nil {
			p = a.loginPrincipal(h, cur)
		}
	}
	if p == nil || subtle.ConstantTimeCompare(p.hash[:], h[:]) != 1 {
		a.failed(r)
		return nil, &authFail{reason: authInvalid}
	}
	if !p.revoked.IsZero() {
		return nil, &authFail{reason: authRevoked, token: p.name, user: p.user(), at: p.revoked}
	}
	if p.login != nil && a.loginsStale(a.logins.Load()) {
		a.staleLogins()
		return nil, &authFail{reason: authUnchecked, token: p.name, user: p.user()}
	}
	if p.expired(a.now()) {
		return nil, &authFail{reason: authExpired, token: p.name, user: p.user(), at: p.expires}
	}
	return p, nil
}

// throttled refuses a request with credentials from an address over its
// failure limit. While no address is over it (the usual case) it costs
// one atomic load.
func (a *AccessControl) throttled(r *http.Request) *authFail {
	now := a.now()
	if !a.fails.anyBlocked(now) {
		return nil
	}
	if key, limited := a.clientKey(r); limited {
		if wait := a.fails.wait(key, now); wait > 0 {
			return &authFail{reason: authThrottled, retry: wait}
		}
	}
	return nil
}

// failed counts a failed attempt against the request's client address.
func (a *AccessControl) failed(r *http.Request) {
	key, limited := a.clientKey(r)
	if limited && a.fails.fail(key, a.now()) {
		a.log.Warn("too many failed token attempts; refusing credentials from this address for a while", "client", key)
	}
}

// clientKey is the address failed attempts are counted under: the client
// (X-Forwarded-For from trusted proxies), IPv6 by /64. limited is false
// for a passthrough balancer, or a trusted proxy seen as the client
// itself: it carries every client on its own address (cap those on the
// balancer, as with max-conns-per-ip).
func (a *AccessControl) clientKey(r *http.Request) (string, bool) {
	tp := a.proxies.Load()
	client, _ := tp.ClientAddr(r)
	if ip, err := netip.ParseAddr(client); err == nil {
		if tp.CarriesMany(ip) {
			return "", false
		}
		return AddrKey(ip).String(), true
	}
	return client, true
}

// principalByName is the principal a signed URL or bearer names, expired
// or revoked or not, or nil when there is none of that name (a login token
// another replica issued a moment ago is looked for in the state).
func (a *AccessControl) principalByName(set *Set, name string) *Principal {
	if p := set.byName[strings.ToLower(name)]; p != nil || !strings.HasPrefix(name, LoginNamePrefix) {
		return p
	}
	return a.loginByName(set, name)
}

// checkSigned verifies the signed-URL query of a download. present is
// false when the URL carries no signature.
func (a *AccessControl) checkSigned(r *http.Request, set *Set) (p *Principal, present bool, fail *authFail) {
	if !strings.Contains(r.URL.RawQuery, "sig=") {
		return nil, false, nil
	}
	if fail := a.throttled(r); fail != nil {
		return nil, true, fail
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	who, e, sig := q.Get("tok"), q.Get("exp"), q.Get("sig")
	exp, perr := strconv.ParseInt(e, 10, 64)
	p = a.principalByName(set, who)
	if err != nil || perr != nil || !a.keys.verify(sig, macURL, who, e, r.URL.Path, p.macID()) {
		a.failed(r)
		return nil, true, &authFail{reason: urlInvalid}
	}
	if at := time.Unix(exp, 0); !a.now().Before(at) {
		return nil, true, &authFail{reason: urlExpired, at: at}
	}
	if p == nil || p.expired(a.now()) || !p.revoked.IsZero() {
		return nil, true, &authFail{reason: urlExpired, token: who, user: p.user()}
	}
	return p, true, nil
}

// Expiry is the expiry of URLs signed now.
func (a *AccessControl) Expiry() int64 { return urlExpiry(a.now(), a.ttl) }

// SignURL returns path with a signed query for principal p, expiring at
// exp; subdir, if any, goes between them (go-getter's //subdir comes
// before the query, and the client strips it before it asks).
func (a *AccessControl) SignURL(path, subdir string, p *Principal, exp int64) string {
	u := path
	if subdir != "" {
		u += "//" + subdir
	}
	return u + "?" + a.keys.signedQuery(path, p.name, p.id, exp)
}

// refuse answers a refused request: 429 when throttled, 403 for a bad
// download URL, else 401 with the challenge the kind of client expects.
func (a *AccessControl) refuse(w http.ResponseWriter, r *http.Request, f *authFail) {
	noteAuth(w, f.token, f.reason)
	if n := NoteOf(w); n != nil {
		n.User = f.user
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	msg := f.message(a.ttl)
	if f.reason == authMissing && strings.HasPrefix(r.URL.Path, "/v2/") {
		msg = "this appliance requires a token: add an oci_credentials block for it to the CLI configuration (any username, the token as the password; 'airgap client-config --mode oci --token-file FILE' writes one)"
	}
	switch {
	case f.reason == authThrottled:
		h.Set("Retry-After", strconv.Itoa(f.retry))
		writeStatusJSON(w, r, http.StatusTooManyRequests, msg)
	case f.reason == authUnchecked:
		h.Set("Retry-After", "5")
		writeStatusJSON(w, r, http.StatusServiceUnavailable, msg)
	case f.reason == urlInvalid || f.reason == urlExpired:
		writeStatusJSON(w, r, http.StatusForbidden, msg)
	case strings.HasPrefix(r.URL.Path, "/v2/"):
		h.Set("Www-Authenticate", ociChallenge(r))
		h.Set("Docker-Distribution-API-Version", "registry/2.0")
		reply.OCIError(w, http.StatusUnauthorized, "UNAUTHORIZED", msg)
	case isUIPath(r.URL.Path) && r.Header.Get("Authorization") == "" && a.LoginConfig() != nil:
		// With single sign-on a browser signs in through the IdP
		// (LoginService); a session cookie that stopped working is dropped.
		if _, err := r.Cookie(sessionCookie); err == nil {
			clearCookie(w, sessionCookie)
		}
		h.Set("Location", SignInPath+"?next="+url.QueryEscape(safeNext(r.URL.RequestURI())))
		w.WriteHeader(http.StatusSeeOther)
	case isUIPath(r.URL.Path):
		refuseCatalog(w, r, f, msg)
	default:
		h.Set("Www-Authenticate", `Bearer realm="airgap"`)
		writeStatusJSON(w, r, http.StatusUnauthorized, msg)
	}
}

func (f *authFail) message(ttl time.Duration) string {
	switch f.reason {
	case authMissing:
		return "this appliance requires a token: set TF_TOKEN_<host> or a credentials \"<host>\" block in the CLI configuration ('airgap client-config --token-file FILE' writes one)"
	case authExpired:
		if f.token == "" {
			return fmt.Sprintf("the bearer token expired at %s: ask /v2/token for a new one", f.at.UTC().Format(time.RFC3339))
		}
		if f.user != "" {
			return fmt.Sprintf("the login token of %s expired at %s: run 'terraform login' (or 'tofu login') for this host again", f.user, f.at.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("token %q expired at %s: ask the appliance's operator for a new one", f.token, f.at.UTC().Format(time.RFC3339))
	case authRevoked:
		if f.user != "" {
			return fmt.Sprintf("the login token of %s was revoked at %s: run 'terraform login' (or 'tofu login') for this host again, or ask the appliance's operator", f.user, f.at.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("token %q was revoked at %s: ask the appliance's operator for a new one", f.token, f.at.UTC().Format(time.RFC3339))
	case authUnchecked:
		return "the appliance cannot read its sign-in state now, so it accepts no login token (a revoked one could pass): try again in a minute, or ask the appliance's operator"
	case authThrottled:
		return fmt.Sprintf("too many failed token attempts from this address: try again in %d s", f.retry)
	case urlInvalid:
		return "this download URL is not valid here (altered, signed for another path, or its token was revoked): ask the registry for the download again"
	case urlExpired:
		if f.token != "" {
			return fmt.Sprintf("the token %q this download URL was issued to is no longer valid", f.token)
		}
		return fmt.Sprintf("this download URL expired at %s (download URLs are valid for %s): run init again for a fresh one", f.at.UTC().Format(time.RFC3339), ttl)
	}
	return "the token is not valid on this appliance (revoked, mistyped, or for another appliance)"
}

func writeStatusJSON(w http.ResponseWriter, r *http.Request, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		json.NewEncoder(w).Encode(map[string][]string{"errors": {msg}})
	}
}

func isUIPath(p string) bool { return p == "/" || strings.HasPrefix(p, "/ui/") }

// Admission is how a request was admitted: as whom (WithAdmission puts it
// in the request's context for handlers). A signed download URL admits as
// the token it was issued to, with that token's rules as they are now.
type Admission struct {
	p *Principal
}

type reqAuthKey struct{}

// openAuth admits requests to open paths.
var openAuth = &Admission{}

// Principal is who the request acts as (nil: an open path, or no access
// control).
func (ra *Admission) Principal() *Principal {
	if ra == nil {
		return nil
	}
	return ra.p
}

// Of is how r was admitted (nil without access control).
func Of(r *http.Request) *Admission {
	ra, _ := r.Context().Value(reqAuthKey{}).(*Admission)
	return ra
}

// WithAdmission is r carrying how it was admitted, for its handlers.
func WithAdmission(r *http.Request, ra *Admission) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), reqAuthKey{}, ra))
}

// Need is what a route needs of a request before its handler runs (the
// server's route table says which).
type Need int

const (
	// NeedPrincipal: a token (Bearer, Basic, or the catalog's session
	// cookie) or the anonymous rule.
	NeedPrincipal Need = iota
	// NeedNothing: anyone (the answer carries no catalog data).
	NeedNothing
	// NeedSignedURL: a valid signed URL, else as NeedPrincipal.
	NeedSignedURL
	// NeedCredentials: as NeedPrincipal, but credentials are required even
	// with an anonymous rule (the OCI API: clients send none before a
	// challenge).
	NeedCredentials
)

// Admit decides whether a request may go on and as whom, under set (the
// version of the access file the request is answered with) and what its
// route needs; nil: it was refused (and answered). It allocates nothing
// for a request with a token or anonymous.
func (a *AccessControl) Admit(w http.ResponseWriter, r *http.Request, set *Set, need Need) *Admission {
	path := r.URL.Path
	if need == NeedNothing {
		return openAuth
	}
	if need == NeedSignedURL {
		p, present, fail := a.checkSigned(r, set)
		if fail != nil {
			a.refuse(w, r, fail)
			return nil
		}
		if present {
			if n := NoteOf(w); n != nil {
				n.Token, n.User, n.By = p.name, p.user(), "signed_url"
				if _, withToken := credential(r); withToken {
					// OpenTofu >= 1.12 sends the token to a module
					// location that says use_registry_credentials.
					if p2, fail := a.authenticate(r, set); fail == nil && p2 == p {
						n.By = "signed_url+token"
					}
				}
			}
			return p.admitted
		}
	}
	if need == NeedCredentials {
		// OCI clients send credentials only after a challenge, so /v2/
		// always challenges a request without any; anonymous OCI clients
		// get an anonymous bearer from /v2/token (ociToken).
		if _, present := credential(r); !present {
			a.refuse(w, r, &authFail{reason: authMissing})
			return nil
		}
	}
	if path == "/" && r.URL.RawQuery == "signin" && a.LoginConfig() != nil {
		// With single sign-on the catalog signs in through the IdP.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, SignInPath+"?next=%2F", http.StatusSeeOther)
		return nil
	}
	if path == "/" && r.URL.RawQuery == "signin" {
		// The catalog's "sign in" link: a challenge at "/" even when
		// anonymous may read, so that the browser asks for the token and
		// sends it on every page of the appliance afterwards.
		if _, present := credential(r); !present {
			a.refuse(w, r, &authFail{reason: authMissing})
			return nil
		}
	}
	p, fail := a.authenticate(r, set)
	if fail != nil {
		a.refuse(w, r, fail)
		return nil
	}
	if n := NoteOf(w); n != nil {
		n.Token, n.User, n.By = p.name, p.user(), authBy(r)
	}
	return p.admitted
}

// authBy says how a request's credentials came, for the access log:
// "token" (Bearer or Basic), "oci_bearer" (from /v2/token), "session" (the
// catalog's sign-in cookie) or "anonymous".
func authBy(r *http.Request) string {
	secret, present := credential(r)
	switch {
	case !present:
		return "anonymous"
	case strings.HasPrefix(secret, ociBearerPrefix):
		return "oci_bearer"
	case r.Header.Get("Authorization") == "":
		return "session"
	}
	return "token"
}
