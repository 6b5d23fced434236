package protocol

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registry"
)

// ErrSignInRequired marks an appliance that answers (over TLS this
// machine trusts) and lists its origins only to people signed in through
// its single sign-on.
var ErrSignInRequired = errors.New("sign-in required")

// FetchOrigins asks a running appliance (base ends in "/") which origin
// registries it serves, for 'airgap client-config --url'. Each kind of
// failure gets its own hint: nothing listening, a name that does not
// resolve, a certificate the client does not trust or that does not name
// the host, a timeout, an HTTP error. The answer is bounded to 1 MiB.
// token, if set, is sent as a Bearer token (an appliance with an access
// file lists only the origins the token may read from).
func FetchOrigins(base, token string) (*OriginsDoc, error) {
	return fetchOrigins(base, token, 15*time.Second)
}

// CheckAppliance checks that base answers as an airgap appliance this
// machine trusts (the same request as FetchOrigins, given at most timeout)
// and is the one that serves the origins want, for 'airgap client-config
// --store': it lists no origin the store lacks, and shares one with it (an
// appliance with an access file may list fewer, those the token may read).
// The error has FetchOrigins' hints.
func CheckAppliance(base, token string, want []string, timeout time.Duration) error {
	doc, err := fetchOrigins(base, token, timeout)
	if err != nil {
		return err
	}
	got, want := append([]string{}, doc.Origins...), append([]string{}, want...)
	sort.Strings(got)
	sort.Strings(want)
	shared, foreign := 0, false
	for _, o := range got {
		if slices.Contains(want, o) {
			shared++
		} else {
			foreign = true
		}
	}
	if foreign || shared == 0 {
		return fmt.Errorf("the appliance at %s serves other origins (%s) than the store (%s)\nhint: is --url the appliance that serves this store?",
			base, strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return nil
}

// originsJSON bounds the appliance's answer: 1 MiB, nested at most 8 deep
// (it nests 2).
var originsJSON = dist.JSONLimit{MaxBytes: 1 << 20, MaxDepth: 8}

// fetchOrigins asks base for its origins, following redirects by the
// registry client's policy (registry.CheckRedirect): the token never goes
// to plain http or to another origin.
func fetchOrigins(base, token string, timeout time.Duration) (*OriginsDoc, error) {
	cl := &http.Client{Timeout: timeout, CheckRedirect: registry.CheckRedirect(registry.MaxAPIRedirects)}
	req, err := http.NewRequest("GET", base+"airgap/v1/origins", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the appliance at %s for its origins: %w\nhint: %s", base, unwrapURL(err), reachHint(err, base))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		if token == "" {
			if login, _ := ApplianceLogin(base, timeout); login {
				return nil, fmt.Errorf("%w: the appliance at %s lists its origins only to people signed in\nhint: sign in on its catalog page (%s) and copy the configuration shown there, or run this on the appliance with --store DIR", ErrSignInRequired, base, base)
			}
			return nil, fmt.Errorf("the appliance at %s requires a token\nhint: pass yours with --token-file FILE (the configuration then carries it), or --store DIR on the appliance itself", base)
		}
		return nil, fmt.Errorf("the appliance at %s refused the token in --token-file (HTTP %s)\nhint: check the file holds the token 'airgap token create' printed, and that it was not revoked or has expired", base, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("asking the appliance at %s for its origins: HTTP %s\nhint: is %s an airgap appliance (airgap serve)? A proxy or another server may be answering; or pass --store DIR on the appliance itself", base, resp.Status, base)
	}
	var doc OriginsDoc
	if err := originsJSON.Decode(resp.Body, &doc); err != nil {
		return nil, fmt.Errorf("reading the appliance's origins from %s: %w\nhint: the answer is not airgap's; check --url", base, err)
	}
	return &doc, nil
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// reachHint says what to do about a failed request to the appliance.
func reachHint(err error, base string) string {
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, registry.ErrInsecureRedirect):
		return "the answer redirects to plain http, where a token could be read on the way: nothing was sent there; give --url the https address the appliance serves"
	case errors.Is(err, registry.ErrTooManyRedirects), errors.Is(err, registry.ErrUnsupportedScheme):
		return "the answer redirects where airgap does not follow; give --url the appliance's own address"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing is listening there: start it with 'airgap serve --store DIR --listen :PORT', check the port in --url, or pass --store DIR to read the origins from the store instead"
	case errors.As(err, &dnsErr):
		return "the host name in --url does not resolve: check its spelling and this machine's DNS, or use the appliance's IP address"
	case errors.As(err, &unknownCA):
		return "this machine does not trust the appliance's CA: get it with 'airgap ca --store DIR' (or " + base + "ca.pem), compare the fingerprint, and set SSL_CERT_FILE to it"
	case errors.As(err, &hostErr):
		return "the appliance's certificate does not name the host in --url: restart it with 'airgap serve --hostname NAME' for the name clients use"
	case errors.As(err, &certInvalid):
		return "the appliance's certificate is not valid (expired, or not yet valid): check the clocks of both machines"
	case errors.As(err, &recordErr):
		return "the server did not answer TLS: is it plain HTTP, or another service on that port?"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "no answer in 15 s: a firewall may drop the connection; check the address and port in --url"
	}
	return "check --url, or pass --store DIR to read the origins from the store instead"
}

// ApplianceLogin reports whether the appliance at base (ending in "/")
// signs people in ('terraform login'): its discovery document, which needs
// no token, offers login.v1.
func ApplianceLogin(base string, timeout time.Duration) (bool, error) {
	cl := &http.Client{Timeout: timeout, CheckRedirect: registry.CheckRedirect(registry.MaxAPIRedirects)}
	resp, err := cl.Get(base + ".well-known/terraform.json")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("its discovery document: HTTP %s", resp.Status)
	}
	var doc map[string]any
	if err := originsJSON.Decode(resp.Body, &doc); err != nil {
		return false, fmt.Errorf("its discovery document: %w", err)
	}
	_, ok := doc["login.v1"]
	return ok, nil
}
