package server_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// fakeIdP is an OpenID Connect provider on loopback TLS that the tests
// control, to play a broken or hostile identity provider: it signs in
// whoever it is told to at once (no form), and its ID tokens can be
// altered (claims, expiry, signing key) before they are signed.
type fakeIdP struct {
	srv    *httptest.Server
	issuer string
	caFile string // its certificate, for the login block's ca_file
	key    *rsa.PrivateKey
	other  *rsa.PrivateKey // a key it does not publish

	mu       sync.Mutex
	codes    map[string]fakeGrant
	claims   map[string]any         // of the person signed in
	mutate   func(map[string]any)   // alters an ID token's claims
	wrongKey bool                   // signs with a key it does not publish
	alg      string                 // "none" (unsigned) or "HS256" (keyed by the client secret), else RS256
	algs     []string               // the signing algorithms discovery lists (default RS256)
	bigKeys  bool                   // publishes 2 MiB of keys
	authErr  string                 // answers the authorization request with this error
	bigToken bool                   // answers the token request with 2 MiB
	tokenReq func(*http.Request)    // sees each token request
	tokens   int                    // token requests answered
	onAuth   func(url.Values) error // sees each authorization request
}

type fakeGrant struct {
	nonce, challenge, redirect, clientID string
	claims                               map[string]any
}

func newFakeIdP(t testing.TB) *fakeIdP {
	t.Helper()
	d := &fakeIdP{codes: map[string]fakeGrant{}}
	d.key, _ = rsa.GenerateKey(rand.Reader, 2048)
	d.other, _ = rsa.GenerateKey(rand.Reader, 2048)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		algs := d.algs
		d.mu.Unlock()
		if algs == nil {
			algs = []string{"RS256"}
		}
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": d.issuer, "authorization_endpoint": d.issuer + "/auth", "token_endpoint": d.issuer + "/token",
			"jwks_uri": d.issuer + "/keys", "id_token_signing_alg_values_supported": algs,
			"code_challenge_methods_supported": []string{"S256"}, "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		big := d.bigKeys
		d.mu.Unlock()
		keys := []jose.JSONWebKey{{Key: &d.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}
		if big {
			w.Write([]byte(`{"keys":[{"kty":"oct","kid":"pad","k":"` + strings.Repeat("A", 2<<20) + `"},`))
			b, _ := json.Marshal(keys[0])
			w.Write(append(b, "]}"...))
			return
		}
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys})
	})
	mux.HandleFunc("GET /auth", d.authorize)
	mux.HandleFunc("POST /token", d.token)
	d.srv = httptest.NewTLSServer(mux)
	t.Cleanup(d.srv.Close)
	d.issuer = d.srv.URL
	d.caFile = filepath.Join(t.TempDir(), "idp-ca.pem")
	os.WriteFile(d.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.srv.Certificate().Raw}), 0o644)
	d.signInAs("carol@site.example", "platform")
	return d
}

// signInAs makes the IdP sign in this person, in these groups.
func (d *fakeIdP) signInAs(email string, groups ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.claims = map[string]any{"sub": "sub-" + email, "email": email, "email_verified": true, "groups": groups}
}

func (d *fakeIdP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d.mu.Lock()
	authErr, onAuth := d.authErr, d.onAuth
	claims := map[string]any{}
	for k, v := range d.claims {
		claims[k] = v
	}
	d.mu.Unlock()
	if onAuth != nil {
		if err := onAuth(q); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") == "" {
		http.Error(w, "the fake IdP wants PKCE S256, a nonce and a state", 400)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"state": {q.Get("state")}}
	if authErr != "" {
		v.Set("error", authErr)
		v.Set("error_description", "the person may not use this client")
	} else {
		var b [16]byte
		rand.Read(b[:])
		code := base64.RawURLEncoding.EncodeToString(b[:])
		d.mu.Lock()
		d.codes[code] = fakeGrant{nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), clientID: q.Get("client_id"), claims: claims}
		d.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (d *fakeIdP) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	d.mu.Lock()
	g, ok := d.codes[r.PostForm.Get("code")]
	delete(d.codes, r.PostForm.Get("code"))
	mutate, wrongKey, big, seen, alg, bigKeys := d.mutate, d.wrongKey, d.bigToken, d.tokenReq, d.alg, d.bigKeys
	d.tokens++
	d.mu.Unlock()
	if seen != nil {
		seen(r)
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || r.PostForm.Get("redirect_uri") != g.redirect || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"the code is not valid"}`))
		return
	}
	if big {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"` + strings.Repeat("A", 2<<20) + `"}`))
		return
	}
	claims := map[string]any{"iss": d.issuer, "aud": g.clientID, "exp": time.Now().Add(5 * time.Minute).Unix(), "iat": time.Now().Unix(), "nonce": g.nonce}
	for k, v := range g.claims {
		claims[k] = v
	}
	if mutate != nil {
		mutate(claims)
	}
	key := d.key
	if wrongKey {
		key = d.other
	}
	kid := "k1"
	if bigKeys {
		kid = "k2" // a key the appliance has not seen: it fetches the keys again
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	payload, _ := json.Marshal(claims)
	jws, _ := signer.Sign(payload)
	idt, _ := jws.CompactSerialize()
	b64 := base64.RawURLEncoding.EncodeToString
	switch alg {
	case "none":
		idt = b64([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`)) + "." + b64(payload) + "."
	case "HS256": // keyed by the client secret, which the appliance knows
		in := b64([]byte(`{"alg":"HS256","typ":"JWT","kid":"k1"}`)) + "." + b64(payload)
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write([]byte(in))
		idt = in + "." + b64(m.Sum(nil))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": "idp-access", "token_type": "Bearer", "expires_in": 300, "id_token": idt})
}

// reset makes the IdP well-behaved again, signing in carol of platform.
func (d *fakeIdP) reset() {
	d.set(func(d *fakeIdP) {
		d.mutate, d.wrongKey, d.authErr, d.bigToken, d.onAuth, d.tokenReq = nil, false, "", false, nil, nil
		d.alg, d.algs, d.bigKeys = "", nil, false
	})
	d.signInAs("carol@site.example", "platform")
}

// set changes the IdP's behaviour for the next sign-ins.
func (d *fakeIdP) set(fn func(*fakeIdP)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d)
}
