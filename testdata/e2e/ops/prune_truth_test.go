package ops

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestPruneCountsWhatItDeletes: after a withdrawal (whose blobs stay on disk,
// unreferenced), pruning another version deletes both versions' blobs, and
// says so: the text, the JSON and the recorded history count every blob
// that left blobs/ and its bytes, and say which were unreferenced already.
// The dry run announces the same.
func TestPruneCountsWhatItDeletes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.NewSet()
	for _, v := range []string{"3.6.0", "3.6.2", "3.7.0"} {
		set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, v), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: v,
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 32 << 10,
		}))
	}
	b1 := filepath.Join(work, "first.bundle")
	set.WriteBundleFile(t, b1, signer, bundle.CompressionZstd)
	b2 := filepath.Join(work, "withdraw.bundle")
	harness.WriteWithdrawBundle(t, b2, signer, dist.Withdrawal{Kind: dist.KindProvider, Addr: "registry.terraform.io/hashicorp/random", Versions: []string{"3.6.2"}, Reason: "bad build"})
	root := filepath.Join(work, "store")
	for _, b := range []string{b1, b2} {
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, b)
	}
	blobs := func() map[string]int64 {
		out := map[string]int64{}
		ents, _ := os.ReadDir(filepath.Join(root, "blobs", "sha256"))
		for _, e := range ents {
			fi, _ := e.Info()
			out[e.Name()] = fi.Size()
		}
		return out
	}
	stale := unreferenced(t, root)
	if stale == 0 {
		t.Fatal("the withdrawal left no unreferenced blob: the test tests nothing")
	}
	type pruneDoc struct {
		OK         bool     `json:"ok"`
		Removed    []string `json:"removed"`
		Blobs      int      `json:"blobs_freed"`
		Bytes      int64    `json:"bytes_freed"`
		Stale      int      `json:"blobs_already_unreferenced"`
		StaleBytes int64    `json:"bytes_already_unreferenced"`
	}
	decode := func(s string) pruneDoc {
		var d pruneDoc
		if err := json.Unmarshal([]byte(s), &d); err != nil || !d.OK {
			t.Fatalf("prune --json: %v\n%s", err, s)
		}
		return d
	}
	dry := decode(harness.MustRunStdout(t, work, "prune", "--store", root, "--json", "--dry-run", "hashicorp/random@3.6.0"))
	before := blobs()
	doc := decode(harness.MustRunStdout(t, work, "prune", "--store", root, "--json", "hashicorp/random@3.6.0"))
	after := blobs()
	var gone int
	var goneBytes int64
	for d, n := range before {
		if _, ok := after[d]; !ok {
			gone++
			goneBytes += n
		}
	}
	t.Logf("prune deleted %d blob(s), %d bytes (%d unreferenced before); it reported %+v", gone, goneBytes, stale, doc)
	if doc.Blobs != gone || doc.Bytes != goneBytes || doc.Stale != stale || doc.StaleBytes == 0 || len(doc.Removed) != 1 {
		t.Errorf("prune --json reports %+v; it deleted %d blob(s), %d bytes, of which %d were unreferenced before", doc, gone, goneBytes, stale)
	}
	if dry.Blobs != doc.Blobs || dry.Bytes != doc.Bytes || dry.Stale != doc.Stale {
		t.Errorf("the dry run announced %+v, the prune did %+v", dry, doc)
	}
	ix := readIndexFile(t, root)
	last := ix.Maintenance[len(ix.Maintenance)-1]
	if last.Action != "prune" || last.BlobsRemoved != gone || last.BytesRemoved != goneBytes {
		t.Errorf("the history records %+v; the prune deleted %d blob(s), %d bytes", last, gone, goneBytes)
	}

	// The text says the same (on a second store made the same way).
	root2 := filepath.Join(work, "store2")
	for _, b := range []string{b1, b2} {
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root2, b)
	}
	out := harness.MustRunStdout(t, work, "prune", "--store", root2, "hashicorp/random@3.6.0")
	if want := "removed 1 version(s); " + fmt.Sprint(doc.Blobs) + " blob(s), " + dist.HumanSize(doc.Bytes) + " freed (" + fmt.Sprint(doc.Stale) + " of them"; !strings.Contains(out, want) {
		t.Errorf("prune says:\n%s\nwant %q", out, want)
	}
}
