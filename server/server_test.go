package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/verify"
)

type env struct {
	root   string
	st     *store.Store
	ts     *httptest.Server
	cl     *http.Client
	signer *openpgp.Entity
	set    *bundletest.Set
}

func setup(t testing.TB) *env {
	t.Helper()
	signer := bundletest.Key(t, "site")
	set := bundletest.Standard(t, t.TempDir(), signer)
	root, st := importSet(t, set, signer)
	srv := server.New(st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewTLSServer(srv)
	t.Cleanup(ts.Close)
	return &env{root: root, st: st, ts: ts, cl: ts.Client(), signer: signer, set: set}
}

// importSet imports a fixture set into a new store and opens it.
func importSet(t testing.TB, set *bundletest.Set, signer *openpgp.Entity) (string, *store.Store) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	var b bytes.Buffer
	set.WriteBundle(t, &b, signer, bundle.CompressionZstd)
	if _, err := store.Import(root, &b, store.ImportOptions{Keyring: openpgp.EntityList{signer}}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, st
}

// get sends a GET (see do: "Host" in hdr sets the Host).
func (e *env) get(t *testing.T, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return e.do(t, "GET", path, hdr...)
}

func (e *env) getJSON(t *testing.T, path string, v any, hdr ...string) *http.Response {
	t.Helper()
	resp, b := e.get(t, path, hdr...)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: content type %q", path, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return resp
}

func TestDiscovery(t *testing.T) {
	e := setup(t)
	var d map[string]string
	e.getJSON(t, "/.well-known/terraform.json", &d)
	if d["providers.v1"] != "/v1/providers/" || d["modules.v1"] != "/v1/modules/" {
		t.Fatalf("discovery: %v", d)
	}
	e.getJSON(t, "/origin/registry.opentofu.org/.well-known/terraform.json", &d)
	if d["providers.v1"] != "/origin/registry.opentofu.org/v1/providers/" {
		t.Fatalf("origin discovery: %v", d)
	}
	resp, _ := e.get(t, "/origin/registry.example.com/.well-known/terraform.json")
	if resp.StatusCode != 404 {
		t.Fatalf("unknown origin: %s", resp.Status)
	}
}

func TestProviderRegistryProtocol(t *testing.T) {
	e := setup(t)
	var vs struct {
		Versions []struct {
			Version   string   `json:"version"`
			Protocols []string `json:"protocols"`
			Platforms []struct{ OS, Arch string }
		} `json:"versions"`
	}
	// Host names the origin: that origin's view, no client configuration.
	e.getJSON(t, "/v1/providers/hashicorp/null/versions", &vs, "Host", "registry.opentofu.org")
	if len(vs.Versions) != 1 || vs.Versions[0].Version != "3.2.2" || len(vs.Versions[0].Platforms) != 2 {
		t.Fatalf("versions: %+v", vs)
	}
	// The default view (appliance name) finds it too; the terraform.io view does not.
	e.getJSON(t, "/v1/providers/hashicorp/null/versions", &vs)
	if resp, _ := e.get(t, "/v1/providers/hashicorp/null/versions", "Host", "registry.terraform.io"); resp.StatusCode != 404 {
		t.Fatalf("terraform.io view served an opentofu.org provider: %s", resp.Status)
	}
	var dl struct {
		Protocols           []string `json:"protocols"`
		OS, Arch, Filename  string
		DownloadURL         string `json:"download_url"`
		ShasumsURL          string `json:"shasums_url"`
		ShasumsSignatureURL string `json:"shasums_signature_url"`
		Shasum              string `json:"shasum"`
		SigningKeys         struct {
			GPGPublicKeys []struct {
				KeyID      string `json:"key_id"`
				ASCIIArmor string `json:"ascii_armor"`
			} `json:"gpg_public_keys"`
		} `json:"signing_keys"`
		Packages map[string]struct {
			Hashes      []string `json:"hashes"`
			PackageSize int64    `json:"package_size"`
		} `json:"packages"`
	}
	e.getJSON(t, "/origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.0/download/darwin/arm64", &dl)
	if dl.OS != "darwin" || dl.Arch != "arm64" || !verify.IsHex64(dl.Shasum) || len(dl.SigningKeys.GPGPublicKeys) != 1 {
		t.Fatalf("download: %+v", dl)
	}
	fetch := func(u string) []byte {
		if !strings.HasPrefix(u, "/blobs/sha256/") {
			t.Fatalf("URL %q: want a relative /blobs/sha256/… URL (the answer must not depend on the Host)", u)
		}
		resp, err := e.cl.Get(e.ts.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", u, resp.Status)
		}
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	zip := fetch(dl.DownloadURL)
	sum := sha256.Sum256(zip)
	if hex.EncodeToString(sum[:]) != dl.Shasum {
		t.Fatal("package bytes do not match shasum")
	}
	// OpenTofu 1.12's "packages": every platform of the version with its
	// zh:, h1: and size; the requested platform's entry matches the bytes.
	pv := e.set.Catalog.Providers[0]
	for _, p := range e.set.Catalog.Providers {
		if p.Type == "random" && p.Version == "3.6.0" {
			pv = p
		}
	}
	if len(dl.Packages) != len(pv.Packages) {
		t.Fatalf("packages lists %d platforms, the version has %d: %+v", len(dl.Packages), len(pv.Packages), dl.Packages)
	}
	for _, pk := range pv.Packages {
		got := dl.Packages[pk.Platform()]
		if strings.Join(got.Hashes, " ") != pk.ZH()+" "+pk.H1 || got.PackageSize != pk.Size || pk.Size <= 0 {
			t.Errorf("packages[%s] = %+v, want [%s %s] and %d bytes", pk.Platform(), got, pk.ZH(), pk.H1, pk.Size)
		}
	}
	if own := dl.Packages["darwin_arm64"]; own.Hashes[0] != "zh:"+dl.Shasum || own.PackageSize != int64(len(zip)) {
		t.Errorf("the requested platform's entry %+v does not match the package (%d bytes, %s)", own, len(zip), dl.Shasum)
	}
	zipFile := filepath.Join(t.TempDir(), dl.Filename)
	os.WriteFile(zipFile, zip, 0o644)
	if h1, err := dist.H1(zipFile); err != nil || dl.Packages["darwin_arm64"].Hashes[1] != h1 {
		t.Errorf("packages h1 %s, the served zip's is %s (%v)", dl.Packages["darwin_arm64"].Hashes[1], h1, err)
	}
	sums := fetch(dl.ShasumsURL)
	if !bytes.Contains(sums, []byte(dl.Shasum+"  "+dl.Filename)) {
		t.Fatalf("SHA256SUMS lacks the package line:\n%s", sums)
	}
	sig := fetch(dl.ShasumsSignatureURL)
	kr, err := verify.ReadKeyring(strings.NewReader(dl.SigningKeys.GPGPublicKeys[0].ASCIIArmor))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.CheckDetached(kr, bytes.NewReader(sums), sig); err != nil {
		t.Fatalf("served signature does not verify: %v", err)
	}
	for _, p := range []string{
		"/v1/providers/hashicorp/random/9.9.9/download/linux/amd64",
		"/v1/providers/hashicorp/random/3.6.0/download/windows/amd64",
		"/v1/providers/nobody/nothing/versions",
	} {
		resp, b := e.get(t, p)
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Contains(b, []byte(`"errors"`)) {
			t.Errorf("GET %s: %s %q %s", p, resp.Status, resp.Header.Get("Content-Type"), b)
		}
	}
}

func TestModuleRegistryProtocol(t *testing.T) {
	e := setup(t)
	var vs struct {
		Modules []struct {
			Versions []struct{ Version string } `json:"versions"`
		} `json:"modules"`
	}
	e.getJSON(t, "/v1/modules/Example/VPC/AWS/versions", &vs) // case-insensitive
	if len(vs.Modules) != 1 || len(vs.Modules[0].Versions) != 1 || vs.Modules[0].Versions[0].Version != "1.0.0" {
		t.Fatalf("versions: %+v", vs)
	}
	var loc struct{ Location string }
	resp := e.getJSON(t, "/origin/registry.terraform.io/v1/modules/example/vpc/aws/1.0.0/download", &loc)
	if resp.Header.Get("X-Terraform-Get") != loc.Location {
		t.Fatalf("header %q and body %q differ", resp.Header.Get("X-Terraform-Get"), loc.Location)
	}
	u, sub, ok := strings.Cut(loc.Location, ".tar.gz//")
	if !ok || sub != "modules/vpc" || !strings.HasPrefix(u, "/archives/sha256/") {
		t.Fatalf("location %q: want a relative /archives/… .tar.gz URL with //modules/vpc", loc.Location)
	}
	r2, body := e.get(t, u+".tar.gz")
	if r2.StatusCode != 200 || r2.Header.Get("Content-Type") != "application/gzip" || len(body) == 0 {
		t.Fatalf("archive: %s %q", r2.Status, r2.Header.Get("Content-Type"))
	}
}

func TestNetworkMirror(t *testing.T) {
	e := setup(t)
	var ix struct{ Versions map[string]any }
	e.getJSON(t, "/mirror/registry.terraform.io/hashicorp/random/index.json", &ix)
	if _, ok := ix.Versions["3.6.0"]; !ok || len(ix.Versions) != 1 {
		t.Fatalf("index: %+v", ix)
	}
	var v struct {
		Archives map[string]struct {
			URL    string
			Hashes []string
		}
	}
	e.getJSON(t, "/mirror/registry.terraform.io/hashicorp/random/3.6.0.json", &v)
	if len(v.Archives) != 2 {
		t.Fatalf("archives: %+v", v)
	}
	for plat, a := range v.Archives {
		if len(a.Hashes) != 2 || !strings.HasPrefix(a.Hashes[0], "h1:") || !strings.HasPrefix(a.Hashes[1], "zh:") {
			t.Errorf("%s: hashes %v", plat, a.Hashes)
		}
		resp, b := e.get(t, a.URL)
		sum := sha256.Sum256(b)
		if resp.StatusCode != 200 || "zh:"+hex.EncodeToString(sum[:]) != a.Hashes[1] {
			t.Errorf("%s: archive does not match its zh hash", plat)
		}
	}
	for _, p := range []string{"/mirror/registry.terraform.io/hashicorp/nope/index.json", "/mirror/registry.terraform.io/hashicorp/random/1.0.0.json"} {
		if resp, _ := e.get(t, p); resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
}

func TestBlobsContentAddressed(t *testing.T) {
	e := setup(t)
	p := e.set.Catalog.Providers[0]
	pk := p.Packages[0]
	path := "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
	resp, full := e.get(t, path)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || etag != `"`+string(pk.Digest)+`"` || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Fatalf("blob: %s etag %q cache %q", resp.Status, etag, resp.Header.Get("Cache-Control"))
	}
	resp, part := e.get(t, path, "Range", "bytes=10-19")
	if resp.StatusCode != 206 || !bytes.Equal(part, full[10:20]) {
		t.Fatalf("range: %s", resp.Status)
	}
	if resp, _ := e.get(t, path, "If-None-Match", etag); resp.StatusCode != 304 {
		t.Fatalf("if-none-match: %s", resp.Status)
	}
	req, _ := http.NewRequest("HEAD", e.ts.URL+path, nil)
	hr, err := e.cl.Do(req)
	if err != nil || hr.StatusCode != 200 || hr.ContentLength != int64(len(full)) {
		t.Fatalf("HEAD: %v %v", hr, err)
	}
	// A module archive is not served under the archive path with another role.
	if resp, _ := e.get(t, "/archives/sha256/"+pk.Digest.Hex()+".tar.gz"); resp.StatusCode != 404 {
		t.Fatalf("package served as a module archive: %s", resp.Status)
	}
}

func TestHardening(t *testing.T) {
	e := setup(t)
	secret := filepath.Join(filepath.Dir(e.root), "secret.txt")
	os.WriteFile(secret, []byte("SECRET"), 0o644)
	for _, p := range []string{
		"/blobs/sha256/../../index.json", "/blobs/sha256/..%2f..%2findex.json", "/blobs/sha256/%2e%2e/%2e%2e/index.json",
		"/blobs/sha256/" + strings.Repeat("a", 64) + "/../../../secret.txt", "/archives/sha256/..%2F..%2Fsecret.txt.tar.gz",
		"/mirror/..%2F..%2F/x/y/index.json", "/v1/providers/..%2F/x/versions", "/index.json", "/tls/ca/ca.key",
		"/blobs/sha256/" + strings.Repeat("A", 64), "//etc/passwd", "/ca.pem/../index.json",
	} {
		resp, b := e.get(t, p)
		if resp.StatusCode == 200 && !bytes.HasPrefix(b, []byte("{")) || bytes.Contains(b, []byte("SECRET")) || bytes.Contains(b, []byte(`"imports"`)) || bytes.Contains(b, []byte("PRIVATE KEY")) {
			t.Errorf("GET %s: %s leaked %q", p, resp.Status, b)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("GET %s: %s", p, resp.Status)
		}
	}
	req, _ := http.NewRequest("POST", e.ts.URL+"/v1/providers/hashicorp/random/versions", strings.NewReader("x"))
	if resp, err := e.cl.Do(req); err != nil || resp.StatusCode != 405 {
		t.Errorf("POST: %v %v", resp, err)
	}
	// The real http.Server limits header size.
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := server.NewHTTPServer(srv, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go hs.Serve(ln)
	defer hs.Close()
	req, _ = http.NewRequest("GET", "http://"+ln.Addr().String()+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header: %v %v", resp, err)
	}
}

func TestHotReloadKeepsDownloadsInFlight(t *testing.T) {
	e := setup(t)
	// A big package to download slowly while a new bundle is imported.
	signer := e.signer
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "big", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 8 << 20}))
	var b bytes.Buffer
	set.WriteBundle(t, &b, signer, bundle.CompressionNone)
	if _, err := store.Import(e.root, &b, store.ImportOptions{Keyring: openpgp.EntityList{signer}}); err != nil {
		t.Fatal(err)
	}
	e.st.Reload()
	pk := set.Catalog.Providers[0].Packages[0]
	resp, err := e.cl.Get(e.ts.URL + "/blobs/sha256/" + pk.Digest.Hex())
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 1<<20)
	io.ReadFull(resp.Body, head)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.st.Watch(ctx, time.Second, nil)
	set2 := bundletest.NewSet()
	set2.AddProvider(bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "tls", Version: "4.0.5", Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher")}))
	var b2 bytes.Buffer
	set2.WriteBundle(t, &b2, signer, bundle.CompressionZstd)
	start := time.Now()
	if _, err := store.Import(e.root, &b2, store.ImportOptions{Keyring: openpgp.EntityList{signer}}); err != nil {
		t.Fatal(err)
	}
	for {
		r, _ := e.get(t, "/v1/providers/hashicorp/tls/versions")
		if r.StatusCode == 200 {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("the new bundle was not served within 2 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("new catalog served %v after the import finished", time.Since(start).Round(time.Millisecond))
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(head, rest...))
	if "sha256:"+hex.EncodeToString(sum[:]) != string(pk.Digest) {
		t.Fatal("the download in flight was corrupted by the reload")
	}
}

// TestHTTP1Only: the appliance answers over HTTP/1.1 even to clients that
// offer HTTP/2 (measured twice as fast for big downloads).
func TestHTTP1Only(t *testing.T) {
	e := setup(t)
	st, err := certs.New(context.Background(), certs.Options{Mode: certs.ModeLocal, Dir: t.TempDir(), Names: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	hs := server.NewHTTPServer(server.New(e.st, server.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs.TLSConfig = st.Config
	server.HTTP1Only(hs.TLSConfig)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go hs.ServeTLS(ln, "", "")
	defer hs.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(st.CAPEM)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := cl.Get("https://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Fatalf("answered over %s", resp.Proto)
	}
}

// TestSlowClients: connections that dribble their headers are cut at the
// header timeout and never stop the server answering others.
func TestSlowClients(t *testing.T) {
	e := setup(t)
	hs := server.NewHTTPServer(server.New(e.st, server.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs.ReadHeaderTimeout = 500 * time.Millisecond // 10 s in production
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go hs.Serve(ln)
	defer hs.Close()
	var slow []net.Conn
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n"))
		slow = append(slow, c)
	}
	start := time.Now()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a normal request beside 200 slow clients: %v %v", resp, err)
	}
	resp.Body.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a normal request took %v beside slow clients", d)
	}
	time.Sleep(time.Second)
	closed := 0
	for _, c := range slow {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF || err == nil {
			closed++ // EOF, or the 408 the server writes before closing
		}
		c.Close()
	}
	if closed < len(slow) {
		t.Errorf("only %d of %d slow connections were cut after the header timeout", closed, len(slow))
	}
}
