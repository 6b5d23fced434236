package access

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/internal/reply"
)

// OCI authentication, as distribution does it and oras-go (OpenTofu's OCI
// client) expects. With an access file, a /v2/ request without credentials
// gets
//
//	401 WWW-Authenticate: Bearer realm="https://HOST/v2/token",service="airgap"
//
// and the client asks the realm for a bearer token: with Basic credentials
// from an oci_credentials block (any user name, the airgap token as the
// password), or with none, which gives an anonymous bearer when the access
// file has an anonymous rule (and 401 otherwise). An oci_credentials
// access_token (the airgap token itself) is sent as a Bearer directly and
// accepted as such, and so are Basic credentials on any /v2/ request.
//
// A Bearer challenge, not Basic, because it serves both kinds of client: a
// Basic challenge leaves a client without credentials nowhere to go (so an
// anonymous rule could not work over OCI), and answering anonymous
// requests without a challenge would keep clients that have credentials
// from ever sending them (they send them only after a 401).
//
// The bearer /v2/token issues is not the token: it is
// "agb1:<name>:<expiry>:<key id>.<mac>", an HMAC under the URL signing key
// (another domain than URLs), valid for the URL TTL and only on /v2/
// (not on /v2/token: a bearer never gets another one, so a leaked bearer
// ends when it expires). It names the principal and its MAC binds the
// token's hash, so revoking the token ends it at the next request, also
// when a new token is created under the same name; the secret never
// travels back to the client.

const ociBearerPrefix = "agb1:"

// ociChallenge is the WWW-Authenticate of a /v2/ 401. The realm names
// the Host the client used (oras-go refuses a realm on another host when it
// is a loopback or private address); a Host that is not a host name gives
// a challenge without realm, which clients cannot follow.
func ociChallenge(r *http.Request) string {
	host := strings.ToLower(r.Host)
	if !dist.ValidHost(host) {
		if ap, err := netip.ParseAddrPort(host); err == nil {
			host = net.JoinHostPort(ap.Addr().String(), strconv.Itoa(int(ap.Port())))
		} else {
			return `Bearer service="airgap"`
		}
	}
	return `Bearer realm="https://` + host + `/v2/token",service="airgap"`
}

// ociUnsupported is the distribution spec's error code for what the
// registry does not do.
const ociUnsupported = "UNSUPPORTED"

// OCIToken answers GET /v2/token: a bearer for the principal the request's
// credentials (or their absence) name; without access control (a nil a),
// that there is nothing to ask for.
func (a *AccessControl) OCIToken(w http.ResponseWriter, r *http.Request) {
	if a == nil {
		reply.OCIError(w, http.StatusNotFound, ociUnsupported, "this appliance asks for no credentials")
		return
	}
	p, fail := a.authenticate(r, a.set.Load())
	if fail != nil {
		a.refuse(w, r, fail)
		return
	}
	if n := NoteOf(w); n != nil {
		n.Token, n.By = p.name, authBy(r)
	}
	now := a.now()
	exp := now.Add(a.ttl).Unix()
	e := strconv.FormatInt(exp, 10)
	tok := ociBearerPrefix + p.name + ":" + e + ":" + a.keys.sign(macBearer, p.name, e, p.id)
	b, _ := json.Marshal(map[string]any{
		"token": tok, "access_token": tok, "expires_in": int(a.ttl / time.Second), "issued_at": now.UTC().Format(time.RFC3339),
	})
	w.Header().Set("Cache-Control", "no-store")
	reply.JSONBytes(w, r, "application/json", b)
}

// checkBearer verifies a bearer ociToken issued.
func (a *AccessControl) checkBearer(r *http.Request, b string, set *Set) (*Principal, *authFail) {
	parts := strings.Split(strings.TrimPrefix(b, ociBearerPrefix), ":")
	if len(parts) != 3 {
		a.failed(r)
		return nil, &authFail{reason: authInvalid}
	}
	p := a.principalByName(set, parts[0])
	if !a.keys.verify(parts[2], macBearer, parts[0], parts[1], p.macID()) {
		a.failed(r)
		return nil, &authFail{reason: authInvalid}
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !a.now().Before(time.Unix(exp, 0)) {
		return nil, &authFail{reason: authExpired, at: time.Unix(exp, 0)}
	}
	if p == nil || p.expired(a.now()) || !p.revoked.IsZero() {
		return nil, &authFail{reason: authInvalid}
	}
	return p, nil
}
