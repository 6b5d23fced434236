package journey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// releaseUsage is 'airgap inventory --usage --json', the releases' lines.
func releaseUsage(t *testing.T, root, product, ver, plat string) int64 {
	t.Helper()
	out, stderr, code := harness.RunSplit(t, "", nil, "inventory", "--store", root, "--usage", "--json")
	if code != 0 {
		t.Fatalf("inventory --usage --json: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Versions []struct {
			Kind, Address, Version string
			Downloads              int64
			Platforms              []struct {
				Platform  string
				Downloads int64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inventory --usage --json: %v\n%s", err, out)
	}
	for _, v := range doc.Versions {
		if v.Kind != "release" || v.Address != product || v.Version != ver {
			continue
		}
		if plat == "" {
			return v.Downloads
		}
		for _, p := range v.Platforms {
			if p.Platform == plat {
				return p.Downloads
			}
		}
	}
	return -1
}

// TestReleasesDownloadsCounted: a release archive sent whole counts, per
// product, version and platform, as a provider package does (not a HEAD,
// not a range short of the end, not SHA256SUMS); the counts show in
// inventory --usage and on /ui/releases, and the download is in the audit
// log. The usage file stays one that an older airgap reads: format 1,
// only the kinds and fields it knows.
func TestReleasesDownloadsCounted(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	j.exportVerifyImport(t)
	audit := filepath.Join(j.work, "audit.jsonl")
	mport := harness.FreePort(t)
	s := harness.StartServe(t, j.store, "--usage-flush", "1s", "--audit-log", audit, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport))
	cl := harness.CAFileClient(t, s.CAFile)
	get := func(method, path, rng string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, s.Base+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
	}
	tf := "releases/terraform/1.14.3/terraform_1.14.3_linux_amd64.zip"
	get(http.MethodHead, tf, "", 200)
	get(http.MethodGet, tf, "bytes=0-9", 206)
	get(http.MethodGet, "releases/terraform/1.14.3/terraform_1.14.3_SHA256SUMS", "", 200)
	get(http.MethodGet, tf, "", 200)
	get(http.MethodGet, "releases/releases/terraform/1.14.3/terraform_1.14.3_linux_amd64.zip", "", 200) // hc-install's spelling
	get(http.MethodGet, "releases/tofu/v1.11.2/tofu_1.11.2_linux_amd64.zip", "", 200)
	get(http.MethodGet, "releases/tofu/v1.11.2/tofu_1.11.2_linux_amd64.tar.gz", "", 200)

	// The download metric counts whole 200s, as for provider packages.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	for series, want := range map[string]float64{
		`airgap_downloads_total{address="terraform",kind="release",version="1.14.3"}`: 2,
		`airgap_downloads_total{address="tofu",kind="release",version="1.11.2"}`:      2,
	} {
		if v := harness.MetricValue(metrics.String(), series); v != want {
			t.Errorf("%s = %v, want %v", series, v, want)
		}
	}

	// The page shows what is counted at once (pending counts included).
	_, page := harness.HTTPGet(t, cl, s.Base+"ui/releases")
	for _, w := range []string{`data-release="terraform-1.14.3">2 downloads, last `, `data-release="tofu-1.11.2">2 downloads, last `, `data-release="terraform-1.14.2">never downloaded`} {
		if !strings.Contains(string(page), w) {
			t.Errorf("/ui/releases does not show %s:\n%s", w, page)
		}
	}

	deadline := time.Now().Add(15 * time.Second)
	for releaseUsage(t, j.store, "terraform", "1.14.3", "linux_amd64") != 2 || releaseUsage(t, j.store, "tofu", "1.11.2", "linux_amd64") != 2 {
		if time.Now().After(deadline) {
			out := harness.MustRun(t, "", nil, harness.Bin, "inventory", "--store", j.store, "--usage")
			t.Fatalf("inventory --usage does not show terraform 1.14.3 linux_amd64 and tofu 1.11.2 linux_amd64 downloaded twice each:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := releaseUsage(t, j.store, "terraform", "1.14.3", "darwin_arm64"); n != 0 {
		t.Errorf("terraform 1.14.3 darwin_arm64: %d downloads, want 0", n)
	}
	if out := harness.MustRun(t, "", nil, harness.Bin, "inventory", "--store", j.store, "--usage"); !strings.Contains(out, "release") || !strings.Contains(out, "terraform") {
		t.Errorf("inventory --usage does not list the releases:\n%s", out)
	}

	// An older airgap's reader: format 1, no unknown field, provider and
	// module entries only.
	raw, err := os.ReadFile(store.UsageFile(j.store))
	if err != nil {
		t.Fatal(err)
	}
	var old struct {
		Format  int    `json:"format"`
		Since   string `json:"since"`
		Entries []struct {
			Kind      string `json:"kind"`
			Address   string `json:"address"`
			Version   string `json:"version"`
			Platform  string `json:"platform,omitempty"`
			Downloads int64  `json:"downloads"`
			Last      string `json:"last_fetched_at"`
		} `json:"entries"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&old); err != nil || old.Format != 1 {
		t.Fatalf("usage.json is not what an older airgap reads (format %d): %v\n%s", old.Format, err, raw)
	}
	found := false
	for _, e := range old.Entries {
		if e.Kind != "provider" && e.Kind != "module" {
			t.Errorf("usage.json has an entry of kind %q, which an older airgap refuses:\n%s", e.Kind, raw)
		}
		if e.Address == "cli.airgap.invalid/terraform" && e.Version == "1.14.3" && e.Platform == "linux_amd64" && e.Downloads == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("usage.json has no entry for terraform 1.14.3 linux_amd64:\n%s", raw)
	}

	// The audit log names each whole download; SHA256SUMS is not one.
	var recs []map[string]any
	deadline = time.Now().Add(10 * time.Second)
	for {
		recs = recs[:0]
		b, _ := os.ReadFile(audit)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["kind"] == "release" {
				recs = append(recs, m)
			}
		}
		if len(recs) >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	whole := 0
	for _, m := range recs {
		if m["address"] == "terraform" && m["version"] == "1.14.3" && m["platform"] == "linux_amd64" && m["via"] == "releases" && m["status"] == float64(200) {
			whole++
		}
	}
	if whole != 2 {
		b, _ := os.ReadFile(audit)
		t.Errorf("the audit log has %d whole downloads of terraform 1.14.3 linux_amd64 via releases, want 2:\n%s", whole, b)
	}
	if out := harness.MustRun(t, j.work, nil, harness.Bin, "audit", "--log", audit); !strings.Contains(out, "terraform") || !strings.Contains(out, "tofu") {
		t.Errorf("airgap audit does not sum up the release downloads:\n%s", out)
	}
}
