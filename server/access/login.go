package access

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/server/ui"
)

// Single sign-on: with a login block in the access file the appliance is
// the OAuth 2.0 authorization server of 'terraform login' and 'tofu login'
// (the CLI's login.v1 protocol, advertised in discovery), and hands the
// person to the site's OpenID Connect identity provider to sign in:
//
//	terraform login HOST
//	  1 GET  /.well-known/terraform.json        login.v1: client, authz, token, ports
//	  2 GET  /oauth/authorization?…             (the person's browser) checked, then
//	       → the IdP's authorization endpoint, with a sealed state, a nonce and PKCE
//	  3 GET  /oauth/callback?code=…&state=…     the IdP sends the browser back: the
//	       code is exchanged at the IdP, the ID token verified (issuer, audience,
//	       signature by the IdP's published keys, expiry, nonce), the person's
//	       rules worked out, and a one-time code issued
//	       → http://localhost:PORT/login?code=…&state=… (the CLI's own listener)
//	  4 POST /oauth/token                       the CLI's code and PKCE verifier for
//	       a login token, which it stores in credentials.tfrc.json
//
// The catalog page signs in the same way (/oauth/signin → the IdP →
// /oauth/callback), ending with the login token in a session cookie
// (Secure, HttpOnly, SameSite=Lax, expiring with the token) instead of a
// code; /oauth/signout revokes it.
//
// The pieces, each a function below: checkAuthorization (step 2's
// request, as RFC 6749 and 7636 and the CLI's protocol allow it),
// beginSignIn (the IdP request), openPending (the callback's state:
// sealed by this appliance, not expired, started in this browser, not
// used before), completeSignIn (the code exchange and the ID token, with
// go-oidc and x/oauth2: no JOSE or OAuth parsing here), personOf (claims
// → who and which groups), finishCLI / finishBrowser, and exchangeCode
// (step 4: single use, 60 s, the same redirect URI, the PKCE verifier).
//
// Bounds: nothing is stored for a sign-in in progress (LoginState); a
// request's parameters are cut at 512 bytes each; at most loginExchanges
// requests to the IdP are in flight at once (others are told to try again);
// every answer from the IdP is read to at most 1 MiB, with a 15 s timeout
// (idpCache); a client address that presents bad states, codes or verifiers
// is limited like one that presents bad tokens (failLimiter).

// Paths of the login service.
const (
	AuthorizePath = "/oauth/authorization"
	TokenPath     = "/oauth/token"
	CallbackPath  = acl.CallbackPath
	SignInPath    = "/oauth/signin"
	SignOutPath   = "/oauth/signout"
	ConsentPath   = "/oauth/consent"
)

// Cookies. The __Host- prefix makes browsers insist on Secure, Path=/ and
// no Domain.
const (
	sessionCookie = "__Host-airgap_session" // the catalog's sign-in: a login token
	bindCookie    = "__Host-airgap_signin"  // binds a sign-in in progress to its browser
)

// LoginClientID is the client id discovery advertises for the CLI (a public
// client: it proves nothing, RFC 6749 §2.2; PKCE binds the code to it).
const LoginClientID = "terraform-cli"

// LoginPorts are the localhost ports the CLI may listen on (login.v1).
var LoginPorts = [2]int{10000, 10010}

// loginExchanges bounds the requests to the IdP in flight at once.
const loginExchanges = 32

const (
	domainState = "airgap-login-state-v1"
	maxParam    = 512
)

// LoginService answers the single sign-on endpoints (/oauth/…): the
// server's route table says which path goes to which of Authorize, Token,
// Callback, SignIn and SignOut, each called with the current login block
// and login state (Current).
type LoginService struct {
	a     *AccessControl
	log   *slog.Logger
	idps  idpCache
	slots chan struct{}
}

// registered reports whether a sign-in's redirect URI callback is among
// the login block's redirect_uris (the URIs registered at the identity
// provider), and those URIs. Without redirect_uris every name is taken as
// registered: serve's own list of names ('serve --check-config') is not
// what the operator registered, nor every name clients use (a --tls files
// certificate names more than --hostname, a proxy answers to names of its
// own), so judging by it would turn away sign-ins that work.
func (l *LoginService) registered(cfg *acl.Login, callback string) (bool, []string) {
	if len(cfg.RedirectURIs) == 0 {
		return true, nil
	}
	return slices.Contains(cfg.RedirectURIs, callback), cfg.RedirectURIs
}

// unregisteredFail is the page for a sign-in started on a name whose
// redirect URI is not registered: the identity provider would refuse it
// with a bare error of its own (it never redirects back on a redirect URI
// it does not know), so serve says which URI to register and where a
// sign-in works instead. At most 5 of those are named.
func unregisteredFail(cfg *acl.Login, callback string, registered []string) *loginFail {
	var alts []string
	for i, u := range registered {
		if i == 5 {
			alts = append(alts, fmt.Sprintf("and %d more", len(registered)-5))
			break
		}
		alts = append(alts, strings.TrimSuffix(u, CallbackPath)+"/")
	}
	hint := "Ask the appliance's operator to register " + callback + " at the identity provider for the client " + dist.Printable(cfg.ClientID) +
		" (and to add it to the login block's redirect_uris, or serve's --hostname)."
	if len(alts) > 0 {
		hint = "Open the appliance at an address where sign-in works: " + strings.Join(alts, ", ") + ". Or " + strings.ToLower(hint[:1]) + hint[1:]
	}
	return &loginFail{code: http.StatusBadRequest, reason: "unregistered_redirect_uri", heading: "Sign-in is not set up for this address",
		msg: "This sign-in started at " + strings.TrimSuffix(callback, CallbackPath) + "/, so the identity provider would be asked to send you back to " + callback +
			", which is not registered there for this appliance: it would refuse with an error of its own.", hint: hint}
}

// NewLoginService returns the login service of a.
func NewLoginService(a *AccessControl, log *slog.Logger) *LoginService {
	return &LoginService{a: a, log: log, slots: make(chan struct{}, loginExchanges)}
}

// LoginDiscovery is the login.v1 object of the discovery document; base
// is "" (relative URLs, for the appliance's own discovery) or the
// appliance's URL ending in "/" (host blocks in a CLI configuration, which
// do not resolve relative URLs against the appliance).
func LoginDiscovery(base string) map[string]any {
	if base != "" {
		base = strings.TrimSuffix(base, "/")
	}
	return map[string]any{
		"client":      LoginClientID,
		"grant_types": []string{"authz_code"},
		"authz":       base + AuthorizePath,
		"token":       base + TokenPath,
		"ports":       []int{LoginPorts[0], LoginPorts[1]},
	}
}

// LoginConfig is the current access file's login block (nil: none, or no
// access control).
func (a *AccessControl) LoginConfig() *acl.Login {
	if a == nil {
		return nil
	}
	if set := a.set.Load(); set != nil && set.file != nil {
		return set.file.Login
	}
	return nil
}

// Current is the current login block and login state; either nil: the
// access file has no login block, and the sign-in endpoints answer 404.
func (l *LoginService) Current() (*acl.Login, *LoginState) {
	return l.a.LoginConfig(), l.a.logins.Load()
}

// SignOut answers the catalog's sign-out (it needs no login block).
func (l *LoginService) SignOut(w http.ResponseWriter, r *http.Request, _ *acl.Login, ls *LoginState) {
	l.signOut(w, r, ls)
}

// pendingLogin is a sign-in in progress, sealed into the state parameter
// the IdP sends back.
type pendingLogin struct {
	ID       string `json:"id"`   // random, 32 hex: marks the sign-in used
	Kind     string `json:"k"`    // "cli" or "browser"
	Exp      int64  `json:"exp"`  // Unix time
	Nonce    string `json:"n"`    // the ID token must carry it
	Verifier string `json:"v"`    // our PKCE verifier toward the IdP
	Bind     string `json:"b"`    // sha256 of the browser's bind cookie
	Callback string `json:"cb"`   // our redirect URI at the IdP
	Issuer   string `json:"iss"`  // the login block it started under
	ClientID string `json:"cid"`  //
	Redirect string `json:"ru"`   // cli: the CLI's redirect URI
	State    string `json:"cs"`   // cli: the CLI's state
	Chall    string `json:"cc"`   // cli: the CLI's PKCE challenge
	Next     string `json:"next"` // browser: the page to return to
}

// loginFail is a refused sign-in: the status and page for the person, the
// reason for the audit and the log.
type loginFail struct {
	code    int
	reason  string // state, state_expired, state_browser, replayed, idp_refused, idp_unreachable, idp_answer, code, issuer, audience, expired, signature, id_token, nonce, no_rules, bad_request, busy, config, full, throttled
	heading string
	msg     string
	hint    string
	err     error // for the log
	user    string
	issuer  string // the IdP, when it is what failed
}

func (f *loginFail) Error() string { return f.reason + ": " + f.msg }

// redirectURIRe is what the CLI sends as redirect_uri (internal/command/
// login.go: "http://localhost:%d/login").
var redirectURIRe = regexp.MustCompile(`^http://localhost:([0-9]{5})/login$`)

// checkAuthorization checks step 2's request: response_type=code, the
// advertised client, a redirect URI on a localhost port within LoginPorts
// and nothing else, a state, and an S256 PKCE challenge.
func checkAuthorization(q url.Values) (*pendingLogin, *loginFail) {
	bad := func(msg string) (*pendingLogin, *loginFail) {
		return nil, &loginFail{code: http.StatusBadRequest, reason: "bad_request", heading: "This login request is not valid",
			msg: msg, hint: "Run 'terraform login' (or 'tofu login') again; if it happens again, tell the appliance's operator which client and version you use."}
	}
	for k, vs := range q {
		if len(vs) != 1 || len(vs[0]) > maxParam {
			return bad(fmt.Sprintf("The parameter %q is repeated or too long.", dist.Printable(reply.Cut(k, 64))))
		}
	}
	if q.Get("response_type") != "code" {
		return bad("Only the authorization code grant (response_type=code) is supported.")
	}
	if q.Get("client_id") != LoginClientID {
		return bad(fmt.Sprintf("The client %q is not the one this appliance's discovery document names (%q).", dist.Printable(q.Get("client_id")), LoginClientID))
	}
	m := redirectURIRe.FindStringSubmatch(q.Get("redirect_uri"))
	port := 0
	if m != nil {
		port, _ = strconv.Atoi(m[1])
	}
	if port < LoginPorts[0] || port > LoginPorts[1] {
		return bad(fmt.Sprintf("The redirect URI %q is not http://localhost:PORT/login with a port from %d to %d, where the CLI listens.", dist.Printable(q.Get("redirect_uri")), LoginPorts[0], LoginPorts[1]))
	}
	if q.Get("code_challenge_method") != "S256" || !isBase64URL(q.Get("code_challenge"), 43) {
		return bad("The request has no PKCE challenge of method S256 (RFC 7636), which this appliance requires.")
	}
	st := q.Get("state")
	if st == "" || dist.Printable(st) != st {
		return bad("The request has no state, or one with control characters.")
	}
	return &pendingLogin{Kind: "cli", Redirect: q.Get("redirect_uri"), State: st, Chall: q.Get("code_challenge")}, nil
}

func isBase64URL(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// authorize answers step 2.
func (l *LoginService) Authorize(w http.ResponseWriter, r *http.Request, cfg *acl.Login, ls *LoginState) {
	pl, fail := checkAuthorization(r.URL.Query())
	if fail != nil {
		l.refuse(w, r, fail, "cli")
		return
	}
	l.beginSignIn(w, r, cfg, ls, pl)
}

// signIn starts the catalog's sign-in; next is the page to return to.
func (l *LoginService) SignIn(w http.ResponseWriter, r *http.Request, cfg *acl.Login, ls *LoginState) {
	l.beginSignIn(w, r, cfg, ls, &pendingLogin{Kind: "browser", Next: safeNext(r.URL.Query().Get("next"))})
}

// safeNext keeps a return path on this appliance: an absolute path that is
// not protocol-relative, printable, at most 512 bytes; else "/".
func safeNext(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") || len(p) > maxParam ||
		dist.Printable(p) != p || strings.ContainsAny(p, " \\") {
		return "/"
	}
	return p
}

// beginSignIn sends the browser to the IdP: pl is completed (id, nonce,
// our PKCE verifier, expiry, the browser binding, our callback URL) and
// sealed into the state parameter.
func (l *LoginService) beginSignIn(w http.ResponseWriter, r *http.Request, cfg *acl.Login, ls *LoginState, pl *pendingLogin) {
	callback, ok := callbackURL(r)
	if !ok {
		l.refuse(w, r, &loginFail{code: http.StatusBadRequest, reason: "bad_request", heading: "This login request is not valid",
			msg: "The request does not name this appliance by a host name (its Host header).", hint: "Use the appliance's name, as the client configuration does."}, pl.Kind)
		return
	}
	if ok, reg := l.registered(cfg, callback); !ok {
		l.refuse(w, r, unregisteredFail(cfg, callback, reg), pl.Kind)
		return
	}
	p, err := l.idps.provider(r.Context(), cfg)
	if err != nil {
		l.refuse(w, r, unreachable(cfg, err), pl.Kind)
		return
	}
	bind := bindValue(r)
	pl.ID, pl.Nonce, pl.Verifier = randomHex(16), randomHex(16), oauth2.GenerateVerifier()
	pl.Exp = l.a.now().Add(pendingLoginTTL).Unix()
	pl.Bind, pl.Callback, pl.Issuer, pl.ClientID = hashB64(bind), callback, cfg.Issuer, cfg.ClientID
	oc := p.oauth(callback)
	u := oc.AuthCodeURL(ls.seal(domainState, pl), oauth2.SetAuthURLParam("nonce", pl.Nonce), oauth2.S256ChallengeOption(pl.Verifier))
	http.SetCookie(w, &http.Cookie{Name: bindCookie, Value: bind, Path: "/", MaxAge: int(pendingLoginTTL / time.Second),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// callbackURL is our redirect URI at the IdP, for the name the request
// used: https://HOST[:PORT]/oauth/callback (register each name people use
// at the IdP; 'serve --check-config' prints them).
func callbackURL(r *http.Request) (string, bool) {
	h := strings.ToLower(r.Host)
	name := h
	if host, port, err := net.SplitHostPort(h); err == nil {
		name = host
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", false
		}
	}
	if !dist.ValidHost(name) && net.ParseIP(name) == nil {
		return "", false
	}
	return "https://" + h + CallbackPath, true
}

// bindValue is the browser's bind cookie, kept when it has one (two
// sign-ins in one browser at once both stay valid), else a new one.
func bindValue(r *http.Request) string {
	if c, err := r.Cookie(bindCookie); err == nil && isBase64URL(c.Value, 43) {
		return c.Value
	}
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashB64(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openPending opens the callback's state: sealed by this appliance (under
// the store's key), not expired, started in this browser, and not used
// before.
func (l *LoginService) openPending(r *http.Request, ls *LoginState) (*pendingLogin, *loginFail) {
	again := "Start again: run 'terraform login' (or 'tofu login'), or use Sign in on the catalog page."
	var pl pendingLogin
	if err := ls.unseal(domainState, r.URL.Query().Get("state"), &pl); err != nil {
		return nil, &loginFail{code: http.StatusBadRequest, reason: "state", heading: "This sign-in link is not valid",
			msg: "Its state was not made by this appliance: it was altered, or comes from another appliance.", hint: again, err: err}
	}
	if !l.a.now().Before(time.Unix(pl.Exp, 0)) {
		return nil, &loginFail{code: http.StatusBadRequest, reason: "state_expired", heading: "This sign-in took too long",
			msg: fmt.Sprintf("A sign-in must be completed within %s.", pendingLoginTTL), hint: again}
	}
	c, err := r.Cookie(bindCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(hashB64(c.Value)), []byte(pl.Bind)) != 1 {
		return nil, &loginFail{code: http.StatusBadRequest, reason: "state_browser", heading: "This sign-in was started in another browser",
			msg: "The sign-in came back to a browser that did not start it (or that does not keep this appliance's cookies).", hint: again}
	}
	if ls.wasUsed(pl.ID) {
		return nil, &loginFail{code: http.StatusBadRequest, reason: "replayed", heading: "This sign-in was already completed",
			msg: "Its link was used before; a sign-in link works once.", hint: again}
	}
	return &pl, nil
}

// callback answers step 3.
func (l *LoginService) Callback(w http.ResponseWriter, r *http.Request, cfg *acl.Login, ls *LoginState) {
	if f := l.a.throttled(r); f != nil {
		w.Header().Set("Retry-After", strconv.Itoa(f.retry))
		l.refuse(w, r, &loginFail{code: http.StatusTooManyRequests, reason: "throttled", heading: "Too many failed sign-ins from this address",
			msg: f.message(0), hint: "Wait, then start again."}, "")
		return
	}
	pl, fail := l.openPending(r, ls)
	if fail != nil {
		l.a.failed(r)
		l.refuse(w, r, fail, "")
		return
	}
	if fail := l.idpError(r.URL.Query(), cfg); fail != nil {
		l.refuse(w, r, fail, pl.Kind)
		return
	}
	if cfg.Issuer != pl.Issuer || cfg.ClientID != pl.ClientID {
		l.refuse(w, r, &loginFail{code: http.StatusBadRequest, reason: "config", heading: "The appliance's sign-in changed",
			msg: "Its identity provider was changed while you signed in.", hint: "Start again."}, pl.Kind)
		return
	}
	who, fail := l.completeSignIn(r, cfg, pl)
	if fail != nil {
		if fail.reason != "idp_unreachable" && fail.reason != "busy" {
			// A code or ID token the IdP did not give this sign-in: the
			// client's doing, limited like bad tokens (each one cost a
			// request to the IdP).
			l.a.failed(r)
		}
		l.refuse(w, r, fail, pl.Kind)
		return
	}
	if ok, err := ls.markUsed(pl.ID, time.Unix(pl.Exp, 0)); !ok {
		l.refuse(w, r, &loginFail{code: http.StatusBadRequest, reason: "replayed", heading: "This sign-in was already completed",
			msg: "Its link was used before; a sign-in link works once.", hint: "Start again.", err: err, user: who.Who()}, pl.Kind)
		return
	}
	file := l.a.set.Load().file
	pats, matched := file.LoginRules(who.groups, who.email, who.emailUsable)
	if len(pats) == 0 {
		l.refuse(w, r, noRulesFail(who), pl.Kind)
		return
	}
	now := l.a.now().UTC().Truncate(time.Second)
	client, _ := l.a.proxies.Load().ClientAddr(r)
	rec := &LoginToken{User: who.email, Subject: who.subject, Issuer: cfg.Issuer, Groups: matched, EmailUnverified: who.email != "" && !who.emailUsable,
		Via: pl.Kind, Client: client, Created: now, Expires: now.Add(cfg.TokenLifetime)}
	if pl.Kind == "cli" {
		l.finishCLI(w, r, ls, pl, rec)
		return
	}
	l.finishBrowser(w, r, ls, pl, rec)
}

// idpError is the IdP's own refusal (error=access_denied, …), shown as it
// said it (printable, cut).
func (l *LoginService) idpError(q url.Values, cfg *acl.Login) *loginFail {
	e := q.Get("error")
	if e == "" {
		return nil
	}
	msg := "The identity provider answered " + dist.Printable(reply.Cut(e, 64))
	if d := q.Get("error_description"); d != "" {
		msg += ": " + dist.Printable(reply.Cut(d, 300))
	}
	return &loginFail{code: http.StatusForbidden, reason: "idp_refused", heading: "The identity provider did not sign you in",
		msg: msg + ".", hint: "Try again; if it says you may not use this appliance, ask the identity provider's administrators (its client is " + dist.Printable(cfg.ClientID) + ")."}
}

// consentGrant is what the consent page's form carries, sealed: the
// sign-in the IdP completed, for the CLI that asked, bound to the browser
// that signed in (Bind, the hash of its sign-in cookie) and used once (ID).
type consentGrant struct {
	ID       string     `json:"id"`
	Token    LoginToken `json:"t"`
	Redirect string     `json:"ru"`
	State    string     `json:"cs"`
	Chall    string     `json:"cc"`
	Bind     string     `json:"b"`
	Exp      int64      `json:"exp"`
}

// consentTTL is how long the consent page's button works.
const consentTTL = 5 * time.Minute

// consentPage asks the person, before any code is issued, whether the
// program listening on the CLI's port of this computer may have a login
// token in their name (RFC 8252 §8.6): whoever can make a signed-in person
// follow a link could otherwise mint their token for whatever listens on
// localhost (another user of a shared terminal server).
var consentPage = template.Must(template.New("consent").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow terraform login? - airgap</title></head>
<body><main>
<h1 id="consent-heading">Allow a command-line login as {{.Who}}?</h1>
<p>A program listening on <strong>localhost port {{.Port}}</strong> of this computer asks for a login token of this appliance in the name of <strong>{{.Who}}</strong>{{if .Groups}} (groups: {{.Groups}}){{end}}, for {{.Lifetime}}.</p>
<p>Allow it only if you just ran <code>terraform login</code> (or <code>tofu login</code>) on this computer yourself. If you did not, deny: someone may be trying to use your sign-in.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="consent" value="{{.Grant}}">
<button type="submit" name="action" value="allow" id="consent-allow">Allow</button>
<button type="submit" name="action" value="deny" id="consent-deny">Deny</button>
</form>
</main></body></html>
`))

// finishCLI shows the consent page; the code is issued when the person
// allows it (Consent).
func (l *LoginService) finishCLI(w http.ResponseWriter, r *http.Request, ls *LoginState, pl *pendingLogin, rec *LoginToken) {
	g := &consentGrant{ID: randomHex(16), Token: *rec, Redirect: pl.Redirect, State: pl.State, Chall: pl.Chall, Bind: pl.Bind,
		Exp: l.a.now().Add(consentTTL).Unix()}
	port := ""
	if u, err := url.Parse(pl.Redirect); err == nil {
		port = u.Port()
	}
	grant := ls.seal("airgap-consent-v1", g)
	if len(grant) > maxSealed {
		l.refuse(w, r, &loginFail{code: http.StatusForbidden, reason: "too_many_groups", user: rec.Who(), heading: "Your sign-in is too large for a command-line login",
			msg:  fmt.Sprintf("You are in %d groups that the appliance's access file names; a command-line login records them all, and that does not fit the form that asks you to allow it.", len(rec.Groups)),
			hint: "Ask the appliance's operator: fewer group blocks in the access file, or a user block for you."}, "cli")
		return
	}
	l.log.Info("sign-in at the identity provider completed; asking the person to allow the CLI", "user", rec.Who(), "port", port)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	// The form posts here; the answer redirects to the CLI's listener,
	// which form-action must allow too.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self' http://localhost:* http://127.0.0.1:*; base-uri 'none'; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	consentPage.Execute(w, map[string]any{"Who": rec.Who(), "Port": port, "Groups": strings.Join(rec.Groups, ", "),
		"Lifetime": rec.Expires.Sub(rec.Created).String(), "Action": ConsentPath, "Grant": grant})
}

// Consent answers the consent page's form: with "allow", the one-time
// code is issued and the browser sent to the CLI's listener; with "deny",
// the CLI hears access_denied. The form must come from this appliance's
// page (Origin), carry a grant this appliance sealed, not expired, for
// this browser (its sign-in cookie), and not used before.
func (l *LoginService) Consent(w http.ResponseWriter, r *http.Request, _ *acl.Login, ls *LoginState) {
	bad := &loginFail{code: http.StatusBadRequest, reason: "consent", heading: "This approval is not valid",
		msg: "It did not come from this appliance's page in the browser that signed in, was used already, or took too long.", hint: "Run terraform login again."}
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !strings.EqualFold(o, "https://"+r.Host) {
		l.refuse(w, r, bad, "cli")
		return
	}
	form, err := readForm(w, r)
	if err != nil {
		l.refuse(w, r, bad, "cli")
		return
	}
	var g consentGrant
	if ls.unseal("airgap-consent-v1", form.Get("consent"), &g) != nil || l.a.now().Unix() > g.Exp {
		l.refuse(w, r, bad, "cli")
		return
	}
	c, err := r.Cookie(bindCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(hashB64(c.Value)), []byte(g.Bind)) != 1 {
		l.refuse(w, r, bad, "cli")
		return
	}
	if ok, err := ls.markUsed(g.ID, time.Unix(g.Exp, 0)); !ok {
		bad.err = err
		l.refuse(w, r, bad, "cli")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if form.Get("action") != "allow" {
		l.noteRefused(w, "declined", g.Token.Who(), "cli", "The person denied the command-line login.")
		http.Redirect(w, r, g.Redirect+"?"+url.Values{"error": {"access_denied"}, "state": {g.State}}.Encode(), http.StatusSeeOther)
		return
	}
	code, err := ls.newCode(&loginCode{Token: g.Token, RedirectURI: g.Redirect, Challenge: g.Chall, Expires: l.a.now().Add(loginCodeTTL)})
	if err != nil {
		l.refuse(w, r, stateFail(err, &g.Token), "cli")
		return
	}
	l.log.Info("the person allowed the CLI; code issued", "user", g.Token.Who(), "groups", strings.Join(g.Token.Groups, ","))
	http.Redirect(w, r, g.Redirect+"?"+url.Values{"code": {code}, "state": {g.State}}.Encode(), http.StatusSeeOther)
}

// finishBrowser issues the login token of a catalog sign-in into the
// session cookie and returns to the page the person came from.
func (l *LoginService) finishBrowser(w http.ResponseWriter, r *http.Request, ls *LoginState, pl *pendingLogin, rec *LoginToken) {
	secret, err := ls.issue(rec, l.a.now())
	if err != nil {
		l.refuse(w, r, stateFail(err, rec), pl.Kind)
		return
	}
	l.noteLogin(w, rec, "browser")
	setSession(w, secret, rec.Expires, rec.Created)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, pl.Next, http.StatusSeeOther)
}

func setSession(w http.ResponseWriter, secret string, expires, now time.Time) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", Expires: expires, MaxAge: max(1, int(expires.Sub(now)/time.Second)),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

func clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

func stateFail(err error, rec *LoginToken) *loginFail {
	f := &loginFail{code: http.StatusInternalServerError, reason: "state", heading: "The appliance could not complete the sign-in",
		msg: "It could not store the login.", hint: "Try again; if it keeps failing, tell the appliance's operator (serve's log says why).", err: err, user: rec.Who()}
	if errors.Is(err, ErrLoginFull) {
		f.code, f.reason, f.msg, f.hint = http.StatusServiceUnavailable, "full", dist.Printable(err.Error())+".", "Tell the appliance's operator."
	}
	return f
}

func noRulesFail(who *person) *loginFail {
	groups := "no groups"
	if len(who.groups) > 0 {
		gs := who.groups
		if len(gs) > 20 {
			gs = append(gs[:20:20], fmt.Sprintf("and %d more", len(who.groups)-20))
		}
		groups = "the groups " + dist.Printable(strings.Join(gs, ", "))
	}
	msg := fmt.Sprintf("You signed in as %s, and the identity provider lists %s. None of them has a group block in this appliance's access file", dist.Printable(who.Who()), groups)
	switch {
	case who.email == "":
		msg += ", and the identity provider gave no e-mail address to match a user block."
	case !who.emailUsable:
		msg += ", and the identity provider says your e-mail address is not verified, so no user block applies."
	default:
		msg += fmt.Sprintf(", and it has no user block for %s.", dist.Printable(who.email))
	}
	return &loginFail{code: http.StatusForbidden, reason: "no_rules", heading: "This appliance gives you no access", msg: msg,
		hint: "No token was issued. Ask the appliance's operator to add a group or user block for you.", user: who.Who()}
}

// token answers step 4: the CLI's code, redirect URI and PKCE verifier
// for a login token (RFC 6749 §4.1.3, RFC 7636 §4.6). Errors are the JSON
// RFC 6749 §5.2 defines, which x/oauth2 shows the CLI's user.
func (l *LoginService) Token(w http.ResponseWriter, r *http.Request, cfg *acl.Login, ls *LoginState) {
	if fail := l.a.throttled(r); fail != nil {
		w.Header().Set("Retry-After", strconv.Itoa(fail.retry))
		oauthError(w, http.StatusTooManyRequests, "slow_down", fail.message(0))
		return
	}
	form, err := readForm(w, r)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if form.Get("grant_type") != "authorization_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only authorization_code is supported")
		return
	}
	if id := clientIDOf(r, form); id != "" && id != LoginClientID {
		oauthError(w, http.StatusUnauthorized, "invalid_client", fmt.Sprintf("client %q is not this appliance's CLI client %q", dist.Printable(reply.Cut(id, 64)), LoginClientID))
		return
	}
	c, err := exchangeCode(ls, form, l.a.now())
	if err != nil {
		l.a.failed(r)
		user := ""
		if c != nil {
			user = c.Token.Who()
		}
		l.noteRefused(w, "code", user, "cli", err.Error())
		oauthError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	now := l.a.now().UTC().Truncate(time.Second)
	rec := c.Token
	rec.Created, rec.Expires = now, now.Add(cfg.TokenLifetime)
	secret, err := ls.issue(&rec, now)
	if err != nil {
		l.log.Error("issuing a login token", "user", rec.Who(), "err", err)
		l.noteRefused(w, "state", rec.Who(), "cli", err.Error())
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", dist.Printable(err.Error()))
		return
	}
	l.noteLogin(w, &rec, "cli")
	b, _ := json.Marshal(map[string]any{"access_token": secret, "token_type": "bearer", "expires_in": int(rec.Expires.Sub(now) / time.Second)})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.Write(b)
}

// exchangeCode takes the form's code out of the state and checks it
// against the form: the same redirect URI, and a verifier whose S256 is
// the challenge (constant time). The code is gone either way.
func exchangeCode(ls *LoginState, form url.Values, now time.Time) (*loginCode, error) {
	c, err := ls.claimCode(form.Get("code"), now)
	if err != nil {
		return nil, err
	}
	if form.Get("redirect_uri") != c.RedirectURI {
		return c, errors.New("the redirect URI differs from the authorization request's")
	}
	v := form.Get("code_verifier")
	if len(v) < 43 || len(v) > 128 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") != "" {
		return c, errors.New("the PKCE code verifier is missing or malformed (RFC 7636)")
	}
	sum := sha256.Sum256([]byte(v))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.Challenge)) != 1 {
		return c, errors.New("the PKCE code verifier does not match the authorization request's challenge")
	}
	return c, nil
}

// MaxForm bounds the token request's body.
const MaxForm = 16 << 10

// readForm reads a POST form of at most MaxForm bytes within 10 s.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/x-www-form-urlencoded") {
		return nil, errors.New("the body must be application/x-www-form-urlencoded")
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(10 * time.Second))
	r.Body = http.MaxBytesReader(w, r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		return nil, errors.New("the body is not a form of at most 16 KiB")
	}
	return r.PostForm, nil
}

// clientIDOf is the client id of a token request: Basic credentials'
// user name (x/oauth2 tries those first), or the form's client_id.
func clientIDOf(r *http.Request, form url.Values) string {
	if u, _, ok := r.BasicAuth(); ok {
		if id, err := url.QueryUnescape(u); err == nil {
			return id
		}
		return u
	}
	return form.Get("client_id")
}

func oauthError(w http.ResponseWriter, code int, e, desc string) {
	b, _ := json.Marshal(map[string]string{"error": e, "error_description": desc})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b)
}

// SignOutMAC is the value the catalog's sign-out form carries for the
// session of p: a page of another site cannot know it, so it cannot sign
// the person out (the catalog sends no Referer, so browsers send such forms
// with "Origin: null", which proves nothing).
func (l *LoginService) SignOutMAC(p *Principal) string {
	if l == nil {
		return ""
	}
	ls := l.a.logins.Load()
	if ls == nil || p == nil || p.login == nil {
		return ""
	}
	return ls.mac("airgap-signout-v1", p.id)
}

// signOut revokes the session's login token and clears the cookie; the
// form must carry signOutMAC of the session.
func (l *LoginService) signOut(w http.ResponseWriter, r *http.Request, ls *LoginState) {
	refused := &loginFail{code: http.StatusForbidden, reason: "bad_request", heading: "Sign-out refused",
		msg: "The request did not come from this appliance's catalog page.", hint: "Use the Sign out button of the catalog page."}
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !strings.EqualFold(o, "https://"+r.Host) {
		l.refuse(w, r, refused, "browser")
		return
	}
	form, err := readForm(w, r)
	if err != nil {
		form = url.Values{}
	}
	if c, err := r.Cookie(sessionCookie); err == nil && acl.LooksLikeSecret(c.Value) {
		h := acl.HashSecret(c.Value)
		if p := l.a.loginPrincipal(h, l.a.set.Load()); p != nil && p.revoked.IsZero() {
			if subtle.ConstantTimeCompare([]byte(form.Get("csrf")), []byte(l.SignOutMAC(p))) != 1 {
				l.refuse(w, r, refused, "browser")
				return
			}
			if err := ls.revoke(p.login, "signed out", l.a.now()); err != nil {
				l.log.Error("revoking a login token at sign-out", "token", p.name, "err", err)
			} else {
				l.noteRevoked(w, p.login, "signed out")
			}
		}
	}
	clearCookie(w, sessionCookie)
	l.page(w, r, http.StatusOK, "Signed out", "You are signed out of this appliance, and the session's token is revoked.", "", "/oauth/signin?next=%2F", "Sign in again")
}

// refuse answers a refused sign-in with a page (or, for the CLI's token
// request, never: that answers JSON), logs it and notes it for the audit.
func (l *LoginService) refuse(w http.ResponseWriter, r *http.Request, f *loginFail, via string) {
	attrs := []any{"reason", f.reason}
	if f.issuer != "" {
		attrs = append(attrs, "issuer", f.issuer)
	}
	if f.user != "" {
		attrs = append(attrs, "user", f.user)
	}
	if f.err != nil {
		attrs = append(attrs, "err", f.err.Error())
	}
	switch {
	case f.reason == "idp_unreachable":
		l.log.Error("sign-in failed: the identity provider cannot be reached (login tokens already issued keep working)", attrs...)
	case f.code >= 500:
		l.log.Error("sign-in failed", attrs...)
	default:
		l.log.Warn("sign-in refused", attrs...)
	}
	detail := f.msg
	if f.err != nil {
		detail += " (" + f.err.Error() + ")"
	}
	l.noteRefused(w, f.reason, f.user, via, detail)
	l.page(w, r, f.code, f.heading, f.msg, f.hint, "", "")
}

func (l *LoginService) page(w http.ResponseWriter, r *http.Request, code int, heading, msg, hint, link, linkText string) {
	w.Header().Set("Cache-Control", "no-store")
	ui.RenderHTML(w, r, code, "login.html", map[string]any{"Title": heading + " - airgap", "Heading": heading, "Message": msg, "Hint": hint,
		"Link": link, "LinkText": linkText}, l.writeError)
}

// Audit notes (Observe writes them to the AuditLog).
func (l *LoginService) noteLogin(w http.ResponseWriter, rec *LoginToken, via string) {
	l.log.Info("login token issued", "user", rec.Who(), "token", rec.Name, "groups", strings.Join(rec.Groups, ","), "via", via, "expires", rec.Expires.Format(time.RFC3339))
	noteEvent(w, &AuditEvent{Event: EventLogin, Token: rec.Name, User: rec.Who(), Groups: rec.Groups, Via: via, Expires: rec.Expires.UTC().Format(time.RFC3339)})
}

func (l *LoginService) noteRefused(w http.ResponseWriter, reason, user, via, detail string) {
	noteEvent(w, &AuditEvent{Event: EventLoginRefused, User: user, Reason: reason, Via: via, Detail: auditDetail(detail)})
}

func (l *LoginService) noteRevoked(w http.ResponseWriter, rec *LoginToken, by string) {
	noteEvent(w, &AuditEvent{Event: EventTokenRevoked, Token: rec.Name, User: rec.Who(), By: by})
}

// writeError answers an error as every endpoint does.
func (l *LoginService) writeError(w http.ResponseWriter, r *http.Request, err error) {
	reply.Error(w, r, err, l.log)
}
