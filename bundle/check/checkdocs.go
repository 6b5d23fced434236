package check

import (
	"os"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/verify"
)

// collectDocs notes what the catalog says of each documentation blob. A
// provider docs tar that several versions share must be described alike
// by each (its pages, files and bytes are a function of its bytes).
func (c *Checker) collectDocs() error {
	c.wantDocs = map[verify.Digest]*dist.ProviderDocs{}
	for i := range c.m.Catalog.Providers {
		p := &c.m.Catalog.Providers[i]
		if p.Docs == nil || p.Docs.Archive == "" {
			continue
		}
		if prev := c.wantDocs[p.Docs.Archive]; prev != nil && (prev.Pages != p.Docs.Pages || prev.Files != p.Docs.Files || prev.Bytes != p.Docs.Bytes) {
			return inconsistent("provider "+p.String(), "its docs %s are described with %d pages, %d files and %d bytes, and elsewhere with %d, %d and %d",
				p.Docs.Archive.Short(), p.Docs.Pages, p.Docs.Files, p.Docs.Bytes, prev.Pages, prev.Files, prev.Bytes)
		}
		c.wantDocs[p.Docs.Archive] = p.Docs
	}
	for _, mv := range c.m.Catalog.Modules {
		if mv.Docs != "" {
			c.wantDocs[mv.Docs] = nil
		}
	}
	return nil
}

// checkDocs reads the documentation blob at path (digest d) whole and
// holds it to its form: a provider's docs tar to docs.Check (entries,
// names, headers, at most dist.MaxDocsBytes), and its page, file and byte
// counts to the catalog's; a module's documentation to
// docs.ParseModuleDocs (at most dist.MaxModuleDocs bytes). Memory: the
// tar's names (docs.Check), or one module document.
func (c *Checker) checkDocs(d verify.Digest, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	want, isProvider := c.wantDocs[d]
	if !isProvider || want == nil {
		if _, err := docs.ParseModuleDocs(f); err != nil {
			return inconsistent(c.m.Describe(d), "%v", err)
		}
		return nil
	}
	st, err := docs.Check(f, dist.MaxDocsBytes)
	if err != nil {
		return inconsistent(c.m.Describe(d), "%v", err)
	}
	if st.Pages != want.Pages || st.Files != want.Files || st.Bytes != want.Bytes {
		return inconsistent(c.m.Describe(d), "the catalog says %d pages, %d files and %d bytes; the archive holds %d, %d and %d",
			want.Pages, want.Files, want.Bytes, st.Pages, st.Files, st.Bytes)
	}
	return nil
}
