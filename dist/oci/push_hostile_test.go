package oci

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// TestPushRefusesRedirectToPlainHTTP: a registry that asks for Basic
// credentials and then redirects to http:// on the same host name (another
// port) must not receive them in clear: net/http would copy Authorization
// on such a redirect.
func TestPushRefusesRedirectToPlainHTTP(t *testing.T) {
	var leaked, plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(404)
	}))
	defer plain.Close()
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="reg"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, plain.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer reg.Close()
	set := bundletest.Standard(t, t.TempDir(), bundletest.Key(t, "site"))
	_, err := Push(context.Background(), &set.Catalog, PushOptions{
		Target: strings.TrimPrefix(reg.URL, "https://") + "/site", Username: "u", Password: "secret",
		HTTPClient: reg.Client(), Jobs: 1,
		OpenBlob: func(d verify.Digest) (io.ReadCloser, error) { return os.Open(set.Files[d]) },
	})
	if !errors.Is(err, ErrInsecureRedirect) {
		t.Errorf("push through an https→http redirect: %v", err)
	}
	if leaked.Load() != 0 || plainHits.Load() != 0 {
		t.Errorf("the plain-http server got %d requests, %d with credentials", plainHits.Load(), leaked.Load())
	}
}

// TestPushRegistryNeverAnswers: a registry that accepts requests and never
// answers fails the push within the response timeout instead of hanging it.
func TestPushRegistryNeverAnswers(t *testing.T) {
	release := make(chan struct{})
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer reg.Close()
	defer close(release)
	old := responseHeaderTimeout
	responseHeaderTimeout = 100 * time.Millisecond
	defer func() { responseHeaderTimeout = old }()
	hc := pushHTTPClient(nil) // the default client, made to trust the test server
	hc.Transport.(*retry.Transport).Base.(*http.Transport).TLSClientConfig = reg.Client().Transport.(*http.Transport).TLSClientConfig
	set := bundletest.Standard(t, t.TempDir(), bundletest.Key(t, "site"))
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := Push(context.Background(), &set.Catalog, PushOptions{
			Target: strings.TrimPrefix(reg.URL, "https://") + "/site", Username: "u", Password: "p",
			HTTPClient: hc, Jobs: 1,
			OpenBlob: func(d verify.Digest) (io.ReadCloser, error) { return os.Open(set.Files[d]) },
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") {
			t.Errorf("push to a silent registry: %v", err)
		}
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(60 * time.Second):
		t.Fatal("push to a registry that never answers still hangs after 60 s")
	}
}

// TestPushTargetWithScheme: "--to https://reg/x" is refused: parsed as
// REGISTRY[/PREFIX] it is the registry "https:", and credentials would go to
// whatever the name "https" resolves to on the site's network.
func TestPushTargetWithScheme(t *testing.T) {
	var hits atomic.Int32
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.WriteHeader(404) }))
	defer reg.Close()
	for _, to := range []string{"https://" + strings.TrimPrefix(reg.URL, "https://") + "/site", "http://reg.example/site", "https:/reg.example", "reg.example:/x", ":443/x"} {
		_, err := Push(context.Background(), &dist.Catalog{}, PushOptions{Target: to, Username: "u", Password: "p", HTTPClient: reg.Client()})
		if err == nil {
			t.Errorf("--to %q accepted", to)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests sent", hits.Load())
	}
}

// TestPushBearerRealmOverPlainHTTP: a registry reached over https whose
// token realm is plain http gets no credentials sent there (oras-go refuses
// the realm; this keeps it so across upgrades).
func TestPushBearerRealmOverPlainHTTP(t *testing.T) {
	var hits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.WriteHeader(500) }))
	defer plain.Close()
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+plain.URL+`/token",service="reg"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer reg.Close()
	set := bundletest.Standard(t, t.TempDir(), bundletest.Key(t, "site"))
	_, err := Push(context.Background(), &set.Catalog, PushOptions{
		Target: strings.TrimPrefix(reg.URL, "https://") + "/site", Username: "u", Password: "secret",
		HTTPClient: reg.Client(), Jobs: 1,
		OpenBlob: func(d verify.Digest) (io.ReadCloser, error) { return os.Open(set.Files[d]) },
	})
	if err == nil || hits.Load() != 0 {
		t.Errorf("push with an http token realm: %v; the realm got %d requests", err, hits.Load())
	}
}
