package ops

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// usageDoc is 'airgap inventory --usage --json'.
type usageDoc struct {
	CountedSince string `json:"counted_since"`
	Versions     []struct {
		Kind, Address, Version string
		Downloads              int64
		LastFetchedAt          string `json:"last_fetched_at"`
		Platforms              []struct {
			Platform  string
			Downloads int64
		}
	}
}

// downloads returns the downloads of ADDRESS VERSION [PLATFORM] in doc.
func (d *usageDoc) downloads(addr, ver, platform string) int64 {
	for _, v := range d.Versions {
		if v.Address != addr || v.Version != ver {
			continue
		}
		if platform == "" {
			return v.Downloads
		}
		for _, p := range v.Platforms {
			if p.Platform == platform {
				return p.Downloads
			}
		}
	}
	return -1
}

func inventoryUsage(t *testing.T, root string) *usageDoc {
	t.Helper()
	out, stderr, code := harness.RunSplit(t, "", nil, "inventory", "--store", root, "--usage", "--json")
	if code != 0 {
		t.Fatalf("inventory --usage --json: exit %d\n%s", code, stderr)
	}
	harness.CheckJSONDoc(t, "inventory --usage --json", out, true)
	var d usageDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// stopReplica ends a replica with SIGTERM (serve writes its counts then)
// and waits for it.
func stopReplica(t *testing.T, r *harness.Served) {
	t.Helper()
	r.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.Done:
	case <-time.After(40 * time.Second):
		t.Fatalf("replica :%d did not stop on SIGTERM", r.Port)
	}
}

// TestUsageReplicasTerraformInit: real terraform init runs against two
// replicas over one store — one straight at each, one through HAProxy
// (TLS passthrough) — are each counted once per package and module
// version they downloaded; each replica's catalog page shows the other's
// counts within a few seconds; 'inventory --usage' lists them; a restart
// keeps them.
func TestUsageReplicasTerraformInit(t *testing.T) {
	t.Parallel()
	tf, tfNew, haproxy := harness.TerraformBin(t), harness.TerraformNewBin(t), harness.HAProxyBin(t)
	fixture, _ := filepath.Abs(filepath.Join(harness.Root(), "testdata", "formats", "v2"))
	work := t.TempDir()
	root := filepath.Join(work, "store")
	harness.CopyDir(t, filepath.Join(fixture, "store"), root)
	a := harness.StartReplica(t, root, harness.FreePort(t), "--usage-flush", "1s")
	b := harness.StartReplica(t, root, harness.FreePort(t), "--usage-flush", "1s")
	cl, _, caFile := harness.CAClient(t, root)
	for _, r := range []*harness.Served{a, b} {
		harness.WaitHealthy(t, cl, fmt.Sprintf("https://localhost:%d/healthz", r.Port))
	}
	base, _ := harness.StartHAProxy(t, haproxy, caFile, []*harness.Served{a, b})
	harness.WaitHealthy(t, cl, base+"/healthz")

	n := 0
	initAt := func(url, bin string) {
		t.Helper()
		n++
		dir := filepath.Join(work, fmt.Sprint("project", n))
		harness.CopyDir(t, filepath.Join(fixture, "project"), dir)
		rc := filepath.Join(work, fmt.Sprint("tf", n, ".rc"))
		cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", url, "--mode", "registry")
		os.WriteFile(rc, []byte(cfg), 0o644)
		env := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
		harness.MustRun(t, dir, env, bin, "init", "-input=false", "-no-color")
	}
	initAt(fmt.Sprintf("https://localhost:%d", a.Port), tf)
	initAt(fmt.Sprintf("https://localhost:%d", b.Port), tf)
	initAt(base, tfNew)

	// What terraform installs: the random and null providers for this
	// machine's platform, the vpc module and the subnet module it calls.
	plat := runtime.GOOS + "_" + runtime.GOARCH
	want := []struct {
		addr, ver, plat string
		n               int64
	}{
		{"registry.terraform.io/hashicorp/random", "3.6.2", plat, 3},
		{"registry.terraform.io/hashicorp/null", "3.2.2", plat, 3},
		{"registry.terraform.io/hashicorp/random", "3.6.2", "darwin_arm64", 0},
		{"registry.terraform.io/example/vpc/aws", "1.0.0", "", 3},
		{"registry.terraform.io/example/subnet/aws", "2.1.0", "", 3},
	}
	// Each replica's page shows every init's downloads, the other
	// replica's included, once that one has written them (1 s) and this
	// one has read them (1 s).
	for _, r := range []*harness.Served{a, b} {
		u := fmt.Sprintf("https://localhost:%d/ui/providers/registry.terraform.io/hashicorp/random", r.Port)
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, page := harness.HTTPGet(t, cl, u)
			if strings.Contains(string(page), `data-platform="`+plat+`">3 downloads, last `) && strings.Contains(string(page), `data-version="3.6.2">3 downloads, last `) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica :%d's page does not show the 3 downloads 10 s after the inits:\n%s", r.Port, page)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopReplica(t, a)
	stopReplica(t, b)
	doc := inventoryUsage(t, root)
	for _, w := range want {
		if got := doc.downloads(w.addr, w.ver, w.plat); got != w.n {
			t.Errorf("%s %s %s: %d downloads, want %d", w.addr, w.ver, w.plat, got, w.n)
		}
	}
	if doc.CountedSince == "" {
		t.Error("inventory --usage says nothing was counted")
	}
	text := harness.MustRun(t, "", nil, harness.Bin, "inventory", "--store", root, "--usage")
	if !strings.Contains(text, "counted since "+doc.CountedSince) || !strings.Contains(text, "registry.terraform.io/example/vpc/aws") {
		t.Errorf("inventory --usage:\n%s", text)
	}

	// A restart keeps the counts, and counts on from them.
	c := harness.StartReplica(t, root, harness.FreePort(t), "--usage-flush", "1s")
	harness.WaitHealthy(t, cl, fmt.Sprintf("https://localhost:%d/healthz", c.Port))
	_, page := harness.HTTPGet(t, cl, fmt.Sprintf("https://localhost:%d/ui/modules/registry.terraform.io/example/vpc/aws", c.Port))
	if !strings.Contains(string(page), `data-version="1.0.0">3 downloads, last `) {
		t.Errorf("after a restart the module page does not show 3 downloads:\n%s", page)
	}
	initAt(fmt.Sprintf("https://localhost:%d", c.Port), tf)
	stopReplica(t, c)
	doc = inventoryUsage(t, root)
	if got := doc.downloads("registry.terraform.io/example/vpc/aws", "1.0.0", ""); got != 4 {
		t.Errorf("after a restart and one more init: %d module downloads, want 4", got)
	}
	if got := doc.downloads("registry.terraform.io/hashicorp/random", "3.6.2", plat); got != 4 {
		t.Errorf("after a restart and one more init: %d provider downloads, want 4", got)
	}
	// serve wrote only its state: the rest of the store is as copied.
	fi, err := os.Stat(store.UsageDir(root))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("STATE/usage: %v %v, want mode 0700", fi, err)
	}
}

// TestPruneUnusedForCLI: prune --unused-for on the real binary: refused
// while the counts do not reach back far enough; then proposes (--dry-run)
// and removes exactly the versions nobody downloaded, keeping the one that
// was, and records the policy in the history.
func TestPruneUnusedForCLI(t *testing.T) {
	work := t.TempDir()
	root := pruneFixture(t, work, 4) // example/many 1.0.0 … 1.3.0
	srv := harness.StartServe(t, root, "--usage-flush", "1s")
	base, proc := srv.Base, srv.Proc
	cl, _, _ := harness.CAClient(t, root)
	before := readIndexFile(t, root)

	// Counts of a few seconds cannot say what was unused for 90 days.
	out, stderr, code := harness.RunSplit(t, work, nil, "prune", "--store", root, "--unused-for", "90d", "--dry-run", "--json")
	if code != 1 || !strings.Contains(stderr, "--unused-for 90d needs counts for all of that time") || !strings.Contains(stderr, "hint:") {
		t.Errorf("--unused-for 90d on seconds of counts: exit %d\n%s", code, stderr)
	}
	harness.CheckJSONDoc(t, "prune --unused-for 90d --json", out, false)
	for _, bad := range []string{"soon", "0s", "-1d"} {
		if _, stderr, code := harness.RunSplit(t, work, nil, "prune", "--store", root, "--unused-for="+bad); code != 2 || !strings.Contains(stderr, "--unused-for") {
			t.Errorf("--unused-for %s: exit %d, want 2\n%s", bad, code, stderr)
		}
	}

	// Counting began, and the import was, more than the 4 s window ago
	// (times are kept to the second); then 1.3.0 is downloaded.
	time.Sleep(5100 * time.Millisecond)
	var newest string
	for _, p := range before.Catalog.Providers {
		if p.Version == "1.3.0" {
			newest = "blobs/sha256/" + p.Packages[0].Digest.Hex() + "/" + p.Packages[0].Filename
		}
	}
	if resp, _ := harness.HTTPGet(t, cl, base+newest); resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %s", resp.Status)
	}
	proc.Signal(syscall.SIGTERM) // serve writes its counts as it stops
	deadline := time.Now().Add(20 * time.Second)
	for inventoryUsage(t, root).downloads("registry.terraform.io/example/many", "1.3.0", "linux_amd64") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the download was not written when serve stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	out = harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--unused-for", "4s", "--dry-run")
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		if !strings.Contains(out, "would remove provider registry.terraform.io/example/many "+v+" (last imported ") {
			t.Errorf("--unused-for 4s --dry-run does not propose %s:\n%s", v, out)
		}
	}
	if strings.Contains(out, "1.3.0") || !strings.Contains(out, "not downloaded since counting began") {
		t.Errorf("--unused-for 4s --dry-run:\n%s", out)
	}
	if after := readIndexFile(t, root); len(after.Catalog.Providers) != len(before.Catalog.Providers) {
		t.Error("--dry-run changed the catalog")
	}
	jsonOut := harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--unused-for", "4s", "--dry-run", "--json")
	harness.CheckJSONDoc(t, "prune --unused-for 4s --dry-run --json", jsonOut, true)
	out = harness.MustRun(t, work, nil, harness.Bin, "prune", "--store", root, "--unused-for", "4s")
	if !strings.Contains(out, "removed 3 version(s)") {
		t.Errorf("prune --unused-for 4s:\n%s", out)
	}
	after := readIndexFile(t, root)
	if len(after.Catalog.Providers) != 1 || after.Catalog.Providers[0].Version != "1.3.0" {
		t.Errorf("left: %+v", after.Catalog.Providers)
	}
	if m := after.Maintenance[len(after.Maintenance)-1]; m.Policy != "--unused-for 4s" || len(m.Removed) != 3 {
		t.Errorf("history: %+v", m)
	}
	harness.CheckConsistent(t, root)
}

// TestHostileUsageFlood: against the real binary, 24,000 requests for
// packages, archives and versions the catalog does not have (random
// digests, made-up versions and platforms, OCI blobs), HEADs and short
// ranges of real packages add nothing to the download counts, nothing to
// the state directory, and no memory beyond the collector's noise; the
// few real downloads among them are counted exactly.
func TestHostileUsageFlood(t *testing.T) {
	storeDir, set := harness.ImportStandard(t)
	srv := harness.StartServe(t, storeDir, "--usage-flush", "1s", "--log-level", "warn")
	base, proc := srv.Base, srv.Proc
	base = strings.TrimSuffix(base, "/")
	cl, _, _ := harness.CAClient(t, storeDir)
	const workers = 8
	cl.Transport.(*http.Transport).MaxIdleConnsPerHost = workers
	var randomURL string
	for _, p := range set.Catalog.Providers {
		if p.Type == "random" {
			pk, _ := p.Package("linux", "amd64")
			randomURL = "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
		}
	}
	request := func(i int) (method, path string, hdr []string, want int) {
		switch i % 8 {
		case 0:
			return "GET", fmt.Sprintf("/blobs/sha256/%064x/terraform-provider-random_9.%d.0_linux_amd64.zip", i, i), nil, 404
		case 1:
			return "GET", fmt.Sprintf("/archives/sha256/%064x.tar.gz", i), nil, 404
		case 2:
			return "GET", fmt.Sprintf("/v1/providers/hashicorp/random/9.%d.0/download/linux/amd64", i), nil, 404
		case 3:
			return "GET", fmt.Sprintf("/v1/providers/hashicorp/random/3.6.0/download/plan9/x%d", i), nil, 404
		case 4:
			return "GET", fmt.Sprintf("/v2/registry.terraform.io/hashicorp/random/blobs/sha256:%064x", i), nil, 404
		case 5:
			return "GET", fmt.Sprintf("/mirror/registry.terraform.io/hashicorp/random/9.%d.0.json", i), nil, 404
		case 6:
			return "HEAD", randomURL, nil, 200
		}
		return "GET", randomURL, []string{"Range", "bytes=0-0"}, 206
	}
	flood := func(from, n int) {
		var wg sync.WaitGroup
		var next atomic.Int64
		next.Store(int64(from))
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= from+n || t.Failed() {
						return
					}
					method, p, hdr, want := request(i)
					req, _ := http.NewRequest(method, base+p, nil)
					for j := 0; j+1 < len(hdr); j += 2 {
						req.Header.Set(hdr[j], hdr[j+1])
					}
					resp, err := cl.Do(req)
					if err != nil {
						t.Errorf("%s %s: %v", method, p, err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != want {
						t.Errorf("%s %s %v: %d, want %d", method, p, hdr, resp.StatusCode, want)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	stateFiles := func() map[string]int64 {
		out := map[string]int64{}
		filepath.WalkDir(store.StateDir(storeDir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				fi, _ := d.Info()
				out[p] = fi.Size()
			}
			return nil
		})
		return out
	}
	flood(0, 4000) // warm-up: buffers, connections, the collector's target
	time.Sleep(1500 * time.Millisecond)
	before, filesBefore := harness.VMRSS(t, proc.Pid), stateFiles()
	usageBefore, _ := os.ReadFile(store.UsageFile(storeDir))
	peakSince := harness.SamplePeakRSS(t, proc.Pid, before)
	flood(4000, 20000)
	peak := peakSince()
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(2500 * time.Millisecond) // two flushes
	if after := stateFiles(); fmt.Sprint(after) != fmt.Sprint(filesBefore) {
		t.Errorf("the flood changed the state directory: %v, was %v", after, filesBefore)
	}
	if usageAfter, _ := os.ReadFile(store.UsageFile(storeDir)); string(usageAfter) != string(usageBefore) {
		t.Errorf("the flood changed the counts:\n%s", usageAfter)
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("serve RSS %s after the warm-up, peak %s over 20,000 requests for what the catalog lacks, HEADs and short ranges", mib(before), mib(peak))
	// A counter keyed by what clients send would hold 15,000 keys of
	// ~150 bytes and write them to the state; the garbage of 8 workers'
	// requests at GOGC=400 moved the peak by a few MiB.
	if grown := peak - before; grown > 16<<20 {
		t.Errorf("serve's RSS grew by %s under the flood (allowed 16 MiB)", mib(grown))
	}
	// Three real downloads are counted, and only they.
	for i := 0; i < 3; i++ {
		if resp, _ := harness.HTTPGet(t, cl, base+randomURL); resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
	}
	proc.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for {
		u, err := store.ReadUsage(storeDir)
		if err == nil && len(u.Counts) == 1 && u.Counts[store.UsageKey{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "3.6.0", Platform: "linux_amd64"}].Downloads == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the flood and 3 downloads: %v %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHostileUsageFile: a usage file serve did not write (here one over
// the 32 MiB bound) does not stop a download nor cost memory at every
// flush: serve refuses it before reading it, logs once with a hint, keeps
// the counts, and writes them once the file is moved aside; inventory
// refuses it with the same hint.
func TestHostileUsageFile(t *testing.T) {
	storeDir, set := harness.ImportStandard(t)
	os.MkdirAll(store.UsageDir(storeDir), 0o700)
	big := []byte(`{"format":1,"since":"2026-01-01T00:00:00Z","entries":[` + strings.Repeat(" ", 40<<20) + `]}`)
	if err := os.WriteFile(store.UsageFile(storeDir), big, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := harness.StartServe(t, storeDir, "--usage-flush", "1s")
	base, proc, logs := srv.Base, srv.Proc, srv.Logs
	cl, _, _ := harness.CAClient(t, storeDir)
	var url string
	for _, p := range set.Catalog.Providers {
		if p.Type == "random" {
			pk, _ := p.Package("linux", "amd64")
			url = strings.TrimSuffix(base, "/") + "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
		}
	}
	if resp, _ := harness.HTTPGet(t, cl, url); resp.StatusCode != 200 {
		t.Fatalf("download beside a hostile usage file: %s", resp.Status)
	}
	peakSince := harness.SamplePeakRSS(t, proc.Pid, harness.VMRSS(t, proc.Pid))
	time.Sleep(3 * time.Second) // three flushes
	peak := peakSince()
	if n := strings.Count(logs.String(), "writing the download counts; they are kept in memory"); n != 1 {
		t.Errorf("the error was logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "larger than 33554432 bytes") || !strings.Contains(logs.String(), "move it aside") {
		t.Errorf("the log does not say what is wrong and what to do:\n%s", logs.String())
	}
	if peak > 64<<20 {
		t.Errorf("serve reached %d MiB resident while the file was there: it reads what it refuses", peak>>20)
	}
	if _, stderr, code := harness.RunSplit(t, "", nil, "inventory", "--store", storeDir, "--usage"); code != 1 || !strings.Contains(stderr, "hint: move it aside") {
		t.Errorf("inventory --usage over the file: exit %d\n%s", code, stderr)
	}
	os.Rename(store.UsageFile(storeDir), store.UsageFile(storeDir)+".bad")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "writing the download counts again") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not write the counts once the file was moved aside:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := inventoryUsage(t, storeDir).downloads("registry.terraform.io/hashicorp/random", "3.6.0", "linux_amd64"); got != 1 {
		t.Errorf("%d downloads written after the recovery, want the 1 kept in memory", got)
	}
}
