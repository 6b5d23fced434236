package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/protocol"
)

// usageEnv is a test server that counts downloads into its store's state.
type usageEnv struct {
	*env
	u    *protocol.Usage
	logs *syncBuffer
}

func setupUsage(t *testing.T, interval time.Duration) *usageEnv {
	t.Helper()
	e := setup(t)
	return usageOver(t, e, interval)
}

// usageOver starts a second server (a replica) over e's store, counting.
func usageOver(t *testing.T, e *env, interval time.Duration) *usageEnv {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	u := protocol.StartUsage(e.root, protocol.UsageOptions{Interval: interval, Log: log})
	t.Cleanup(u.Close)
	srv := server.New(e.st, server.Options{Logger: log, Usage: u})
	ts := httptest.NewTLSServer(srv)
	t.Cleanup(ts.Close)
	ue := &usageEnv{env: &env{root: e.root, st: e.st, ts: ts, cl: ts.Client(), signer: e.signer, set: e.set}, u: u, logs: logs}
	return ue
}

func (e *env) do(t *testing.T, method, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, e.ts.URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func pkgURL(p dist.ProviderVersion, platform string) string {
	for _, pk := range p.Packages {
		if pk.Platform() == platform {
			return "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
		}
	}
	return ""
}

func readCounts(t *testing.T, root string) map[store.UsageKey]store.UsageCount {
	t.Helper()
	u, err := store.ReadUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	return u.Counts
}

// TestUsageCountsDownloadsOnce: a download counts once when its last byte
// went out, whichever way it was fetched (registry or mirror URL, OCI
// blob, a resumed range to the end), and nothing else counts: HEAD, a
// range short of the end, a 304, metadata, checksums and signatures.
func TestUsageCountsDownloadsOnce(t *testing.T) {
	e := setupUsage(t, time.Hour)
	random, null := e.provider(t, "random"), e.provider(t, "null")
	mod := e.st.Catalog().Modules[0]
	lin := pkgURL(random, "linux_amd64")
	linPkg, _ := random.Package("linux", "amd64")
	size := linPkg.Size
	type step struct {
		method, path string
		hdr          []string
		code         int
	}
	steps := []step{
		{"HEAD", lin, nil, 200},                                                   // Terraform 1.12.0's HEAD: not a download
		{"GET", lin, nil, 200},                                                    // 1
		{"GET", lin, []string{"Range", "bytes=0-99"}, 206},                        // a first part: not yet
		{"GET", lin, []string{"Range", fmt.Sprintf("bytes=100-%d", size-1)}, 206}, // resumed to the end: 2
		{"GET", lin, []string{"Range", "bytes=0-9,20-29"}, 206},                   // multipart: not
		{"GET", lin, []string{"If-None-Match", `"` + string(linPkg.Digest) + `"`}, 304},
		{"GET", lin, []string{"Range", fmt.Sprintf("bytes=%d-", size)}, 416},
		{"GET", "/blobs/sha256/" + random.Shasums.Hex() + "/" + random.ShasumsName, nil, 200},
		{"GET", "/blobs/sha256/" + random.ShasumsSig.Hex() + "/" + random.ShasumsName + ".sig", nil, 200},
		{"GET", "/v1/providers/hashicorp/random/versions", nil, 200},
		{"GET", "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64", nil, 200},
		{"GET", "/mirror/registry.terraform.io/hashicorp/random/3.6.0.json", nil, 200},
		{"GET", "/v1/modules/example/vpc/aws/1.0.0/download", nil, 200},
		{"GET", "/archives/sha256/" + mod.Archive.Hex() + ".tar.gz", nil, 200},                                 // module 1
		{"HEAD", "/archives/sha256/" + mod.Archive.Hex() + ".tar.gz", nil, 200},                                // not
		{"GET", "/v2/registry.opentofu.org/hashicorp/null/blobs/" + string(null.Packages[0].Digest), nil, 200}, // OCI: null 1
		{"GET", "/ui/providers/registry.terraform.io/hashicorp/random", nil, 200},
	}
	if _, err := os.Stat(store.UsageFile(e.root)); err != nil {
		t.Errorf("serve did not make the usage file when it started: %v", err)
	}
	for _, s := range steps {
		resp, body := e.do(t, s.method, s.path, s.hdr...)
		if resp.StatusCode != s.code {
			t.Fatalf("%s %s %v: %d, want %d: %.200q", s.method, s.path, s.hdr, resp.StatusCode, s.code, body)
		}
	}
	// The page shows what is pending before it is written.
	_, page := e.get(t, "/ui/providers/registry.terraform.io/hashicorp/random")
	for _, w := range []string{`data-version="3.6.0">2 downloads, last `, `data-platform="linux_amd64">2 downloads, last `, `data-platform="darwin_arm64">never downloaded`, `id="usage-since">Downloads counted since `} {
		if !strings.Contains(string(page), w) {
			t.Errorf("the provider page lacks %q", w)
		}
	}
	_, page = e.get(t, "/ui/modules/registry.terraform.io/example/vpc/aws")
	if !strings.Contains(string(page), `data-version="1.0.0">1 download, last `) {
		t.Errorf("the module page lacks its count:\n%s", page)
	}
	e.u.Close()
	got := readCounts(t, e.root)
	want := map[store.UsageKey]int64{
		{Kind: "provider", Address: random.Addr(), Version: "3.6.0", Platform: "linux_amd64"}:             2,
		{Kind: "provider", Address: null.Addr(), Version: "3.2.2", Platform: null.Packages[0].Platform()}: 1,
		{Kind: "module", Address: mod.Addr(), Version: "1.0.0"}:                                           1,
	}
	if len(got) != len(want) {
		t.Errorf("counts: %v, want %v", got, want)
	}
	for k, n := range want {
		if c := got[k]; c.Downloads != n || time.Since(c.Last) > time.Minute {
			t.Errorf("%v: %+v, want %d downloads just now", k, c, n)
		}
	}
}

// TestUsageBrokenOffNotCounted: a download the client stops reading and
// closes is not counted.
func TestUsageBrokenOffNotCounted(t *testing.T) {
	signer := bundletest.Key(t, "site")
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(t.TempDir(), "big"), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "example", Type: "big", Version: "1.0.0",
		Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 48 << 20,
	}))
	root, st := importSet(t, set, signer)
	e := usageOver(t, &env{root: root, st: st, set: set}, time.Hour)
	p := st.Catalog().Providers[0]
	resp, err := e.cl.Get(e.ts.URL + pkgURL(p, "linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 64<<10))
	resp.Body.Close() // broken off
	e.cl.Transport.(*http.Transport).CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	// The whole of it, once.
	if resp, _ := e.do(t, "GET", pkgURL(p, "linux_amd64")); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	e.u.Close()
	if c := readCounts(t, root)[store.UsageKey{Kind: "provider", Address: p.Addr(), Version: "1.0.0", Platform: "linux_amd64"}]; c.Downloads != 1 {
		t.Errorf("%d downloads counted, want 1 (the broken-off one must not count)", c.Downloads)
	}
}

// TestUsageFloodOfMissing: requests for what the catalog does not hold
// (unknown blobs, versions, platforms, addresses) add no count, no entry
// in memory and nothing to the file, however many there are.
func TestUsageFloodOfMissing(t *testing.T) {
	e := setupUsage(t, time.Hour)
	before, err := os.ReadFile(store.UsageFile(e.root))
	if err != nil {
		t.Fatal(err)
	}
	lin := pkgURL(e.provider(t, "random"), "linux_amd64")
	for i := 0; i < 4000; i++ {
		if i == 2000 { // one real download among them
			if resp, _ := e.do(t, "GET", lin); resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
		}
		var p string
		switch i % 4 {
		case 0:
			p = fmt.Sprintf("/blobs/sha256/%064x/terraform-provider-random_9.9.%d_linux_amd64.zip", i, i)
		case 1:
			p = fmt.Sprintf("/v1/providers/hashicorp/random/9.9.%d/download/linux/amd64", i)
		case 2:
			p = fmt.Sprintf("/archives/sha256/%064x.tar.gz", i)
		case 3:
			p = fmt.Sprintf("/v2/registry.terraform.io/hashicorp/random/blobs/sha256:%064x", i)
		}
		if resp, _ := e.do(t, "GET", p); resp.StatusCode != 404 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
	}
	if c := e.u.Of(store.UsageKey{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "9.9.1", Platform: "linux_amd64"}); c.Downloads != 0 {
		t.Errorf("a version not in the catalog was counted: %+v", c)
	}
	e.u.Flush()
	counts := readCounts(t, e.root)
	k := store.UsageKey{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "3.6.0", Platform: "linux_amd64"}
	if len(counts) != 1 || counts[k].Downloads != 1 {
		t.Errorf("after a flood of missing things and one download: %v, want only %v: 1", counts, k)
	}
	// The file grew by that one entry only.
	if after, _ := os.ReadFile(store.UsageFile(e.root)); len(after) > len(before)+300 {
		t.Errorf("the usage file grew from %d to %d bytes:\n%s", len(before), len(after), after)
	}
}

// TestUsageReplicas: two servers over one store lose none of each other's
// counts, and each shows the other's once it has written them.
func TestUsageReplicas(t *testing.T) {
	a := setupUsage(t, 50*time.Millisecond)
	b := usageOver(t, a.env, 50*time.Millisecond)
	lin := pkgURL(a.provider(t, "random"), "linux_amd64")
	for i := 0; i < 5; i++ {
		a.do(t, "GET", lin)
		b.do(t, "GET", lin)
		b.do(t, "GET", lin)
	}
	k := store.UsageKey{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "3.6.0", Platform: "linux_amd64"}
	deadline := time.Now().Add(10 * time.Second)
	for a.u.Of(k).Downloads != 15 || b.u.Of(k).Downloads != 15 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s replica a shows %d, b %d downloads; want 15 on both", a.u.Of(k).Downloads, b.u.Of(k).Downloads)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.u.Close()
	b.u.Close()
	if c := readCounts(t, a.root)[k]; c.Downloads != 15 {
		t.Errorf("the file holds %d downloads, want 15", c.Downloads)
	}
}

// TestUsageStateUnwritable: a state directory serve cannot write does not
// fail a download; the counts are kept in memory, the error is logged once,
// and they are written when the directory can be written again.
func TestUsageStateUnwritable(t *testing.T) {
	e := setup(t)
	state := store.StateDir(e.root)
	os.WriteFile(state, []byte("not a directory"), 0o644) // root ignores modes: a file in the way
	ue := usageOver(t, e, 30*time.Millisecond)
	lin := pkgURL(e.provider(t, "random"), "linux_amd64")
	for i := 0; i < 3; i++ {
		if resp, _ := ue.do(t, "GET", lin); resp.StatusCode != 200 {
			t.Fatalf("download with an unwritable state: %s", resp.Status)
		}
	}
	time.Sleep(200 * time.Millisecond) // several failed flushes
	k := store.UsageKey{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "3.6.0", Platform: "linux_amd64"}
	if c := ue.u.Of(k); c.Downloads != 3 {
		t.Errorf("%d downloads shown while the state cannot be written, want 3", c.Downloads)
	}
	ue.u.Flush()
	logs := ue.logs.String()
	if n := strings.Count(logs, "writing the download counts; they are kept in memory"); n != 1 {
		t.Errorf("the error was logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "hint=") {
		t.Errorf("no hint in the log:\n%s", logs)
	}
	os.Remove(state)
	ue.u.Close()
	if c := readCounts(t, e.root)[k]; c.Downloads != 3 {
		t.Errorf("%d downloads written once the state could be, want 3", c.Downloads)
	}
	if !strings.Contains(ue.logs.String(), "writing the download counts again") {
		t.Errorf("the recovery was not logged:\n%s", ue.logs.String())
	}
}
