package ops

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestObjectStoreRangesOfOneBlobAtOnce: range requests for one blob sent
// at once over many connections (a client resuming one download in
// parallel, or one filling the replica's disk) cost the replica one fetch
// from the bucket per blob, not one per request: before, each request
// fetched the whole blob, and each that did not fit the cache kept its own
// copy on disk while it was read (here 20 at once of a 1.5 MiB package
// over a 1 MiB cache: 20 GETs of the bucket and up to 30 MiB of disk). A
// package that fits the cache (400 KiB) and one that does not (1.5 MiB)
// are each asked for by 20 requests at once, while the replica's GETs of
// blobs are held at a proxy in front of the bucket until all 40 arrived:
// exactly one GET per package reaches the bucket, every answer is its
// range's bytes, and no temporary file is left behind.
func TestObjectStoreRangesOfOneBlobAtOnce(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.NewSet()
	sizes := map[string]int{"alpha": 400 << 10, "bravo": 1536 << 10}
	for n, size := range sizes {
		set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, n), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: n, Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: size,
		}))
	}
	b := filepath.Join(work, "site.bundle")
	set.WriteBundleFile(t, b, signer, bundle.CompressionZstd)
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", s.Addr("site"), b)

	var holding atomic.Bool
	p, addr := startHoldingProxy(t, s, "site", func(method, name string, _ []string) bool {
		return holding.Load() && method == "GET" && strings.HasPrefix(name, "blobs/")
	})
	tmp := t.TempDir()
	srv := harness.Serve(t, harness.ServeOptions{Store: addr, Env: append(s.Env(), "TMPDIR="+tmp), Args: []string{"--metrics-listen", "off", "--object-cache-max", "1MiB"}})
	var cl *http.Client
	for deadline := time.Now().Add(20 * time.Second); cl == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", srv.Logs.String())
		}
		pemData, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "ca", "--store", s.Addr("site"))
		if err != nil || !strings.Contains(pemData, "-----BEGIN") {
			continue
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(pemData[strings.Index(pemData, "-----BEGIN"):]))
		c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxConnsPerHost: 64}}
		if code, _, err := harness.Fetch(c, srv.Base+"healthz"); err == nil && code == 200 {
			cl = c
		}
	}
	pkgs, zips := map[string]string{}, map[string][]byte{}
	for n := range sizes {
		dl := srv.Base + "origin/registry.terraform.io/v1/providers/example/" + n + "/1.0.0/download/linux/amd64"
		_, body, err := harness.Fetch(cl, dl)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			DownloadURL string `json:"download_url"`
		}
		json.Unmarshal(body, &d)
		pkgs[n] = harness.ResolveRef(dl, d.DownloadURL)
		resp, err := cl.Get(pkgs[n]) // whole (harness.Fetch stops at 1 MiB)
		if err != nil {
			t.Fatal(err)
		}
		zips[n], err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(zips[n]) < sizes[n] {
			t.Fatalf("GET %s: %d bytes, %v", pkgs[n], len(zips[n]), err)
		}
	}
	_, before, _ := p.state()
	holding.Store(true)
	const each = 20
	var wg sync.WaitGroup
	errs := make(chan string, 2*each)
	for n := range sizes {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("GET", pkgs[n], nil)
				req.Header.Set("Range", "bytes=1000-1999")
				resp, err := cl.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				part, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 206 || string(part) != string(zips[n][1000:2000]) {
					errs <- n + ": " + resp.Status + ", " + string(part[:min(len(part), 200)])
				}
			}()
		}
	}
	// Every request has reached the replica (and, on the old code, the
	// bucket) well within this.
	time.Sleep(2 * time.Second)
	close(p.pass)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	_, seen, _ := p.state()
	gets := countOf(seen[len(before):], "GET", "blobs/")
	t.Logf("GETs of blobs from the bucket for %d range requests of 2 packages at once: %d", 2*each, gets)
	if gets != len(sizes) {
		t.Errorf("%d GETs of blobs reached the bucket for %d range requests of %d packages at once, want one per package", gets, 2*each, len(sizes))
	}
	var left []string
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "fetch-") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// cutBody passes the first n bytes of a body, then fails as a connection
// reset would.
type cutBody struct {
	io.ReadCloser
	n int64
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errors.New("cut")
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.ReadCloser.Read(p)
	b.n -= int64(n)
	return n, err
}

// TestObjectStoreStreamCutByServer: the object store's connection cut in
// the middle of a blob a replica streams (a reset, a server restarted)
// is a broken download: the replica logs it cut off and does not count
// it as a download. Before, the body's "unexpected EOF" was taken for its
// clean end: the held-back chunk was sent, nothing was logged, and the
// broken download was counted, so usage counts (and 'prune
// --unused-for') were off by every failed download.
func TestObjectStoreStreamCutByServer(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", s.Addr("site"), bundles[0])
	target, _ := url.Parse(s.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	var cutting atomic.Bool
	rp.ModifyResponse = func(resp *http.Response) error {
		if cutting.Load() && resp.Request.Method == "GET" && strings.Contains(resp.Request.URL.Path, "/blobs/") && resp.ContentLength > 1 {
			resp.Body = &cutBody{ReadCloser: resp.Body, n: resp.ContentLength / 2}
		}
		return nil
	}
	px := httptest.NewServer(rp)
	t.Cleanup(px.Close)
	addr := "s3://" + s.Bucket + "/site?use_path_style=true&endpoint=" + px.URL
	srv, cl := startS3Replica(t, s, addr, "--usage-flush", "1s")

	const dl = "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	_, body, err := harness.Fetch(cl, srv.Base+dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	json.Unmarshal(body, &d)
	pkg := harness.ResolveRef(srv.Base+dl, d.DownloadURL)
	get := func() (int64, int64, error) {
		resp, err := cl.Get(pkg)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		return n, resp.ContentLength, err
	}
	cutting.Store(true)
	const cuts = 3
	for range cuts {
		if n, want, err := get(); err == nil && n == want {
			t.Fatalf("a download cut at the object store arrived whole (%d bytes)", n)
		}
	}
	cutting.Store(false)
	if n, want, err := get(); err != nil || n != want {
		t.Fatalf("a download over a working connection: %d of %d bytes, %v", n, want, err)
	}
	var got int64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--usage", "--json", "--store", s.Addr("site"))
		var rep struct {
			Versions []struct {
				Version   string
				Downloads int64
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		for _, v := range rep.Versions {
			if v.Version == "3.6.2" {
				got = v.Downloads
			}
		}
		if got >= 1 || time.Now().After(deadline) {
			break
		}
	}
	if got != 1 {
		t.Errorf("downloads counted: %d, want 1 (%d more were cut off at the object store)", got, cuts)
	}
	if n := strings.Count(srv.Logs.String(), "cut off"); n < cuts {
		t.Errorf("the replica logged %d downloads cut off, want %d:\n%s", n, cuts, srv.Logs.String())
	}
}

// TestObjectStoreReplacedBlobOfAnotherSize: a package replaced in the
// bucket by a larger object (anyone with write access to blobs/; the
// object may be up to 8 GiB) is refused by the replica from its size
// alone, which the index records, before a byte of it is read: before,
// a range request fetched the whole object onto the replica's disk and a
// download streamed all of it (200), each found wrong only at its end.
func TestObjectStoreReplacedBlobOfAnotherSize(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", s.Addr("site"), bundles[0])
	p, addr := startHoldingProxy(t, s, "site", func(string, string, []string) bool { return false })
	srv, cl := startS3Replica(t, s, addr)
	const dl = "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	_, body, err := harness.Fetch(cl, srv.Base+dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	json.Unmarshal(body, &d)
	pkg := harness.ResolveRef(srv.Base+dl, d.DownloadURL)
	_, hex, _ := strings.Cut(pkg, "/blobs/sha256/")
	hex, _, _ = strings.Cut(hex, "/")
	if len(hex) != 64 {
		t.Fatalf("no blob in %s", pkg)
	}
	big := make([]byte, 4<<20)
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/blobs/sha256/" + hex), Body: bytes.NewReader(big)}); err != nil {
		t.Fatal(err)
	}
	get := func(rng string) (int, int64) {
		req, _ := http.NewRequest("GET", pkg, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("GET %q: %v", rng, err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, n
	}
	_, before, _ := p.state()
	if code, n := get("bytes=1000-1999"); code/100 == 2 {
		t.Errorf("a range of the replaced package: %d, %d bytes", code, n)
	}
	_, seen, _ := p.state()
	if n := countOf(seen[len(before):], "GET", "blobs/"); n > 0 {
		t.Errorf("for a range, the replica fetched the replaced object (%d GETs): its size alone says it is not the package", n)
	}
	// A download opens the object (its size comes with the answer's
	// headers) and refuses it before it answers.
	if code, n := get(""); code/100 == 2 {
		t.Errorf("a download of the replaced package: %d, %d bytes streamed", code, n)
	}
	// HEAD (Terraform 1.11 sends it before the download) answers from
	// the object's size, and refuses it the same way.
	if resp, err := cl.Head(pkg); err != nil || resp.StatusCode/100 == 2 {
		t.Errorf("HEAD of the replaced package: %v %v", resp, err)
	}
	n := 0
	for deadline := time.Now().Add(3 * time.Second); n < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		n = strings.Count(srv.Logs.String(), "does not match its name")
	}
	if n != 3 {
		t.Errorf("the replica logged %d mismatches, want 3 (counted for the metric):\n%s", n, srv.Logs.String())
	}
}

// vmHWM is a process's peak resident set size (/proc/PID/status).
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestObjectStoreManyDownloadsMemory: 256 downloads of a 2 MiB package
// streamed through one bucket replica at once (every client has read its
// first 64 KiB before any reads on, so all 256 streams are open together)
// keep serve's peak memory under 160 MiB: a download holds two 64 KiB
// buffers and its connections' (to the client, to the object store), not
// the blob. Every download arrives whole.
func TestObjectStoreManyDownloadsMemory(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "p"), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "example", Type: "big", Version: "1.0.0",
		Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 2 << 20,
	}))
	b := filepath.Join(work, "site.bundle")
	set.WriteBundleFile(t, b, signer, bundle.CompressionZstd)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, b)
	srv, cl := startS3Replica(t, s, addr, "--max-conns-per-ip", "0")
	cl.Transport.(*http.Transport).MaxConnsPerHost = 0
	cl.Transport.(*http.Transport).MaxIdleConnsPerHost = 300
	const dl = "origin/registry.terraform.io/v1/providers/example/big/1.0.0/download/linux/amd64"
	_, body, err := harness.Fetch(cl, srv.Base+dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	json.Unmarshal(body, &d)
	pkg := harness.ResolveRef(srv.Base+dl, d.DownloadURL)
	base := vmHWM(t, srv.Proc.Pid)
	const n = 256
	var started, wg sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	sizes := make(chan int64, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := cl.Get(pkg)
			if err != nil {
				started.Done()
				sizes <- -1
				return
			}
			defer resp.Body.Close()
			first, _ := io.CopyN(io.Discard, resp.Body, 64<<10)
			started.Done()
			<-release
			rest, _ := io.Copy(io.Discard, resp.Body)
			sizes <- first + rest
		}()
	}
	started.Wait()
	time.Sleep(time.Second)
	open := vmHWM(t, srv.Proc.Pid)
	close(release)
	wg.Wait()
	close(sizes)
	whole := 0
	for sz := range sizes {
		if sz >= 2<<20 {
			whole++
		}
	}
	peak := vmHWM(t, srv.Proc.Pid)
	t.Logf("serve's peak RSS: %d MiB before, %d MiB with %d streams open, %d MiB at the end; %d of %d downloads whole", base>>20, open>>20, n, peak>>20, whole, n)
	if whole != n {
		t.Errorf("%d of %d downloads arrived whole", whole, n)
	}
	if peak > 160<<20 {
		t.Errorf("serve's peak memory with %d downloads streamed at once: %d MiB, want under 160 MiB", n, peak>>20)
	}
}

// TestObjectStoreBlobListingLongNames: objects under blobs/ whose names
// are not blobs' (S3 allows 1,024 bytes; anyone with write access to
// blobs/ can put a million, the listing's bound) are skipped as they are
// listed by the verbs that list blobs (gc, prune, inventory, export's
// sizes), not held: with 60,000 such names 'gc --dry-run' peaked at 140
// MiB (at the million the listing allows, some 2 GiB); now 42 MiB, under
// 100 MiB, and the store is reported unchanged (none of them is a blob gc
// would delete).
func TestObjectStoreBlobListingLongNames(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", s.Addr("site"), bundles[0])
	const n = 60000
	long := filepath.Join(s.Dir, s.Bucket, "site", "blobs", "sha256", strings.Repeat("a", 250), strings.Repeat("b", 250), strings.Repeat("c", 250))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(long, fmt.Sprintf("%0200d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	out, peakKiB, err := harness.CmdRunMeasured(t, work, s.Env(), harness.Bin, "gc", "--dry-run", "--json", "--store", s.Addr("site"))
	peak := peakKiB << 10
	t.Logf("gc --dry-run over %d long names: %s, peak RSS %d MiB", n, time.Since(start).Round(time.Millisecond), peak>>20)
	if err != nil {
		t.Fatalf("gc --dry-run: %v\n%s", err, out)
	}
	var res struct{ Blobs []string }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil || len(res.Blobs) != 0 {
		t.Errorf("gc --dry-run: %v, %d blobs to remove\n%.400s", err, len(res.Blobs), out)
	}
	if peak > 100<<20 {
		t.Errorf("gc --dry-run's peak RSS %d MiB over %d long names, want under 100 MiB", peak>>20, n)
	}
}

// TestObjectStoreCopyForeignLongNames: 'store copy' out of a prefix that
// holds 60,000 objects of 1,000-byte names that are not the store's is
// refused naming one, holding none of those names: before, every name
// listed was held first (140 MiB here; at the listing's bound of a
// million, some 2 GiB), now under 100 MiB. Nothing is left at the
// destination.
func TestObjectStoreCopyForeignLongNames(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", s.Addr("site"), bundles[0])
	const n = 60000
	long := filepath.Join(s.Dir, s.Bucket, "site", strings.Repeat("a", 250), strings.Repeat("b", 250), strings.Repeat("c", 250))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(long, fmt.Sprintf("%0200d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy")
	out, peakKiB, err := harness.CmdRunMeasured(t, work, s.Env(), harness.Bin, "store", "copy", s.Addr("site"), dst)
	peak := peakKiB << 10
	t.Logf("store copy over %d foreign long names: peak RSS %d MiB", n, peak>>20)
	if err == nil || !strings.Contains(out, "holds an object that is not the store's: \"aaaa") {
		t.Errorf("store copy out of a prefix with foreign objects: %v\n%.600s", err, out)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("the refused copy left %s: %v", dst, err)
	}
	if peak > 100<<20 {
		t.Errorf("store copy's peak RSS %d MiB over %d long names, want under 100 MiB", peak>>20, n)
	}
}
