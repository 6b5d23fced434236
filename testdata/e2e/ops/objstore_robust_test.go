package ops

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestObjectStoreReplicaStartLog: a bucket replica says "the store is
// empty" at start only when the bucket holds no index: over an imported
// store it logs the catalog it serves instead.
func TestObjectStoreReplicaStartLog(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, _ := harness.OpsStore(t)
	work := filepath.Dir(root)
	empty, _ := startS3Replica(t, s, s.Addr("empty"))
	if !strings.Contains(empty.Logs.String(), "the store is empty") {
		t.Errorf("a replica over a prefix with no index does not say the store is empty:\n%s", empty.Logs.String())
	}
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	r, _ := startS3Replica(t, s, addr)
	logs := r.Logs.String()
	if strings.Contains(logs, "the store is empty") || !strings.Contains(logs, "msg=serving") || strings.Contains(logs, "provider_versions=0 ") {
		t.Errorf("a replica over an imported store:\n%s", logs)
	}
}

// TestObjectStoreForgedLease: a lease object written by hand with an
// expiry in 2099 does not block imports: the next import takes it over,
// says whose it was and why it was not honoured, and lands. A live lease
// within the term an import sets is refused naming its holder and how to
// break it; broken as the refusal says, the import lands. gc, too, takes
// over a forged lease.
func TestObjectStoreForgedLease(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	addr := s.Addr("site")
	putLease := func(holder string, expires time.Time) {
		t.Helper()
		body := fmt.Sprintf(`{"holder":%q,"started":"2026-01-01T00:00:00Z","expires":%q}`, holder, expires.UTC().Format(time.RFC3339))
		if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	putLease("mallory", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	if !strings.Contains(out, "took over the lease of mallory") || !strings.Contains(out, "2099-01-01T00:00:00Z") || !strings.Contains(out, "not honoured") {
		t.Errorf("import over a lease forged to 2099 does not say so:\n%s", out)
	}
	if keys := bucketList(t, s, "site/lease.json"); len(keys) != 0 {
		t.Errorf("the lease is left after the import: %v", keys)
	}

	// Just within what an importer with a clock a few minutes ahead sets:
	// honoured, and the refusal says how to break it.
	putLease("ops@importer-7 (pid 42)", time.Now().Add(objstore.LeaseTTL+objstore.LeaseSkew-time.Minute))
	two := extra("two")
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, two)
	if err == nil || !strings.Contains(out, "ops@importer-7 (pid 42) holds its lease") ||
		!strings.Contains(out, "break the lease by deleting the object s3://"+s.Bucket+"/site/lease.json") || !strings.Contains(out, "not changed") {
		t.Errorf("import under a live lease: %v\n%s", err, out)
	}
	if _, err := s.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json")}); err != nil {
		t.Fatal(err)
	}
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, two)

	putLease("mallory", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	harness.MustRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr)
	if keys := bucketList(t, s, "site/lease.json"); len(keys) != 0 {
		t.Errorf("the forged lease is left after gc: %v", keys)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
	harness.CheckConsistent(t, dir)
}

// holdingProxy is a plain HTTP reverse proxy in front of the S3 server
// that holds, unanswered and never forwarded, every request hold says to
// hold (given the method and the object's name under the prefix, and
// what went through before it), until the client goes away. It is how a
// test stops an importer at an exact point of its work with no hook in
// airgap: the importer's next request to the bucket is the evidence of
// the phase it is in. The Host header is kept, so signatures still match.
type holdingProxy struct {
	mu     sync.Mutex
	seen   []string // "METHOD name" of each request as it arrived
	done   []string // and as it was answered (forwarded ones only)
	held   int
	hold   func(method, name string, seen []string) bool
	prefix string
	pass   chan struct{} // closed: held requests go on to the server
}

func startHoldingProxy(t *testing.T, s *harness.S3, prefix string, hold func(method, name string, seen []string) bool) (*holdingProxy, string) {
	t.Helper()
	target, _ := url.Parse(s.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	release := make(chan struct{})
	p := &holdingProxy{pass: make(chan struct{}), hold: hold, prefix: "/" + s.Bucket + "/" + prefix + "/"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, p.prefix)
		what := r.Method + " " + name
		p.mu.Lock()
		held := p.hold(r.Method, name, p.seen)
		p.seen = append(p.seen, what)
		if held {
			p.held++
		}
		p.mu.Unlock()
		if held {
			// The body read first: only then does the server notice the
			// client going away (and end the request's context).
			body, _ := io.ReadAll(r.Body)
			select {
			case <-r.Context().Done():
				return
			case <-release:
				return
			case <-p.pass:
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		rp.ServeHTTP(w, r)
		p.mu.Lock()
		p.done = append(p.done, what)
		p.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return p, "s3://" + s.Bucket + "/" + prefix + "?use_path_style=true&endpoint=" + srv.URL
}

func (p *holdingProxy) state() (held int, seen, done []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, append([]string(nil), p.seen...), append([]string(nil), p.done...)
}

func countOf(list []string, method, prefix string) int {
	n := 0
	for _, w := range list {
		if m, name, _ := strings.Cut(w, " "); m == method && strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// TestObjectStoreImportKilledInEachPhase: an importer SIGKILLed in each
// phase of a bucket import leaves a valid store: the index the one before
// (or, once written, the new one), every blob it names present and whole
// (a copy out of the bucket is consistent, and the inventory read from
// the bucket is the copy's), nothing under the prefix that is not the
// store's. While the importer is still alive in that phase, gc and prune
// are refused naming it (they never delete what an import in progress may
// refer to).
// After the kill the next import is refused naming the killed one and how
// to break its lease; broken so, gc removes every object no index refers
// to and the import of the same bundle completes. Each phase is reached
// by holding the importer's next request to the bucket (holdingProxy).
func TestObjectStoreImportKilledInEachPhase(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	site := filepath.Join(work, "site.bundle")
	first := extra("first")
	after := func(seen []string, what string) bool { return slices.Contains(seen, what) }
	for _, ph := range []struct {
		name string
		hold func(method, name string, seen []string) bool
		// settled: what must have been answered before the kill
		settled      func(done []string) bool
		indexChanged bool
	}{
		{name: "probing", hold: func(m, n string, seen []string) bool {
			return m == "PUT" && strings.HasPrefix(n, "probe-") && countOf(seen, "PUT", "probe-") == 1
		}},
		{name: "lease-taken", hold: func(m, n string, seen []string) bool {
			return m == "GET" && n == "index.json" && after(seen, "PUT lease.json")
		}},
		{name: "before-blobs", hold: func(m, n string, seen []string) bool {
			return m == "PUT" && strings.HasPrefix(n, "blobs/")
		}},
		{name: "uploading", hold: func(m, n string, seen []string) bool {
			return m == "PUT" && strings.HasPrefix(n, "blobs/") && countOf(seen, "PUT", "blobs/") >= 2
		}, settled: func(done []string) bool { return countOf(done, "PUT", "blobs/") >= 2 }},
		{name: "before-index", hold: func(m, n string, seen []string) bool {
			return m == "PUT" && n == "index.json"
		}},
		{name: "before-release", hold: func(m, n string, seen []string) bool {
			return n == "lease.json" && m != "PUT" && after(seen, "PUT index.json")
		}, settled: func(done []string) bool { return slices.Contains(done, "PUT index.json") }, indexChanged: true},
	} {
		t.Run(ph.name, func(t *testing.T) {
			t.Parallel()
			addr := s.Addr(ph.name)
			harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, first)
			before := bucketList(t, s, ph.name+"/")
			p, viaProxy := startHoldingProxy(t, s, ph.name, ph.hold)
			cmd := exec.Command(harness.Bin, "import", "--keyring", keyring, "--store", viaProxy, site)
			cmd.Env = append(harness.BaseEnv(), s.Env()...)
			out := &harness.LockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				held, _, done := p.state()
				if held > 0 && (ph.settled == nil || ph.settled(done)) {
					break
				}
				select {
				case <-exited:
					_, seen, _ := p.state()
					t.Fatalf("the import ended before the phase:\n%s\nrequests: %v", out.String(), seen)
				default:
				}
				if time.Now().After(deadline) {
					_, seen, _ := p.state()
					t.Fatalf("the phase was not reached: requests %v", seen)
				}
			}
			holder := "airgap import of site.bundle"
			if ph.name != "probing" {
				// Alive in this phase, it holds the lease: gc and prune
				// are refused.
				mid := bucketList(t, s, ph.name+"/")
				for _, args := range [][]string{{"gc", "--store", addr}, {"prune", "--keep", "1", "--store", addr}} {
					out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, args...)
					if err == nil || !strings.Contains(out, holder) {
						t.Errorf("%s while the import is in phase %s: %v\n%s", args[0], ph.name, err, out)
					}
				}
				if now := bucketList(t, s, ph.name+"/"); fmt.Sprint(now) != fmt.Sprint(mid) {
					t.Errorf("gc or prune, refused, changed the bucket:\n%v\n%v", mid, now)
				}
			}
			cmd.Process.Kill()
			<-exited
			_, seen, _ := p.state()
			t.Logf("killed after %d requests", len(seen))

			// A valid store.
			indexBefore, indexNow := "", ""
			for _, k := range before {
				if strings.HasPrefix(k, ph.name+"/index.json ") {
					indexBefore = k
				}
			}
			var orphans int
			for _, k := range bucketList(t, s, ph.name+"/") {
				name, _, _ := strings.Cut(strings.TrimPrefix(k, ph.name+"/"), " ")
				switch {
				case name == "index.json":
					indexNow = k
				case name == "lease.json", strings.HasPrefix(name, "probe-"), name == "state/usage/usage.json":
				case strings.HasPrefix(name, "blobs/sha256/"):
					if !slices.Contains(before, k) {
						orphans++
					}
				default:
					t.Errorf("a killed import left %s", k)
				}
			}
			if (indexNow != indexBefore) != ph.indexChanged {
				t.Errorf("index %q, before the import %q", indexNow, indexBefore)
			}
			check := func(label string) string {
				t.Helper()
				dir := filepath.Join(t.TempDir(), "copy")
				harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
				harness.CheckConsistent(t, dir)
				fromCopy := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", dir)
				if direct := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--store", addr); strings.Replace(direct, addr, dir, 1) != fromCopy {
					t.Errorf("%s: inventory from the bucket differs from the copy's:\n%s\n----\n%s", label, direct, fromCopy)
				}
				return fromCopy
			}
			check("after the kill")
			harness.MustRun(t, work, s.Env(), harness.Bin, "store", "check", addr)

			// The next import: refused while the killed one's lease lives
			// (but in the probe, before it took one), naming it and how to
			// break it.
			if ph.name != "probing" {
				out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, site)
				if err == nil || !strings.Contains(out, holder) || !strings.Contains(out, "deleting the object s3://"+s.Bucket+"/"+ph.name+"/lease.json") {
					t.Errorf("import while the killed one's lease lives: %v\n%s", err, out)
				}
				if _, err := s.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(ph.name + "/lease.json")}); err != nil {
					t.Fatal(err)
				}
			}
			if ph.name == "probing" {
				// A probe object as fresh as a check in progress stays;
				// one older than any check runs (the server's file
				// backdated) is removed.
				harness.MustRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr)
				probes, _ := filepath.Glob(filepath.Join(s.Dir, s.Bucket, ph.name, "probe-*"))
				if len(probes) != 1 {
					t.Fatalf("probe objects after gc: %v (want the killed check's, still fresh)", probes)
				}
				old := time.Now().Add(-objstore.ProbeStale - time.Minute)
				os.Chtimes(probes[0], old, old)
			}
			gcOut := harness.MustRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr)
			t.Logf("%d orphan blob(s); gc: %s", orphans, strings.TrimSpace(gcOut))
			copyDir := filepath.Join(t.TempDir(), "gced")
			harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, copyDir)
			st, err := store.Open(copyDir)
			if err != nil {
				t.Fatal(err)
			}
			referenced := map[string]bool{}
			for d := range st.Index().Blobs() {
				referenced[d.Hex()] = true
			}
			for _, k := range bucketList(t, s, ph.name+"/") {
				name, _, _ := strings.Cut(strings.TrimPrefix(k, ph.name+"/"), " ")
				if hex, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && !referenced[hex] {
					t.Errorf("after gc, blob %s is in the bucket and no index refers to it", hex[:12])
				}
				if strings.HasPrefix(name, "probe-") {
					t.Errorf("after gc, the killed probe's object %s is left", name)
				}
			}
			harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, site)
			if inv := check("after the next import"); !strings.Contains(inv, "example/first") || !strings.Contains(inv, "hashicorp/") {
				t.Errorf("the store after the next import lacks a bundle:\n%s", inv)
			}
		})
	}
}

// TestObjectStoreReplicaCacheBounded: range requests make a bucket
// replica hold blobs as files; with --object-cache-max 1MiB, ranges of
// four 400 KiB packages (1.6 MiB in all, each requested twice over) keep
// the replica's directory under 1 MiB of blobs after every answer, and
// every range answered is the package's bytes, an evicted one fetched
// again.
func TestObjectStoreReplicaCacheBounded(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.NewSet()
	names := []string{"alpha", "bravo", "charlie", "delta"}
	zips := map[string][]byte{}
	for _, n := range names {
		p := bundletest.BuildProvider(t, filepath.Join(work, n), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: n, Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 400 << 10,
		})
		set.AddProvider(p)
	}
	b := filepath.Join(work, "big.bundle")
	set.WriteBundleFile(t, b, signer, bundle.CompressionZstd)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, b)
	tmp := t.TempDir()
	srv := harness.Serve(t, harness.ServeOptions{Store: addr, Env: append(s.Env(), "TMPDIR="+tmp), Args: []string{"--metrics-listen", "off", "--object-cache-max", "1MiB"}})
	var cl *http.Client
	for deadline := time.Now().Add(20 * time.Second); cl == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", srv.Logs.String())
		}
		pemData, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "ca", "--store", addr)
		if err != nil || !strings.Contains(pemData, "-----BEGIN") {
			continue
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(pemData[strings.Index(pemData, "-----BEGIN"):]))
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		if code, _, err := harness.Fetch(c, srv.Base+"healthz"); err == nil && code == 200 {
			cl = c
		}
	}
	onDisk := func() int64 {
		var n int64
		filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, "blobs") {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		return n
	}
	var peak int64
	for round := range 2 {
		for _, n := range names {
			dl := srv.Base + "origin/registry.terraform.io/v1/providers/example/" + n + "/1.0.0/download/linux/amd64"
			_, body, err := harness.Fetch(cl, dl)
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				DownloadURL string `json:"download_url"`
			}
			json.Unmarshal(body, &d)
			pkg := harness.ResolveRef(dl, d.DownloadURL)
			if zips[n] == nil {
				_, whole, err := harness.Fetch(cl, pkg)
				if err != nil || len(whole) < 400<<10 {
					t.Fatalf("GET %s: %d bytes, %v", pkg, len(whole), err)
				}
				zips[n] = whole
			}
			req, _ := http.NewRequest("GET", pkg, nil)
			req.Header.Set("Range", "bytes=1000-1999")
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			part, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 206 || string(part) != string(zips[n][1000:2000]) {
				t.Errorf("round %d, range of %s: %d, %d bytes", round, n, resp.StatusCode, len(part))
			}
			if used := onDisk(); used > peak {
				peak = used
			}
		}
	}
	t.Logf("peak blob bytes on the replica's disk: %d (cap 1 MiB; 1.6 MiB of packages ranged)", peak)
	if peak > 1<<20 || peak < 400<<10 {
		t.Errorf("the replica's disk held %d bytes of blobs, want at most the 1 MiB cap (and at least one package)", peak)
	}
}

// startHeld starts airgap with args and waits until p holds a request of
// it; it returns a channel that yields its output and error once it ends.
func startHeld(t *testing.T, s *harness.S3, work string, p *holdingProxy, args ...string) chan error {
	t.Helper()
	cmd := exec.Command(harness.Bin, args...)
	cmd.Dir = work
	cmd.Env = append(harness.BaseEnv(), s.Env()...)
	out := &harness.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%v\n%s", err, out.String())
		}
		done <- err
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if held, _, _ := p.state(); held > 0 {
			return done
		}
		if time.Now().After(deadline) {
			_, seen, _ := p.state()
			t.Fatalf("airgap %s was not held: requests %v\n%s", args[0], seen, out.String())
		}
	}
}

// TestObjectStoreGCPastExpiredLease: an import stopped just before its
// index write for longer than its lease (here: its lease rewritten as
// expired) while a gc takes the lease over and sees its blobs as
// unreferenced. Whichever index write lands first, no index refers to a
// deleted blob: gc records its run in the index (conditionally) before it
// deletes anything, so when the import's write lands first, gc's fails
// and it deletes nothing.
func TestObjectStoreGCPastExpiredLease(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, extra("first"))
	holdIndex := func(m, n string, seen []string) bool { return m == "PUT" && n == "index.json" }
	pi, viaI := startHoldingProxy(t, s, "site", holdIndex)
	importDone := startHeld(t, s, work, pi, "import", "--keyring", keyring, "--store", viaI, filepath.Join(work, "site.bundle"))
	body := fmt.Sprintf(`{"holder":"stopped","started":"2026-01-01T00:00:00Z","expires":%q}`, time.Now().Add(-time.Second).UTC().Format(time.RFC3339))
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	pg, viaG := startHoldingProxy(t, s, "site", holdIndex)
	gcDone := startHeld(t, s, work, pg, "gc", "--store", viaG)
	_, seen, _ := pg.state()
	t.Logf("gc held after %v", seen)
	close(pi.pass)
	if err := <-importDone; err != nil {
		t.Errorf("the stopped import, let go: %v", err)
	}
	close(pg.pass)
	err := <-gcDone
	if err == nil || !strings.Contains(err.Error(), "another writer replaced the index") || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Errorf("gc whose index write came second: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
	harness.CheckConsistent(t, dir)
	if inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", dir); !strings.Contains(inv, "hashicorp/") {
		t.Errorf("the import's index is not the store's:\n%s", inv)
	}
}
