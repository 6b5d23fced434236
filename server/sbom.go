package server

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// SBOMPath is where the catalog page offers the SBOM of what the appliance
// serves (under /ui/, which no protocol uses).
const SBOMPath = "/ui/sbom.cdx.json"

// sbomCache holds the SBOM of one catalog snapshot. It is built on the
// first request after a reload (store.IndexSBOM: the catalog, and each
// package's build information document read from the store), once, while
// concurrent requests wait for it; it then costs its own size in memory
// until the next snapshot (about 1 KiB per package and 300 bytes per Go
// module compiled into a plugin).
type sbomCache struct {
	mu  sync.Mutex
	cur atomic.Pointer[sbomDoc]
}

type sbomDoc struct {
	cat  *dist.Catalog
	body []byte
	err  error
}

func (ui *catalogUI) sbom(w http.ResponseWriter, r *http.Request) {
	doc := ui.sboms.get(ui.s)
	if doc.err != nil {
		ui.s.writeError(w, r, doc.err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", sbom.MediaType)
	h.Set("Content-Disposition", `attachment; filename="airgap-sbom.cdx.json"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(doc.body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(doc.body)
}

func (c *sbomCache) get(s *Server) *sbomDoc {
	cat := s.store.Catalog()
	if d := c.cur.Load(); d != nil && d.cat == cat {
		return d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.cur.Load(); d != nil && d.cat == cat {
		return d
	}
	ix := &store.Index{Catalog: *cat}
	if ixr, ok := s.store.(interface{ Index() *store.Index }); ok {
		if full := ixr.Index(); full != nil && &full.Catalog == cat {
			ix = full
		}
	}
	body, err := store.IndexSBOM(ix, func(d verify.Digest, limit int64) ([]byte, error) {
		f, err := s.store.OpenBlob(d)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return store.ReadVerified(f, d, limit)
	}, s.tool)
	d := &sbomDoc{cat: cat, body: body, err: err}
	c.cur.Store(d)
	return d
}
