package access

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/internal/reply"
)

// The appliance as an OpenID Connect relying party of the site's identity
// provider, with go-oidc (discovery, the IdP's published keys, ID token
// verification) and x/oauth2 (the authorization code exchange with PKCE).
//
// The IdP is asked when someone signs in, never at startup or for a
// request with a token: serve starts, and every login token issued keeps
// working, while the IdP is down. Its discovery document is kept for an
// hour (used longer, with a log line, while the IdP cannot be reached);
// after a failed discovery, sign-ins fail at once for 5 s instead of each
// waiting for the IdP again. Every request to the IdP has a 15 s timeout,
// follows at most 3 redirects, https only (http only when the issuer is a
// loopback http URL), and every answer is read to at most 1 MiB, so a
// hostile or broken IdP costs at most loginExchanges × (1 MiB + a
// connection) at once.

const (
	idpTimeout      = 15 * time.Second
	idpMaxBody      = 1 << 20
	idpRediscover   = time.Hour
	idpFailHoldDown = 5 * time.Second
	maxCAFile       = 1 << 20
	maxGroups       = 1000
)

// idpCache holds the IdP client of the current login block.
type idpCache struct {
	mu  sync.Mutex
	cur *idp
}

// idp is the client of one login block's identity provider.
type idp struct {
	cfg    *acl.Login
	secret string
	client *http.Client
	err    error // reading the secret or CA file failed

	sf       singleflight.Group
	mu       sync.Mutex
	prov     *oidc.Provider
	verifier *oidc.IDTokenVerifier
	at       time.Time // of the last discovery that worked
	failAt   time.Time // of the last that failed
	failErr  error
}

// provider returns the IdP client of cfg, discovered (or an error saying
// why it cannot be).
func (c *idpCache) provider(ctx context.Context, cfg *acl.Login) (*idp, error) {
	c.mu.Lock()
	if c.cur == nil || c.cur.cfg != cfg {
		c.cur = newIDP(cfg)
	}
	d := c.cur
	c.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	return d, d.discover(ctx)
}

func newIDP(cfg *acl.Login) *idp {
	d := &idp{cfg: cfg}
	var pool *x509.CertPool
	if cfg.CAFile != "" {
		pool, d.err = readCAFile(cfg.CAFile)
		if d.err != nil {
			return d
		}
	}
	if cfg.ClientSecretFile != "" {
		if d.secret, d.err = acl.ReadSecretFile(cfg.ClientSecretFile); d.err != nil {
			return d
		}
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSClientConfig:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: idpTimeout,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}
	loopHTTP := strings.HasPrefix(cfg.Issuer, "http://")
	d.client = &http.Client{
		Transport: limitedTransport{tr},
		Timeout:   idpTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("more than 3 redirects")
			}
			return checkIDPURL(req.URL.String(), loopHTTP)
		},
	}
	return d
}

// readCAFile reads the login block's ca_file: the only CA the IdP's
// certificate may chain to. Not a secret, but a trust anchor: on a path
// another user could change (osfile.CheckSafePath), they would choose
// whom serve takes for the identity provider.
func readCAFile(path string) (*x509.CertPool, error) {
	f, err := osfile.OpenSafe(path, "it says whom serve trusts as the identity provider")
	if err != nil {
		return nil, fmt.Errorf("the login block's ca_file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("the login block's ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if len(b) > maxCAFile || !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("the login block's ca_file %s holds no PEM certificate (at most %d bytes)", path, maxCAFile)
	}
	return pool, nil
}

// checkIDPURL refuses an IdP URL (an endpoint of its discovery document, a
// redirect) that is not https, or http on a loopback address when the
// issuer is.
func checkIDPURL(s string, loopHTTP bool) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", dist.Printable(reply.Cut(s, 200)))
	}
	if u.Scheme == "https" || u.Scheme == "http" && loopHTTP && acl.CheckIssuer("http://"+u.Host) == nil {
		return nil
	}
	return fmt.Errorf("%q is not https", dist.Printable(reply.Cut(s, 200)))
}

// discover fetches the discovery document when it is older than an hour
// (one request at a time, shared by every sign-in waiting for it).
func (d *idp) discover(ctx context.Context) error {
	d.mu.Lock()
	prov, at, failAt, failErr := d.prov, d.at, d.failAt, d.failErr
	d.mu.Unlock()
	now := time.Now()
	if prov != nil && now.Sub(at) < idpRediscover {
		return nil
	}
	if now.Sub(failAt) < idpFailHoldDown {
		if prov != nil {
			return nil
		}
		return failErr
	}
	ch := d.sf.DoChan("discover", func() (any, error) {
		cctx, cancel := context.WithTimeout(oidc.ClientContext(context.Background(), d.client), idpTimeout)
		defer cancel()
		p, err := oidc.NewProvider(cctx, d.cfg.Issuer)
		if err == nil {
			err = checkEndpoints(p, strings.HasPrefix(d.cfg.Issuer, "http://"))
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if err != nil {
			d.failAt, d.failErr = time.Now(), fmt.Errorf("discovery at %s: %w", d.cfg.Issuer, err)
			return nil, d.failErr
		}
		d.prov, d.at = p, time.Now()
		d.verifier = p.Verifier(&oidc.Config{ClientID: d.cfg.ClientID})
		return nil, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil && prov != nil {
			return nil // the IdP cannot be reached: keep what it said last
		}
		return res.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkEndpoints refuses a discovery document whose endpoints are not
// https (go-oidc checks the issuer, not the endpoints' schemes).
func checkEndpoints(p *oidc.Provider, loopHTTP bool) error {
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	p.Claims(&doc)
	for _, u := range []string{p.Endpoint().AuthURL, p.Endpoint().TokenURL, doc.JWKS} {
		if err := checkIDPURL(u, loopHTTP); err != nil {
			return fmt.Errorf("its discovery document names an endpoint %v", err)
		}
	}
	return nil
}

// current returns the discovered provider and verifier.
func (d *idp) current() (*oidc.Provider, *oidc.IDTokenVerifier) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.prov, d.verifier
}

// oauth is the OAuth 2.0 client configuration toward the IdP for the
// callback URL.
func (d *idp) oauth(callback string) *oauth2.Config {
	p, _ := d.current()
	ep := p.Endpoint()
	if ep.AuthStyle == oauth2.AuthStyleAutoDetect {
		// x/oauth2 would try the code once per style, and a code works
		// once: take the default of OpenID Connect Discovery
		// (client_secret_basic), and the form for a public client.
		ep.AuthStyle = oauth2.AuthStyleInHeader
		if d.secret == "" {
			ep.AuthStyle = oauth2.AuthStyleInParams
		}
	}
	return &oauth2.Config{ClientID: d.cfg.ClientID, ClientSecret: d.secret, Endpoint: ep, RedirectURL: callback, Scopes: d.cfg.Scopes}
}

// limitedTransport cuts every answer of the IdP at idpMaxBody bytes.
type limitedTransport struct{ rt http.RoundTripper }

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: idpMaxBody}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, fmt.Errorf("the identity provider's answer is larger than %d bytes", idpMaxBody)
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// unreachable is the refusal when the IdP cannot be asked.
func unreachable(cfg *acl.Login, err error) *loginFail {
	return &loginFail{code: http.StatusBadGateway, reason: "idp_unreachable", heading: "The identity provider cannot be reached",
		msg:  fmt.Sprintf("The appliance could not reach the identity provider at %s: %s.", dist.Printable(cfg.Issuer), dist.Printable(reply.Cut(err.Error(), 400))),
		hint: "Try again later; tokens you already have keep working. If it persists, tell the appliance's operator.", err: err, issuer: cfg.Issuer}
}

// person is who the ID token says signed in.
type person struct {
	subject, email string
	emailUsable    bool // there is one, and the IdP did not say it is unverified
	groups         []string
}

func (p *person) Who() string {
	if p.email != "" {
		return p.email
	}
	return "subject " + p.subject
}

// completeSignIn exchanges the IdP's code (with our PKCE verifier) and
// verifies the ID token it returns: signature by the IdP's published keys,
// issuer, audience (our client id), expiry (go-oidc), and the nonce we
// sealed into the state.
func (l *LoginService) completeSignIn(r *http.Request, cfg *acl.Login, pl *pendingLogin) (*person, *loginFail) {
	code := r.URL.Query().Get("code")
	if code == "" || len(code) > 2048 {
		return nil, &loginFail{code: http.StatusBadRequest, reason: "code", heading: "The identity provider sent no code",
			msg: "The sign-in came back without an authorization code.", hint: "Start again."}
	}
	d, err := l.idps.provider(r.Context(), cfg)
	if err != nil {
		return nil, unreachable(cfg, err)
	}
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
	default:
		return nil, &loginFail{code: http.StatusServiceUnavailable, reason: "busy", heading: "Too many sign-ins at once",
			msg: fmt.Sprintf("The appliance is completing %d sign-ins with the identity provider.", loginExchanges), hint: "Reload this page in a few seconds."}
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), d.client), idpTimeout)
	defer cancel()
	tok, err := d.oauth(pl.Callback).Exchange(ctx, code, oauth2.VerifierOption(pl.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		var ue *url.Error
		switch {
		case errors.As(err, &re):
			return nil, &loginFail{code: http.StatusBadGateway, reason: "code", heading: "The identity provider refused the sign-in",
				msg:  "It did not accept the authorization code: " + dist.Printable(reply.Cut(re.Error(), 300)) + ".",
				hint: "Start again. If it keeps failing, the appliance's client registration at the identity provider (its secret, its redirect URI) may be wrong: tell its operator.", err: err}
		case errors.As(err, &ue):
			return nil, unreachable(cfg, err)
		}
		return nil, &loginFail{code: http.StatusBadGateway, reason: "idp_answer", heading: "The identity provider's answer was refused",
			msg:  "Its answer to the authorization code could not be read: " + dist.Printable(reply.Cut(err.Error(), 300)) + ".",
			hint: "Tell the appliance's operator; serve's log has the details.", err: err}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, &loginFail{code: http.StatusBadGateway, reason: "id_token", heading: "The identity provider sent no ID token",
			msg: "Its answer had no ID token.", hint: "The login block's scopes must include \"openid\"; tell the appliance's operator."}
	}
	_, verifier := d.current()
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return nil, idTokenFail(err)
	}
	if pl.Nonce != "" && subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pl.Nonce)) == 1 {
		return personOf(idt, cfg)
	}
	return nil, &loginFail{code: http.StatusBadRequest, reason: "nonce", heading: "The identity provider's answer does not belong to this sign-in",
		msg: "Its ID token carries another nonce than this sign-in sent (a replayed or mixed-up answer).", hint: "Start again."}
}

// idTokenFail says why go-oidc refused an ID token. Its errors are plain
// strings but for expiry, so the reason (for the audit and the log) is
// read from the message; the message itself is shown as it is.
func idTokenFail(err error) *loginFail {
	f := &loginFail{code: http.StatusBadGateway, reason: "id_token", heading: "The identity provider's ID token was refused",
		msg: "The appliance could not verify it: " + dist.Printable(reply.Cut(err.Error(), 300)) + ".", hint: "Tell the appliance's operator; serve's log has the details.", err: err}
	var exp *oidc.TokenExpiredError
	switch s := err.Error(); {
	case errors.As(err, &exp):
		f.reason = "expired"
		f.hint = "The ID token had expired when it arrived: check that the clocks of the appliance and the identity provider agree (NTP), then start again."
	case strings.Contains(s, "different provider"):
		f.reason = "issuer"
	case strings.Contains(s, "audience"):
		f.reason = "audience"
	case strings.Contains(s, "signature"), strings.Contains(s, "malformed jwt"), strings.Contains(s, "algorithm"):
		f.reason = "signature"
	}
	return f
}

// personOf reads who signed in from the ID token's claims: the subject,
// the e-mail address (and whether the IdP says it is verified: a string
// "false" counts, as some IdPs send one), and the groups claim (an array
// of strings or one string; a dotted name that is no claim is a path into
// nested objects, as Keycloak's realm_access.roles). Values that are not
// printable or longer than 256 bytes are dropped; at most maxGroups
// groups are read.
func personOf(idt *oidc.IDToken, cfg *acl.Login) (*person, *loginFail) {
	var claims map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return nil, idTokenFail(err)
	}
	p := &person{subject: idt.Subject}
	if p.subject == "" || len(p.subject) > 256 || dist.Printable(p.subject) != p.subject {
		return nil, &loginFail{code: http.StatusBadGateway, reason: "id_token", heading: "The identity provider's ID token was refused",
			msg: "Its subject is empty, longer than 256 bytes or not printable.", hint: "Tell the appliance's operator."}
	}
	var email string
	if json.Unmarshal(claims["email"], &email) == nil {
		email = strings.ToLower(strings.TrimSpace(email))
		if len(email) <= 256 && strings.Contains(email, "@") && dist.Printable(email) == email && !strings.ContainsAny(email, " ") {
			p.email = email
		}
	}
	p.emailUsable = p.email != ""
	if v, ok := claims["email_verified"]; ok {
		var b bool
		var s string
		switch {
		case json.Unmarshal(v, &b) == nil:
			p.emailUsable = p.emailUsable && b
		case json.Unmarshal(v, &s) == nil:
			p.emailUsable = p.emailUsable && strings.EqualFold(s, "true")
		default:
			p.emailUsable = false
		}
	}
	p.groups = groupsOf(claims, cfg.GroupsClaim)
	return p, nil
}

// groupsOf reads the groups claim.
func groupsOf(claims map[string]json.RawMessage, name string) []string {
	raw, ok := claims[name]
	if !ok && strings.Contains(name, ".") {
		parts := strings.Split(name, ".")
		obj := claims
		for i, part := range parts {
			v, ok := obj[part]
			if !ok {
				break
			}
			if i == len(parts)-1 {
				raw = v
				break
			}
			obj = nil
			if json.Unmarshal(v, &obj) != nil {
				break
			}
		}
	}
	var list []any
	var one string
	switch {
	case raw == nil:
		return nil
	case json.Unmarshal(raw, &one) == nil:
		list = []any{one}
	case json.Unmarshal(raw, &list) != nil:
		return nil
	}
	var out []string
	for _, v := range list {
		s, ok := v.(string)
		if !ok || s == "" || len(s) > 256 || dist.Printable(s) != s {
			continue
		}
		if out = append(out, s); len(out) == maxGroups {
			break
		}
	}
	return out
}

// LoginCheck is what 'serve --check-config' reports of a login block.
type LoginCheck struct {
	Issuer, AuthURL, TokenURL string
	PKCE                      bool // the IdP lists S256 (or lists no methods)
}

// CheckLogin reads the login block's files and fetches the IdP's
// discovery document, as a sign-in would.
func CheckLogin(ctx context.Context, cfg *acl.Login) (*LoginCheck, error) {
	d := newIDP(cfg)
	if d.err != nil {
		return nil, d.err
	}
	if err := d.discover(ctx); err != nil {
		return nil, err
	}
	p, _ := d.current()
	var doc struct {
		Methods []string `json:"code_challenge_methods_supported"`
	}
	p.Claims(&doc)
	c := &LoginCheck{Issuer: cfg.Issuer, AuthURL: p.Endpoint().AuthURL, TokenURL: p.Endpoint().TokenURL, PKCE: len(doc.Methods) == 0}
	for _, m := range doc.Methods {
		c.PKCE = c.PKCE || m == "S256"
	}
	return c, nil
}

// LoginRedirectURIs are the redirect URIs to register at the IdP: one per
// name clients use for the appliance, with the listen port unless it is
// 443; the name in lower case, as browsers send it (and as the sign-in
// compares it), once.
func LoginRedirectURIs(hostnames []string, listen string) []string {
	_, port, _ := net.SplitHostPort(listen)
	var out []string
	seen := map[string]bool{}
	for _, h := range hostnames {
		h = strings.ToLower(h)
		if seen[h] {
			continue
		}
		seen[h] = true
		hp := h
		if strings.Contains(h, ":") {
			hp = "[" + h + "]" // an IPv6 address
		}
		if port != "" && port != "443" {
			hp = net.JoinHostPort(h, port)
		}
		out = append(out, "https://"+hp+CallbackPath)
	}
	return out
}
