package ui

import (
	"bytes"
	"container/list"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/verify"
)

// Documentation on the catalog (bundle format 3):
//
//	GET /ui/providers/HOST/NS/TYPE/VERSION/docs/                the version's pages by category
//	GET /ui/providers/HOST/NS/TYPE/VERSION/docs/CATEGORY/NAME   one page, rendered
//	GET /ui/providers/HOST/NS/TYPE/VERSION/docs/-/PATH          an image (or a page's source) of the docs
//	GET /ui/modules/HOST/NS/NAME/SYSTEM/VERSION                 a module's README, inputs and outputs
//	GET /ui/docs/search?q=NAME                                  pages named NAME across the providers served
//	GET /ui/docs/search.json?q=NAME                             the same, as JSON ('airgap docs --url --search')
//	GET /ui/docs/pages.json?provider=ADDR[&version=V][&page=N]  a version's pages, as JSON ('airgap docs --url')
//	GET /ui/docs/module.json?module=ADDR[&version=V]            a module version's documentation, as JSON ('airgap docs --url')
//
// Access rules apply as to everything: an address outside the request's
// scope is answered as missing. Pages are rendered by renderMarkdown
// (renderMarkdown: goldmark, bluemonday, bounded work per page) under the
// catalog's CSP with images allowed from the appliance itself
// (docsCSP). Bounds on what serve holds: docsRenders renders at once
// (a request waits for a slot while its client waits), the tables of
// contents of docs tars (docs.Index, one Entry a file) up to
// maxIndexEntries entries in all, their front matter (titles and
// subcategories, for listing) for maxMetaTrees trees, and rendered pages
// up to maxRenderedBytes; search reads the contents of at most
// maxSearchProviders providers' newest docs and lists maxSearchResults.
const (
	docsRenders        = 2
	maxIndexEntries    = 200_000
	maxMetaTrees       = 8
	maxRenderedBytes   = 32 << 20
	maxPageBytes       = 24 << 20 // the largest page served (cachedPage)
	maxSearchProviders = 500
	maxSearchResults   = 100
	maxFrontMatterRead = 4 << 10 // bytes of each page read for the listing's titles
)

//go:embed templates/base.html templates/docs/*.html
var docsFS embed.FS

var docsTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"human":     dist.HumanSize,
	"thousands": func(n int) string { return dist.Thousands(int64(n)) },
}).ParseFS(docsFS, "templates/base.html", "templates/docs/*.html"))

// docsCSP is the catalog's policy, with images from the appliance itself
// (a docs page's own images; remote ones never reach the page).
var docsCSP = strings.Replace(catalogCSP, "img-src 'none'", "img-src 'self'", 1)

// docsUI serves the documentation pages.
type docsUI struct {
	app     App
	slots   chan struct{}
	indexes *lru[verify.Digest, *docs.Index]
	metas   *lru[verify.Digest, map[string]docs.FrontMatter]
	full    *lru[string, []byte] // whole pages (cachedPage)
	ixSlots chan struct{}        // tables of contents read at once (index)
}

type renderedPage struct {
	HTML template.HTML
	Why  string // shown as source, and why
	FM   docs.FrontMatter
}

// newDocsUI makes the documentation pages' handlers (their routes are in
// the route table).
func newDocsUI(app App) *docsUI {
	return &docsUI{app: app, slots: make(chan struct{}, docsRenders), ixSlots: make(chan struct{}, docsRenders),
		indexes: newLRU[verify.Digest, *docs.Index](maxIndexEntries),
		metas:   newLRU[verify.Digest, map[string]docs.FrontMatter](maxMetaTrees),
		full:    newLRU[string, []byte](maxRenderedBytes)}
}

// providerVersion is the version the path names, if the request's scope
// allows its address.
func (d *docsUI) providerVersion(r *http.Request) *dist.ProviderVersion {
	sc := d.app.Scope(r)
	host := strings.ToLower(r.PathValue("host"))
	if _, ok := sc.IsOrigin(host); !ok {
		return nil
	}
	for _, pv := range sc.ProviderVersions(host, r.PathValue("ns"), r.PathValue("type")) {
		if pv.Version == r.PathValue("version") {
			return pv
		}
	}
	return nil
}

// base is the URL of a version's docs.
func docsBase(pv *dist.ProviderVersion) string {
	return "/ui/providers/" + pv.Addr() + "/" + pv.Version + "/docs/"
}

func (d *docsUI) provider(w http.ResponseWriter, r *http.Request) {
	pv := d.providerVersion(r)
	if pv == nil {
		d.notFound(w, r, "provider "+r.PathValue("host")+"/"+r.PathValue("ns")+"/"+r.PathValue("type")+" "+r.PathValue("version"))
		return
	}
	data := map[string]any{"Title": "Docs of " + shortSource(pv.Addr()) + " " + pv.Version, "P": pv, "Base": docsBase(pv), "Source": shortSource(pv.Addr())}
	if pv.Docs == nil || pv.Docs.Archive == "" {
		data["Missing"] = pv.Docs.Summary()
		d.render(w, r, http.StatusNotFound, "docs-missing.html", data)
		return
	}
	f, ix, ok := d.openIndex(w, r, pv)
	if !ok {
		return
	}
	defer f.Close()
	rest := r.PathValue("rest")
	switch {
	case rest == "":
		d.list(w, r, pv, f, ix, data)
	case strings.HasPrefix(rest, "-/"):
		d.file(w, r, f, ix, strings.TrimPrefix(rest, "-/"))
	default:
		cat, name, ok := strings.Cut(rest, "/")
		e, found := ix.Page(cat, name)
		if !ok || !found {
			d.notFound(w, r, "the page "+rest+" of provider "+pv.String())
			return
		}
		d.page(w, r, pv, f, ix, e, data)
	}
}

// listRow is one page in the list.
type listRow struct {
	Name, Title, Subcategory, URL string
}

type listCategory struct {
	docs.Category
	Rows []listRow
}

func (d *docsUI) list(w http.ResponseWriter, r *http.Request, pv *dist.ProviderVersion, f *os.File, ix *docs.Index, data map[string]any) {
	meta, err := d.meta(r.Context(), pv.Docs.Archive, f, ix)
	if err != nil {
		d.app.WriteError(w, r, err)
		return
	}
	// Up to 20,000 rows: built in a slot and cached as the pages are.
	d.cachedPage(w, r, "list\x00"+pv.Addr()+"\x00"+pv.Version+"\x00"+string(pv.Docs.Archive), func() ([]byte, bool, error) {
		var cats []listCategory
		for _, c := range docs.Categories {
			lc := listCategory{Category: c}
			for _, e := range ix.Pages(c.Name) {
				fm := meta[e.Path]
				lc.Rows = append(lc.Rows, listRow{Name: clipList(displayName(pv, c.Name, e.Name, fm)), Title: clipList(fm.Title), Subcategory: clipList(fm.Subcategory), URL: docsBase(pv) + c.Name + "/" + e.Name})
			}
			sort.SliceStable(lc.Rows, func(i, j int) bool {
				a, b := lc.Rows[i], lc.Rows[j]
				return a.Subcategory < b.Subcategory || a.Subcategory == b.Subcategory && a.Name < b.Name
			})
			if len(lc.Rows) > 0 {
				cats = append(cats, lc)
			}
		}
		data["Categories"] = cats
		data["Docs"] = pv.Docs
		b, err := d.execute("docs-list.html", data)
		return b, true, err
	})
}

// clipList cuts a title or subcategory to 100 bytes for the list (a page
// shows its own whole): 20,000 rows of hostile 200-byte titles of
// characters HTML escapes to five made a 44 MB list, too large to cache.
func clipList(s string) string {
	if len(s) <= 100 {
		return s
	}
	return strings.ToValidUTF8(s[:100], "") + "…"
}

// displayName is how the registry names a page in its list: resources and
// data sources by their full type name (aws_s3_bucket), guides by title.
func displayName(pv *dist.ProviderVersion, category, name string, fm docs.FrontMatter) string {
	switch category {
	case "resources", "data-sources", "ephemeral-resources", "list-resources", "actions":
		if !strings.HasPrefix(name, pv.Type+"_") && name != pv.Type {
			return pv.Type + "_" + name
		}
	case "guides", "overview":
		if fm.Title != "" {
			return fm.Title
		}
	}
	return name
}

func (d *docsUI) page(w http.ResponseWriter, r *http.Request, pv *dist.ProviderVersion, f *os.File, ix *docs.Index, e docs.Entry, data map[string]any) {
	key := "page\x00" + pv.Addr() + "\x00" + pv.Version + "\x00" + string(pv.Docs.Archive) + "\x00" + e.Path
	d.cachedPage(w, r, key, func() ([]byte, bool, error) {
		rp, keep := d.renderPage(f, ix, e, docsBase(pv))
		title := rp.FM.Title
		if title == "" {
			title = displayName(pv, e.Category, e.Name, rp.FM)
		}
		data["Title"] = title + " — " + shortSource(pv.Addr()) + " " + pv.Version
		data["Heading"] = title
		data["Page"] = rp
		data["Category"] = categoryTitle(e.Category)
		data["Raw"] = docsBase(pv) + "-/" + e.Path
		b, err := d.execute("docs-page.html", data)
		return b, keep, err
	})
}

// cachedPage answers with the page cached under key, or builds it (build:
// the page, whether to keep it) in a render slot and caches it. Every
// page with a body from a bundle (a provider's page, a module's README,
// inputs and outputs: up to 8 MiB of JSON, a 20 MiB page, ~160 MiB
// allocated to build) is built here: at most docsRenders at once, once
// however many clients ask for it together, and what each request then
// holds while its client reads is the one cached slice. (Before, each
// request parsed and executed its own: 128 connections from one address
// asking for a hostile module's page held a page each.) A page over
// maxPageBytes (8 MiB of a module's documentation made of characters JSON
// keeps and HTML escapes to five, ' or +, is a 40 MiB page) is replaced
// by a notice pointing to 'airgap docs', so every page is cached and held
// once.
func (d *docsUI) cachedPage(w http.ResponseWriter, r *http.Request, key string, build func() ([]byte, bool, error)) {
	b, ok := d.full.get(key)
	if !ok {
		if !d.acquire(r.Context()) {
			return
		}
		if b, ok = d.full.get(key); !ok { // another request built it while this one waited
			var keep bool
			var err error
			b, keep, err = build()
			if err == nil && len(b) > maxPageBytes {
				b, err = d.execute("docs-toolarge.html", map[string]any{"Title": "Page too large", "Size": dist.HumanSize(int64(len(b))), "Max": dist.HumanSize(maxPageBytes)})
			}
			if err == nil && keep {
				d.full.put(key, b, int64(len(b)+len(key)))
			}
			if err != nil {
				d.release()
				d.app.WriteError(w, r, err)
				return
			}
		}
		d.release()
	}
	writeHTML(w, r, http.StatusOK, docsCSP, b)
}

func categoryTitle(c string) string {
	for _, k := range docs.Categories {
		if k.Name == c {
			return k.Title
		}
	}
	return c
}

// renderPage reads and renders one page: its front matter gives the title
// and subcategory; links resolve within the docs (pageLinks). keep is
// false for a page that could not be read (not to be cached).
func (d *docsUI) renderPage(f *os.File, ix *docs.Index, e docs.Entry, base string) (rp renderedPage, keep bool) {
	src, err := docs.ReadFile(f, e, maxRenderSource)
	if errors.Is(err, docs.ErrPageTooLarge) {
		return renderedPage{Why: "the page is " + dist.HumanSize(e.Size) + ", over the " + dist.HumanSize(maxRenderSource) + " this appliance renders"}, true
	}
	if err != nil {
		return renderedPage{Why: "the page could not be read from the store"}, false
	}
	fm, body := docs.SplitFrontMatter(src)
	fm.Title, fm.Subcategory = clip(fm.Title), clip(fm.Subcategory)
	html, why := renderMarkdown(body, pageLinks(ix, e.Path, base))
	return renderedPage{HTML: html, Why: why, FM: fm}, true
}

// clip keeps a front matter value printable and short.
func clip(s string) string {
	s = dist.Printable(strings.TrimSpace(s))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// pageLinks resolves the links of the page at from (a path in the docs
// tar, served under base): relative links to pages and images of the same docs, the legacy
// website's /docs/providers/TYPE/r/NAME.html links, http(s) and mailto
// links as they are (the sanitizer marks them nofollow, noreferrer), and
// nothing else; images only from the docs themselves (a remote image is
// never loaded).
func pageLinks(ix *docs.Index, from, base string) linkFunc {
	return func(dest string, image bool) (string, bool) {
		dest = strings.TrimSpace(dest)
		if dest == "" {
			return "", false
		}
		if strings.HasPrefix(dest, "#") {
			return dest, !image
		}
		u, err := url.Parse(dest)
		if err != nil {
			return "", false
		}
		if u.Scheme != "" || u.Host != "" {
			s := strings.ToLower(u.Scheme)
			return dest, !image && (s == "https" || s == "http" || s == "mailto")
		}
		frag := ""
		if u.Fragment != "" {
			frag = "#" + url.PathEscape(u.Fragment)
		}
		if p, ok := strings.CutPrefix(u.Path, "/docs/providers/"); ok && !image {
			// the legacy website's absolute links: /docs/providers/TYPE/r/NAME.html
			if parts := strings.Split(p, "/"); len(parts) == 3 {
				if e, ok := ix.Page(docs.PageOf(parts[1] + "/" + strings.TrimSuffix(parts[2], ".html") + ".md")); ok {
					return base + e.Category + "/" + e.Name + frag, true
				}
			}
			return "", false
		}
		if strings.HasPrefix(u.Path, "/") {
			return "", false
		}
		target := path.Join(path.Dir(from), u.Path)
		if target == ".." || strings.HasPrefix(target, "../") {
			return "", false
		}
		up := base
		if e, ok := ix.File(target); ok {
			if image || !docs.IsPage(e.Path) {
				return up + "-/" + e.Path, docs.IsImage(e.Path)
			}
			return up + e.Category + "/" + e.Name + frag, true
		}
		if image {
			return "", false
		}
		for _, ext := range []string{".md", ".html.markdown", ".html.md", ".markdown"} {
			if e, ok := ix.File(strings.TrimSuffix(target, ".html") + ext); ok {
				return up + e.Category + "/" + e.Name + frag, true
			}
		}
		return "", false
	}
}

// file serves one file of the docs tar: an image as itself, a page's
// markdown as plain text; sandboxed and never sniffed, so an SVG's script
// or an HTML-looking page cannot run.
func (d *docsUI) file(w http.ResponseWriter, r *http.Request, f *os.File, ix *docs.Index, p string) {
	e, ok := ix.File(p)
	if !ok {
		d.notFound(w, r, "the file "+p)
		return
	}
	h := w.Header()
	ct := "text/plain; charset=utf-8"
	switch strings.ToLower(path.Ext(p)) {
	case ".png":
		ct = "image/png"
	case ".jpg", ".jpeg":
		ct = "image/jpeg"
	case ".gif":
		ct = "image/gif"
	case ".webp":
		ct = "image/webp"
	case ".svg":
		ct = "image/svg+xml"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(f, e.Offset, e.Size))
}

// openIndex opens pv's docs tar and reads its table of contents; on an
// error it answers the request and returns false. The caller closes f.
func (d *docsUI) openIndex(w http.ResponseWriter, r *http.Request, pv *dist.ProviderVersion) (*os.File, *docs.Index, bool) {
	f, err := d.app.Store().OpenBlob(pv.Docs.Archive)
	if err != nil {
		d.app.WriteError(w, r, err)
		return nil, nil, false
	}
	ix, err := d.index(r.Context(), pv.Docs.Archive, f)
	if err != nil {
		f.Close()
		d.app.WriteError(w, r, err)
		return nil, nil, false
	}
	return f, ix, true
}

// index is the table of contents of the docs tar d (open as f), cached.
//
// Reading one takes up to 325 ms and ~5 MiB (20,000 files): at most
// docsRenders are read at once (ixSlots, apart from the render slots,
// which a search holds while it reads them), and a request that waited
// takes what another read meanwhile.
func (d *docsUI) index(ctx context.Context, dg verify.Digest, f *os.File) (*docs.Index, error) {
	if ix, ok := d.indexes.get(dg); ok {
		return ix, nil
	}
	select {
	case d.ixSlots <- struct{}{}:
		defer func() { <-d.ixSlots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ix, ok := d.indexes.get(dg); ok {
		return ix, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ix, err := docs.ReadIndex(f, fi.Size(), dist.MaxDocsBytes)
	if err != nil {
		return nil, err
	}
	d.indexes.put(dg, ix, int64(len(ix.Entries))+1)
	return ix, nil
}

// meta reads the front matter of every page of a docs tar (the first
// maxFrontMatterRead bytes of each), for the list's titles and
// subcategories, in a render slot; cached for maxMetaTrees trees.
func (d *docsUI) meta(ctx context.Context, dg verify.Digest, f *os.File, ix *docs.Index) (map[string]docs.FrontMatter, error) {
	if m, ok := d.metas.get(dg); ok {
		return m, nil
	}
	if !d.acquire(ctx) {
		return nil, ctx.Err()
	}
	defer d.release()
	m := map[string]docs.FrontMatter{}
	buf := make([]byte, maxFrontMatterRead)
	for _, e := range ix.Entries {
		if e.Category == "" {
			continue
		}
		n, _ := f.ReadAt(buf[:min(int64(len(buf)), e.Size)], e.Offset)
		fm, _ := docs.SplitFrontMatter(buf[:n])
		if fm.Title != "" || fm.Subcategory != "" {
			m[e.Path] = docs.FrontMatter{Title: clip(fm.Title), Subcategory: clip(fm.Subcategory)}
		}
	}
	d.metas.put(dg, m, 1)
	return m, nil
}

func (d *docsUI) acquire(ctx context.Context) bool {
	select {
	case d.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (d *docsUI) release() { <-d.slots }

// module renders a module version's documentation.
func (d *docsUI) module(w http.ResponseWriter, r *http.Request) {
	sc := d.app.Scope(r)
	host := strings.ToLower(r.PathValue("host"))
	var mv *dist.ModuleVersion
	if _, ok := sc.IsOrigin(host); ok {
		for _, v := range sc.ModuleVersions(host, r.PathValue("ns"), r.PathValue("name"), r.PathValue("system")) {
			if v.Version == r.PathValue("version") {
				mv = v
			}
		}
	}
	if mv == nil {
		d.notFound(w, r, "module "+host+"/"+r.PathValue("ns")+"/"+r.PathValue("name")+"/"+r.PathValue("system")+" "+r.PathValue("version"))
		return
	}
	data := map[string]any{"Title": "Module " + shortSource(mv.Addr()) + " " + mv.Version, "M": mv, "Source": shortSource(mv.Addr())}
	if mv.Docs == "" {
		d.render(w, r, http.StatusNotFound, "docs-module.html", data)
		return
	}
	key := "module\x00" + mv.Addr() + "\x00" + mv.Version + "\x00" + string(mv.Docs)
	d.cachedPage(w, r, key, func() ([]byte, bool, error) {
		f, err := d.app.Store().OpenBlob(mv.Docs)
		if err != nil {
			return nil, false, err
		}
		md, err := docs.ParseModuleDocs(f)
		f.Close()
		if err != nil {
			return nil, false, err
		}
		html, why := renderMarkdown([]byte(md.Readme), readmeLinks)
		data["Docs"] = md
		// The registry modules it calls, read from its archive (the
		// documentation does not record them): once per page, in this
		// render slot, within docs.RegistryCalls' bounds.
		data["Calls"] = []docs.ModuleCall(nil)
		if a, err := d.app.Store().OpenBlob(mv.Archive); err == nil {
			calls, cut, err := docs.RegistryCalls(a, mv.Subdir)
			a.Close()
			data["Calls"], data["CallsCut"] = calls, cut
			if err != nil {
				data["CallsErr"] = err.Error()
			}
		}
		data["Readme"] = renderedPage{HTML: html, Why: why}
		b, err := d.execute("docs-module.html", data)
		return b, true, err
	})
}

// readmeLinks keeps a module README's links to anchors and http(s) pages;
// its relative links and images name files of the module this page does
// not serve, and remote images are never loaded.
func readmeLinks(dest string, image bool) (string, bool) {
	if image {
		return "", false
	}
	if strings.HasPrefix(dest, "#") {
		return dest, true
	}
	u, err := url.Parse(dest)
	if err != nil {
		return "", false
	}
	s := strings.ToLower(u.Scheme)
	return dest, s == "https" || s == "http" || s == "mailto"
}

// searchHit is one page search found.
type searchHit struct {
	Provider, Version, Category, Name, URL string
	Addr, Page, Raw                        string // for searchJSON
}

// search finds pages by name across the newest documented version of
// each provider the request's scope allows.
func (d *docsUI) search(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	if len(q) > maxQuery {
		q = q[:maxQuery]
	}
	data := map[string]any{"Title": "Find a resource", "Q": q}
	if len(q) < 2 {
		d.render(w, r, http.StatusOK, "docs-search.html", data)
		return
	}
	hits, more, ok := d.findPages(r, q)
	if !ok {
		return
	}
	data["Hits"], data["More"] = hits, more
	d.render(w, r, http.StatusOK, "docs-search.html", data)
}

// findPages is the search the page and searchJSON share: the pages whose
// name contains q (at least 2 bytes, lowercase) in the newest documented
// version of each provider the request's scope allows, shortest names
// first; more when the bounds cut it short; !ok when the request ended
// while it waited for a slot.
func (d *docsUI) findPages(r *http.Request, q string) (hits []searchHit, more bool, ok bool) {
	sc := d.app.Scope(r)
	// A search may read the tables of contents of 500 providers' docs
	// (325 ms for one of 20,000 files; the cache holds 200,000 entries,
	// so a store whose newest docs have more rereads them for every
	// search): it takes a render slot, as a page does.
	if !d.acquire(r.Context()) {
		return nil, false, false
	}
	defer d.release()
	considered := 0
	for _, origin := range sc.Origins() {
		keys := sc.ProviderKeys(origin)
		sort.Strings(keys)
		for _, k := range keys {
			ns, typ, _ := strings.Cut(k, "/")
			pv := newestDocumented(sc.ProviderVersions(origin, ns, typ))
			if pv == nil {
				continue
			}
			if considered++; considered > maxSearchProviders {
				more = true
				break
			}
			f, err := d.app.Store().OpenBlob(pv.Docs.Archive)
			if err != nil {
				continue
			}
			ix, err := d.index(r.Context(), pv.Docs.Archive, f)
			f.Close()
			if err != nil {
				continue
			}
			name := strings.TrimPrefix(q, pv.Type+"_")
			for _, e := range ix.Entries {
				if e.Category == "" || e.Category == "overview" || !strings.Contains(strings.ToLower(e.Name), name) {
					continue
				}
				if len(hits) >= maxSearchResults {
					more = true
					break
				}
				hits = append(hits, searchHit{Provider: shortSource(pv.Addr()), Version: pv.Version, Category: categoryTitle(e.Category),
					Name: displayName(pv, e.Category, e.Name, docs.FrontMatter{}), URL: docsBase(pv) + e.Category + "/" + e.Name,
					Addr: pv.Addr(), Page: e.Category + "/" + e.Name, Raw: docsBase(pv) + "-/" + e.Path})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return len(hits[i].Name) < len(hits[j].Name) }) // exact-ish matches first
	return hits, more, true
}

// maxJSONPages bounds the pages pagesJSON lists (a provider's docs have
// up to 20,000; AWS about 2,000).
const maxJSONPages = 20_000

// searchJSON is findPages for 'airgap docs --url --search': the same
// hits, as JSON, under the same access (the route table's row).
func (d *docsUI) searchJSON(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	if len(q) > maxQuery {
		q = q[:maxQuery]
	}
	if len(q) < 2 {
		writeDocsJSON(w, http.StatusBadRequest, map[string]any{"errors": []string{"give q, 2 characters or more"}})
		return
	}
	hits, more, ok := d.findPages(r, q)
	if !ok {
		return
	}
	type hit struct {
		Provider string `json:"provider"`
		Version  string `json:"version"`
		Page     string `json:"page"` // CATEGORY/NAME
		Name     string `json:"name"` // as the registry names it (aws_s3_bucket)
		URL      string `json:"url"`  // the rendered page
		Raw      string `json:"raw"`  // its markdown
	}
	out := []hit{}
	for _, h := range hits {
		out = append(out, hit{h.Addr, h.Version, h.Page, h.Name, h.URL, h.Raw})
	}
	writeDocsJSON(w, http.StatusOK, map[string]any{"query": q, "hits": out, "more": more})
}

// moduleJSON is a module version's documentation for 'airgap docs --url':
// ?module=HOST/NS/NAME/SYSTEM (any form Terraform takes), &version= (else
// the newest with documentation); the document as export made it
// (docs.ParseModuleDocs: at most dist.MaxModuleDocs bytes) and the
// registry modules it calls (docs.RegistryCalls). An address outside the
// request's scope is answered as missing.
func (d *docsUI) moduleJSON(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	notFound := func(what string) {
		writeDocsJSON(w, http.StatusNotFound, map[string]any{"errors": []string{what}})
	}
	m, _, ok, err := dist.ParseModuleSource(q.Get("module"))
	if err != nil || !ok {
		notFound("not a module address")
		return
	}
	sc := d.app.Scope(r)
	host := strings.ToLower(m.Host)
	var mv *dist.ModuleVersion
	if _, ok := sc.IsOrigin(host); ok {
		for _, c := range sc.ModuleVersions(host, m.Namespace, m.Name, m.System) {
			if v := q.Get("version"); v == c.Version || v == "" && c.Docs != "" && (mv == nil || dist.CompareVersions(mv.Version, c.Version) < 0) {
				mv = c
			}
		}
	}
	if mv == nil || mv.Docs == "" {
		what := m.String()
		if v := q.Get("version"); v != "" {
			what += " " + v
		}
		notFound("no documented module " + what + " that this request may read (outside its rules, or not served)")
		return
	}
	if !d.acquire(r.Context()) {
		return
	}
	defer d.release()
	f, err := d.app.Store().OpenBlob(mv.Docs)
	if err != nil {
		writeDocsJSON(w, http.StatusInternalServerError, map[string]any{"errors": []string{"the module's documentation cannot be read"}})
		return
	}
	md, err := docs.ParseModuleDocs(f)
	f.Close()
	if err != nil {
		writeDocsJSON(w, http.StatusInternalServerError, map[string]any{"errors": []string{"the module's documentation is damaged"}})
		return
	}
	type call struct {
		Module  string `json:"module"`
		Version string `json:"version"`
		File    string `json:"file"`
		Line    int    `json:"line"`
	}
	calls := []call{}
	if a, err := d.app.Store().OpenBlob(mv.Archive); err == nil {
		cs, _, _ := docs.RegistryCalls(a, mv.Subdir)
		a.Close()
		for _, c := range cs {
			calls = append(calls, call{c.Addr, c.Version, c.File, c.Line})
		}
	}
	writeDocsJSON(w, http.StatusOK, map[string]any{"module": mv.Addr(), "version": mv.Version, "docs": md, "calls": calls})
}

// pagesJSON lists one provider version's pages for 'airgap docs --url':
// ?provider=HOST/NS/TYPE (any form Terraform takes), &version= (else the
// newest documented), &page= (a name as 'airgap docs' takes it:
// resources/s3_bucket, s3_bucket or aws_s3_bucket; then that page only).
// An address outside the request's scope is answered as missing.
func (d *docsUI) pagesJSON(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	notFound := func(what string) {
		writeDocsJSON(w, http.StatusNotFound, map[string]any{"errors": []string{what}})
	}
	p, err := dist.ParseProviderSource(q.Get("provider"))
	if err != nil {
		notFound("not a provider address")
		return
	}
	sc := d.app.Scope(r)
	host := strings.ToLower(p.Host)
	var pv *dist.ProviderVersion
	if _, ok := sc.IsOrigin(host); ok {
		vs := sc.ProviderVersions(host, p.Namespace, p.Type)
		if v := q.Get("version"); v != "" {
			for _, c := range vs {
				if c.Version == v {
					pv = c
				}
			}
		} else {
			pv = newestDocumented(vs)
		}
	}
	if pv == nil || pv.Docs == nil || pv.Docs.Archive == "" {
		what := p.String()
		if v := q.Get("version"); v != "" {
			what += " " + v
		}
		notFound("no documented provider " + what + " that this request may read (outside its rules, or not served)")
		return
	}
	f, ix, ok := d.openIndex(w, r, pv)
	if !ok {
		return
	}
	defer f.Close()
	type page struct {
		Page string `json:"page"` // CATEGORY/NAME
		Raw  string `json:"raw"`  // its markdown
		Size int64  `json:"size"`
	}
	pages := []page{}
	if name := q.Get("page"); name != "" {
		e, ok := ix.Find(pv.Type, name)
		if !ok {
			notFound("provider " + pv.String() + " has no page " + strconv.Quote(name))
			return
		}
		pages = append(pages, page{e.Category + "/" + e.Name, docsBase(pv) + "-/" + e.Path, e.Size})
	} else {
		for _, c := range docs.Categories {
			for _, e := range ix.Pages(c.Name) {
				if len(pages) < maxJSONPages {
					pages = append(pages, page{e.Category + "/" + e.Name, docsBase(pv) + "-/" + e.Path, e.Size})
				}
			}
		}
	}
	writeDocsJSON(w, http.StatusOK, map[string]any{"provider": pv.Addr(), "version": pv.Version, "summary": pv.Docs.Summary(), "pages": pages})
}

func writeDocsJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// newestDocumented is the newest of vs (ascending) with docs.
func newestDocumented(vs []*dist.ProviderVersion) *dist.ProviderVersion {
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Docs != nil && vs[i].Docs.Archive != "" {
			return vs[i]
		}
	}
	return nil
}

func (d *docsUI) notFound(w http.ResponseWriter, r *http.Request, what string) {
	d.render(w, r, http.StatusNotFound, "notfound.html", map[string]any{"Title": "not found", "What": what})
}

// render writes a docs page with the catalog's headers and docsCSP.
func (d *docsUI) render(w http.ResponseWriter, r *http.Request, code int, name string, data map[string]any) {
	b, err := d.execute(name, data)
	if err != nil {
		d.app.WriteError(w, r, err)
		return
	}
	writeHTML(w, r, code, docsCSP, b)
}

// execute executes the docs template name.
func (d *docsUI) execute(name string, data map[string]any) ([]byte, error) {
	data["Script"] = template.JS(filterScript)
	var b bytes.Buffer
	if err := docsTmpl.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("docs page: %w", err)
	}
	return b.Bytes(), nil
}

// lru is a least-recently-used cache bounded by the sum of its entries'
// costs.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	cost  int64
	order *list.List
	items map[K]*list.Element
}

type lruItem[K comparable, V any] struct {
	k    K
	v    V
	cost int64
}

func newLRU[K comparable, V any](max int64) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruItem[K, V]).v, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V, cost int64) {
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.cost -= e.Value.(*lruItem[K, V]).cost
		c.order.Remove(e)
	}
	c.items[k] = c.order.PushFront(&lruItem[K, V]{k, v, cost})
	c.cost += cost
	for c.cost > c.max {
		e := c.order.Back()
		it := e.Value.(*lruItem[K, V])
		c.order.Remove(e)
		delete(c.items, it.k)
		c.cost -= it.cost
	}
}
