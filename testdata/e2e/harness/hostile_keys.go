package harness

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
)

// writeAt writes m's catalog as a bundle signed by the site key at `at`
// (zero: now), with the publisher-key declarations decls.
func (w *hostileWorld) WriteAt(t *testing.T, name string, cat dist.Catalog, decls []bundle.PublisherKeyDecl, at time.Time) string {
	t.Helper()
	m := &bundle.Manifest{Format: bundle.FormatVersion, Tool: "hostile test", Catalog: cat, PublisherKeys: decls}
	for d, role := range cat.Blobs() {
		fi, err := os.Stat(w.Files[d])
		if err != nil {
			t.Fatalf("blob %s: %v", d.Short(), err)
		}
		m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: fi.Size(), Role: role})
	}
	sort.Slice(m.Blobs, func(i, j int) bool { return m.Blobs[i].Digest < m.Blobs[j].Digest })
	path := filepath.Join(w.Work, name+".bundle")
	bundletest.WriteSignedManifestAt(t, path, m, w.Files, w.Site, at)
	return path
}
