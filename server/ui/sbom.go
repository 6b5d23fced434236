package ui

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// SBOMPath is where the catalog page offers the SBOM of what the appliance
// serves (under /ui/, which no protocol uses).
const SBOMPath = "/ui/sbom.cdx.json"

// SBOMCache holds the SBOM of what one scope (the whole catalog, or what a
// principal of the access file may read) sees of one catalog snapshot. It
// is built on the first request (store.IndexSBOM: the catalog, and each
// package's build information document read from the store), once, while
// concurrent requests wait for it; it then costs its own size in memory
// for as long as the scope (one per snapshot and access rule set): about
// 1 KiB per package and 300 bytes per Go module compiled into a plugin.
type SBOMCache struct {
	mu  sync.Mutex
	doc *sbomDoc
}

type sbomDoc struct {
	body []byte
	err  error
}

func (ui *catalogUI) sbom(w http.ResponseWriter, r *http.Request) {
	sc := ui.scope(r)
	doc := sc.SBOM().get(ui.app, sc)
	if doc.err != nil {
		ui.app.WriteError(w, r, doc.err)
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

// get builds the scope's SBOM once.
func (c *SBOMCache) get(app App, sc Scope) *sbomDoc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doc != nil {
		return c.doc
	}
	cat := sc.Catalog()
	ix := &store.Index{Catalog: *cat}
	if ixr, ok := app.Store().(interface{ Index() *store.Index }); ok {
		if full := ixr.Index(); full != nil && &full.Catalog == cat {
			ix = &store.Index{Catalog: full.Catalog, Imports: full.Imports} // the newest import is the SBOM's time
			if sc.Restricted() {
				// The newest import the principal sees on the catalog page:
				// one that changed only what it may not read says nothing.
				ix.Imports = nil
				if rows, _, _ := historyRows(full.Imports, nil, sc.Allows); len(rows) > 0 {
					ix.Imports = []store.ImportEntry{rows[0].ImportEntry}
				}
			}
		}
	}
	if sc.Restricted() { // only what the principal may read
		ix.Catalog = dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}
		for _, p := range cat.Providers {
			if sc.Allows(p.Addr()) {
				ix.Catalog.Providers = append(ix.Catalog.Providers, p)
			}
		}
		for _, m := range cat.Modules {
			if sc.Allows(m.Addr()) {
				ix.Catalog.Modules = append(ix.Catalog.Modules, m)
			}
		}
	}
	body, err := store.IndexSBOM(ix, func(d verify.Digest, limit int64) ([]byte, error) {
		f, err := app.Store().OpenBlob(d)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return store.ReadVerified(f, d, limit)
	}, app.Tool())
	c.doc = &sbomDoc{body: body, err: err}
	return c.doc
}
