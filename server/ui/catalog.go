package ui

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"embed"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/verify"
)

// The HTML catalog: GET / lists what the appliance serves and how to point
// a client at it; /ui/providers/HOST/NS/TYPE and /ui/modules/HOST/NS/NAME/SYSTEM
// show one address's versions with hashes and a ready configuration snippet.
//
// Everything shown comes from bundles (untrusted even when signed) or the
// request's Host: html/template escapes it all, the Host is used only when it
// is a valid host name, and the Content-Security-Policy allows no external
// resource and only the page's own inline script (by hash). No fonts,
// scripts or styles are fetched from anywhere (the network is offline).
//
// The page model (catalogModel) is built once per catalog snapshot, in one
// pass, holding pointers into the snapshot: at 50,000 packages a page is a
// filter over the address list plus one page of rows (pageSize addresses,
// each with at most maxVersionsShown versions), so the work per request and
// the size of an answer are bounded whatever the catalog holds; the query
// (q) is cut to 100 bytes and page numbers to the pages there are.

//go:embed templates/*.html
var templateFS embed.FS

var catalogTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"join": strings.Join,
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"day": func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.UTC().Format("2006-01-02")
	},
	"words": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"fpr":   verify.GroupFingerprint,
}).ParseFS(templateFS, "templates/*.html"))

// filterScript is the page's only script: it hides the rows of the current
// page that do not match the filter box as one types (the form submits ?q=
// for the whole catalog). Its hash goes into the CSP.
const filterScript = `document.getElementById("q").addEventListener("input", function (e) {
  var q = e.target.value.toLowerCase();
  document.querySelectorAll("tr[data-addr]").forEach(function (tr) {
    tr.hidden = q !== "" && tr.dataset.addr.indexOf(q) < 0;
  });
});`

var catalogCSP = func() string {
	h := sha256.Sum256([]byte(filterScript))
	return "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; script-src 'sha256-" +
		base64.StdEncoding.EncodeToString(h[:]) + "'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}()

const (
	pageSize         = 100 // addresses per page
	versionPageSize  = 50  // versions per page on an address's page
	maxVersionsShown = 8   // versions listed per address on the catalog page
	maxQuery         = 100 // bytes of ?q= used
	maxHistoryShown  = 200 // newest imports and withdrawals listed
)

// catalogUI renders the pages from a model of the current snapshot.
type catalogUI struct {
	app   App
	mu    sync.Mutex
	model atomic.Pointer[catalogModel]
	caFP  string
}

// newCatalogUI makes the HTML pages' handlers (their routes are in the
// route table).
func newCatalogUI(app App) *catalogUI {
	return &catalogUI{app: app, caFP: caFingerprintPEM(app.CAPEM())}
}

func caFingerprintPEM(p []byte) string {
	b, _ := pem.Decode(p)
	if b == nil {
		return ""
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return ""
	}
	return certs.CAFingerprint(c)
}

// catalogModel is everything the pages need from one snapshot.
type catalogModel struct {
	cat    *dist.Catalog
	provBy map[string]*providerGroup // lower(addr)
	modBy  map[string]*moduleGroup
	all    *modelView // the whole catalog
	// scoped holds, per rule set of an access file (acl.Rules.Key), what
	// those rules may see: built on first use, O(addresses × patterns),
	// bounded by the distinct rule sets of the access file.
	scoped sync.Map
	// the index's history, whole (modelView filters it)
	imports   []store.ImportEntry
	withdrawn []store.Withdrawn
	pubKeys   []dist.NamespaceKeys // publisher keys per namespace
	signers   store.SignerTable    // who signed each version's SHA256SUMS
}

// modelView is what one scope sees of a model: the pages list only that.
type modelView struct {
	providers []*providerGroup
	modules   []*moduleGroup
	origins   []string
	imports   []importRow
	withdrawn []store.Withdrawn
	nWithdraw int
	keys      []keyRow // publisher keys, namespace by namespace
	nKeys     int      // namespaces with keys
	packages  int
	provVers  int
	modVers   int
}

// keyRow is one accepted publisher key of a namespace, for the page.
type keyRow struct {
	Namespace string // "" for a namespace's second and later keys
	Keys      int    // how many the namespace has (on its first row)
	dist.KeyPin
}

type providerGroup struct {
	Addr, Source, Type string
	key                string                  // lower(Addr), for the filter
	Versions           []*dist.ProviderVersion // newest first
	packages           int
}

type moduleGroup struct {
	Addr, Source, Name string
	key                string
	Versions           []*dist.ModuleVersion // newest first
}

type importRow struct {
	store.ImportEntry
	Added, Withdrew int
	Trust           []store.TrustChange // the trust changes of versions the scope sees
}

// signerLabel says who signed a provider version's SHA256SUMS, as the
// registry's key list and the bundle tell it; "mirror hashes only" when no
// publisher did and only a network mirror's hashes vouch for it (the
// provider page names the mirror).
func signerLabel(p *dist.ProviderVersion) string {
	switch {
	case p.MirrorHashesOnly:
		return dist.TrustLabel(dist.TrustMirror)
	case p.SiteSigned:
		return "site re-signed"
	}
	for _, k := range p.SigningKeys {
		for _, id := range hashicorpKeyIDs {
			if strings.EqualFold(k.KeyID, id) {
				return "HashiCorp"
			}
		}
	}
	for _, k := range p.SigningKeys {
		if k.TrustSignature != "" {
			return "partner"
		}
	}
	return "self-signed"
}

// hashicorpKeyIDs are the IDs of HashiCorp's provider signing keys (the
// current one and the one it replaced in 2021), as the public registry lists
// them for hashicorp/* providers.
var hashicorpKeyIDs = []string{"34365D9472D7468F", "51852D87348FFC4C"}

// shortSource drops the default registry host, as configurations write it.
func shortSource(addr string) string { return strings.TrimPrefix(addr, dist.DefaultRegistry+"/") }

// current returns the model of the store's current snapshot, building it
// once per snapshot.
func (ui *catalogUI) current() *catalogModel {
	cat := ui.app.Store().Catalog()
	if m := ui.model.Load(); m != nil && m.cat == cat {
		return m
	}
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if m := ui.model.Load(); m != nil && m.cat == cat {
		return m
	}
	m := buildCatalogModel(cat, ui.app.Store(), ui.app.Origins())
	ui.model.Store(m)
	return m
}

// viewFor returns what sc sees of the model.
func (m *catalogModel) viewFor(sc Scope) *modelView {
	if !sc.Restricted() {
		return m.all
	}
	if v, ok := m.scoped.Load(sc.RulesKey()); ok {
		return v.(*modelView)
	}
	v, _ := m.scoped.LoadOrStore(sc.RulesKey(), m.filter(sc))
	return v.(*modelView)
}

// filter builds the modelView of a scope.
func (m *catalogModel) filter(sc Scope) *modelView {
	all := m.all
	v := &modelView{origins: sc.Origins()}
	for _, g := range all.providers {
		if sc.Allows(g.Addr) {
			v.providers = append(v.providers, g)
			v.provVers += len(g.Versions)
			v.packages += g.packages
		}
	}
	for _, g := range all.modules {
		if sc.Allows(g.Addr) {
			v.modules = append(v.modules, g)
			v.modVers += len(g.Versions)
			v.packages += len(g.Versions)
		}
	}
	v.imports, v.withdrawn, v.nWithdraw = historyRows(m.imports, m.withdrawn, sc.Allows)
	seen := namespacesOf(v.providers)
	v.keys, v.nKeys = keyRows(visibleNamespaces(m.pubKeys, seen))
	scopeApprovals(v.imports, seen)
	return v
}

// namespacesOf is the set of namespaces (HOST/NAMESPACE, lowercase) of
// provs: those a scope sees a provider of.
func namespacesOf(provs []*providerGroup) map[string]bool {
	seen := map[string]bool{}
	for _, g := range provs {
		if i := strings.LastIndexByte(g.Addr, '/'); i > 0 {
			seen[strings.ToLower(g.Addr[:i])] = true
		}
	}
	return seen
}

// scopeApprovals keeps, in each import row's approvals, only the publisher
// keys accepted for a namespace in seen: the "Bundles imported" table
// names no namespace the scope may not read. The rows' approvals are
// copied, not changed in place (the model's rows are shared by scopes).
func scopeApprovals(rows []importRow, seen map[string]bool) {
	for i := range rows {
		aps := make([]store.ApprovalRecord, len(rows[i].Approvals))
		for j, a := range rows[i].Approvals {
			keep := a.PublisherKeys[:0:0] // a new array, not the shared one
			for _, k := range a.PublisherKeys {
				if seen[strings.ToLower(k.Namespace)] {
					keep = append(keep, k)
				}
			}
			a.PublisherKeys = keep
			aps[j] = a
		}
		rows[i].Approvals = aps
	}
}

// visibleNamespaces keeps the key history of the namespaces in seen (those
// a scope sees a provider of): a token sees no namespace it may not read.
func visibleNamespaces(ns []dist.NamespaceKeys, seen map[string]bool) []dist.NamespaceKeys {
	var out []dist.NamespaceKeys
	for _, n := range ns {
		if seen[strings.ToLower(n.Namespace)] {
			out = append(out, n)
		}
	}
	return out
}

// historyRows lists the newest imports (counting only what allowed lets
// through, and leaving out an import whose additions, withdrawals and
// reinstatements it lets through none of) and withdrawals of allowed
// addresses, newest first, each list cut to maxHistoryShown.
func historyRows(imps []store.ImportEntry, wd []store.Withdrawn, allowed func(string) bool) ([]importRow, []store.Withdrawn, int) {
	count := func(entries []string) int {
		n := 0
		for _, e := range entries {
			if _, addr, _, ok := store.HistoryLine(e); ok && allowed(addr) {
				n++
			}
		}
		return n
	}
	var rows []importRow
	for i := len(imps) - 1; i >= 0 && len(rows) < maxHistoryShown; i-- {
		e := imps[i]
		row := importRow{ImportEntry: e, Added: count(e.Added), Withdrew: count(e.Withdrew)}
		for _, c := range e.TrustChanges {
			if addr, _, _ := strings.Cut(c.Provider, " "); allowed(addr) {
				row.Trust = append(row.Trust, c)
			}
		}
		if row.Added+row.Withdrew+count(e.Reinstated) == 0 && len(e.Added)+len(e.Withdrew)+len(e.Reinstated) > 0 {
			continue // nothing of it is visible here
		}
		rows = append(rows, row)
	}
	var out []store.Withdrawn
	n := 0
	for _, w := range wd {
		if allowed(w.Addr) {
			n++
			if len(out) < maxHistoryShown {
				out = append(out, w)
			}
		}
	}
	return rows, out, n
}

func buildCatalogModel(cat *dist.Catalog, st Store, origins []string) *catalogModel {
	m := &catalogModel{cat: cat, provBy: map[string]*providerGroup{}, modBy: map[string]*moduleGroup{}, all: &modelView{origins: origins}}
	all := m.all
	// The catalog is sorted by address, then version ascending.
	for i := range cat.Providers {
		p := &cat.Providers[i]
		k := strings.ToLower(p.Addr())
		g := m.provBy[k]
		if g == nil {
			g = &providerGroup{Addr: p.Addr(), Source: shortSource(p.Addr()), Type: p.Type, key: k}
			m.provBy[k] = g
			all.providers = append(all.providers, g)
		}
		g.Versions = append(g.Versions, p)
		g.packages += len(p.Packages)
		all.packages += len(p.Packages)
	}
	for i := range cat.Modules {
		mv := &cat.Modules[i]
		k := strings.ToLower(mv.Addr())
		g := m.modBy[k]
		if g == nil {
			g = &moduleGroup{Addr: mv.Addr(), Source: shortSource(mv.Addr()), Name: mv.Name, key: k}
			m.modBy[k] = g
			all.modules = append(all.modules, g)
		}
		g.Versions = append(g.Versions, mv)
		all.packages++
	}
	all.provVers, all.modVers = len(cat.Providers), len(cat.Modules)
	// Within an address the catalog is in ascending version order (the
	// index is written sorted, dist.Catalog.Sort): newest first is the
	// reverse, without parsing 50,000 versions again.
	for _, g := range all.providers {
		slices.Reverse(g.Versions)
	}
	for _, g := range all.modules {
		slices.Reverse(g.Versions)
	}
	// Imports and withdrawals come from the index, when the store has one
	// and it is the snapshot the catalog came from.
	if ixr, ok := st.(interface{ Index() *store.Index }); ok {
		if ix := ixr.Index(); ix != nil && &ix.Catalog == cat {
			m.imports, m.withdrawn = ix.Imports, ix.Withdrawn
			all.imports, all.withdrawn, all.nWithdraw = historyRows(ix.Imports, ix.Withdrawn, func(string) bool { return true })
			m.pubKeys, m.signers = ix.PublisherKeys, store.SignersByVersion(ix.Signers)
			all.keys, all.nKeys = keyRows(ix.PublisherKeys)
		}
	}
	return m
}

// keyRows lists the first maxHistoryShown namespaces' publisher keys (the
// index keeps them sorted), each namespace's keys oldest first.
func keyRows(ns []dist.NamespaceKeys) ([]keyRow, int) {
	var rows []keyRow
	for i, n := range ns {
		if i >= maxHistoryShown {
			break
		}
		for j, k := range n.Keys {
			r := keyRow{KeyPin: k}
			if j == 0 {
				r.Namespace, r.Keys = n.Namespace, len(n.Keys)
			}
			rows = append(rows, r)
		}
	}
	return rows, len(ns)
}

// baseURL is the appliance's URL as the request names it, or a placeholder
// when the Host header is not a valid host name.
func baseURL(r *http.Request) string {
	h := strings.ToLower(r.Host)
	if !dist.ValidHost(h) {
		return "https://APPLIANCE-HOST/"
	}
	return "https://" + h + "/"
}

type clientConfigText struct {
	Tool, Mode, Text string
}

// clientConfigs is what 'airgap client-config' prints for each tool and
// mode, for this base URL.
func clientConfigs(app App, base string, origins []string, login bool) []clientConfigText {
	var out []clientConfigText
	if len(origins) == 0 {
		return nil
	}
	for _, c := range []struct{ tool, mode string }{
		{"terraform", "registry"}, {"terraform", "mirror"}, {"tofu", "registry"}, {"tofu", "mirror"}, {"tofu", "oci"},
	} {
		var b strings.Builder
		if err := app.WriteClientConfig(&b, base, origins, c.tool, c.mode, login); err != nil {
			continue
		}
		out = append(out, clientConfigText{c.tool, c.mode, b.String()})
	}
	return out
}

// pager is the page links of a list.
type pager struct {
	Page, Pages, Total int
	Prev, Next         string // URLs, "" when none
}

func paginate(r *http.Request, total, size int, extra url.Values) (lo, hi int, p pager) {
	p.Total = total
	p.Pages = (total + size - 1) / size
	if p.Pages == 0 {
		p.Pages = 1
	}
	p.Page, _ = strconv.Atoi(r.URL.Query().Get("page"))
	p.Page = max(1, min(p.Page, p.Pages))
	link := func(n int) string {
		v := url.Values{}
		for k, vs := range extra {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(n))
		return "?" + v.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	lo = (p.Page - 1) * size
	return lo, min(lo+size, total), p
}

type providerRow struct {
	*providerGroup
	Shown    []*dist.ProviderVersion
	More     int
	Newest   *dist.ProviderVersion
	Signer   string
	Platform []string
	Gates    []gateBadge
}

type moduleRow struct {
	*moduleGroup
	Shown []*dist.ModuleVersion
	More  int
	Gates []gateBadge
}

// gateBadge is one gate's outcome on a version: "waived" if any of its
// packages was waived, else "passed".
type gateBadge struct{ Gate, Status string }

func gateBadges(rss ...[]dist.GateResult) []gateBadge {
	var out []gateBadge
	at := map[string]int{}
	for _, rs := range rss {
		for _, r := range rs {
			i, ok := at[r.Gate]
			if !ok {
				at[r.Gate] = len(out)
				out = append(out, gateBadge{r.Gate, r.Status})
				continue
			}
			if r.Status != dist.GatePassed {
				out[i].Status = r.Status
			}
		}
	}
	return out
}

// scope is the request's scope (the whole catalog without an access
// file).
func (ui *catalogUI) scope(r *http.Request) Scope { return ui.app.Scope(r) }

func (ui *catalogUI) index(w http.ResponseWriter, r *http.Request) {
	sc := ui.scope(r)
	m := ui.current().viewFor(sc)
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	if len(q) > maxQuery {
		q = q[:maxQuery]
	}
	// One list of addresses, providers first, filtered then paginated: a
	// first pass counts the matches, a second keeps only the page's rows, so
	// a request allocates one page, never a copy of the address list
	// (which, at 50,000 addresses and many clients at once, added up).
	match := func(key string) bool { return q == "" || strings.Contains(key, q) }
	nProv, nMod := 0, 0
	for _, g := range m.providers {
		if match(g.key) {
			nProv++
		}
	}
	for _, g := range m.modules {
		if match(g.key) {
			nMod++
		}
	}
	extra := url.Values{}
	if q != "" {
		extra.Set("q", q)
	}
	lo, hi, pg := paginate(r, nProv+nMod, pageSize, extra)
	var provs []providerRow
	var mods []moduleRow
	i := 0
	for _, g := range m.providers {
		if i >= hi {
			break
		}
		if !match(g.key) {
			continue
		}
		if i++; i <= lo {
			continue
		}
		row := providerRow{providerGroup: g, Newest: g.Versions[0], Signer: signerLabel(g.Versions[0])}
		row.Shown = g.Versions[:min(len(g.Versions), maxVersionsShown)]
		row.More = len(g.Versions) - len(row.Shown)
		for _, pk := range row.Newest.Packages {
			row.Platform = append(row.Platform, pk.Platform())
		}
		var rss [][]dist.GateResult
		for _, pk := range row.Newest.Packages {
			rss = append(rss, pk.Gates)
		}
		row.Gates = gateBadges(rss...)
		provs = append(provs, row)
	}
	for _, g := range m.modules {
		if i >= hi {
			break
		}
		if !match(g.key) {
			continue
		}
		if i++; i <= lo {
			continue
		}
		row := moduleRow{moduleGroup: g, Gates: gateBadges(g.Versions[0].Gates)}
		row.Shown = g.Versions[:min(len(g.Versions), maxVersionsShown)]
		row.More = len(g.Versions) - len(row.Shown)
		mods = append(mods, row)
	}
	base := baseURL(r)
	who := ui.app.Viewer(r)
	login := ui.app.SignIn()
	ui.render(w, r, "index.html", map[string]any{
		"Access":         ui.app.AccessControl(),
		"Login":          login,
		"Who":            who.Name,
		"Person":         who.Person,
		"SignOut":        who.SignOut,
		"Groups":         who.Groups,
		"Until":          who.Until,
		"Anonymous":      who.Name == acl.AnonymousName,
		"Title":          "airgap catalog",
		"Q":              q,
		"Providers":      provs,
		"Modules":        mods,
		"NProv":          nProv,
		"NMod":           nMod,
		"NReleases":      releasesSeen(ui.app.Store().Catalog(), sc),
		"ProviderGroups": len(m.providers),
		"ModuleGroups":   len(m.modules),
		"Packages":       m.packages,
		"ProviderVers":   m.provVers,
		"ModuleVers":     m.modVers,
		"Pager":          pg,
		"Base":           base,
		"Configs":        clientConfigs(ui.app, base, m.origins, login),
		"CAFingerprint":  ui.caFP,
		"HasCA":          ui.app.CAPEM() != nil,
		"Imports":        m.imports,
		"Withdrawn":      m.withdrawn,
		"NWithdrawn":     m.nWithdraw,
		"Keys":           m.keys,
		"NKeyNamespaces": m.nKeys,
	})
}

type providerVersionRow struct {
	*dist.ProviderVersion
	Signer   string
	SignedBy *store.VersionSigner // the key that signed the SHA256SUMS served (nil: not recorded)
	Snippet  string
	// Usage and Fetched (per platform): download counts (Usage), with
	// counting on.
	Usage   UsageCell
	Fetched map[string]UsageCell
}

func (ui *catalogUI) provider(w http.ResponseWriter, r *http.Request) {
	m := ui.current()
	sc := ui.scope(r)
	addr := strings.ToLower(r.PathValue("host") + "/" + r.PathValue("ns") + "/" + r.PathValue("type"))
	g := m.provBy[addr]
	if g == nil || !sc.Allows(g.Addr) {
		if g != nil {
			ui.app.NoteDenied(w, g.Addr)
		}
		ui.notFound(w, r, "provider "+addr)
		return
	}
	lo, hi, pg := paginate(r, len(g.Versions), versionPageSize, nil)
	var rows []providerVersionRow
	for _, v := range g.Versions[lo:hi] {
		row := providerVersionRow{ProviderVersion: v, Signer: signerLabel(v), Snippet: fmt.Sprintf(
			"terraform {\n  required_providers {\n    %s = {\n      source  = %q\n      version = %q\n    }\n  }\n}\n", g.Type, g.Source, v.Version)}
		if s, ok := m.signers.Of(v); ok {
			row.SignedBy = &s
		}
		if u := ui.app.Counts(); u != nil {
			row.Usage, row.Fetched = providerUsage(u, v)
		}
		rows = append(rows, row)
	}
	ui.render(w, r, "provider.html", map[string]any{"Title": g.Source, "G": g, "Rows": rows, "Pager": pg, "UsageSince": ui.usageSince()})
}

type moduleVersionRow struct {
	*dist.ModuleVersion
	Snippet string
	Usage   UsageCell // with counting on (Usage)
}

func (ui *catalogUI) module(w http.ResponseWriter, r *http.Request) {
	m := ui.current()
	sc := ui.scope(r)
	addr := strings.ToLower(r.PathValue("host") + "/" + r.PathValue("ns") + "/" + r.PathValue("name") + "/" + r.PathValue("system"))
	g := m.modBy[addr]
	if g == nil || !sc.Allows(g.Addr) {
		if g != nil {
			ui.app.NoteDenied(w, g.Addr)
		}
		ui.notFound(w, r, "module "+addr)
		return
	}
	lo, hi, pg := paginate(r, len(g.Versions), versionPageSize, nil)
	var rows []moduleVersionRow
	for _, v := range g.Versions[lo:hi] {
		row := moduleVersionRow{ModuleVersion: v, Snippet: fmt.Sprintf("module %q {\n  source  = %q\n  version = %q\n}\n", g.Name, g.Source, v.Version)}
		if u := ui.app.Counts(); u != nil {
			row.Usage = moduleUsage(u, v)
		}
		rows = append(rows, row)
	}
	ui.render(w, r, "module.html", map[string]any{"Title": g.Source, "G": g, "Rows": rows, "Pager": pg, "UsageSince": ui.usageSince()})
}

// usageSince is the pages' note on the download counts ("" when serve
// does not count).
func (ui *catalogUI) usageSince() string {
	u := ui.app.Counts()
	if u == nil {
		return ""
	}
	return sinceText(u)
}

func (ui *catalogUI) notFound(w http.ResponseWriter, r *http.Request, what string) {
	ui.renderStatus(w, r, http.StatusNotFound, "notfound.html", map[string]any{"Title": "not found", "What": what})
}

func (ui *catalogUI) render(w http.ResponseWriter, r *http.Request, name string, data map[string]any) {
	ui.renderStatus(w, r, http.StatusOK, name, data)
}

func (ui *catalogUI) renderStatus(w http.ResponseWriter, r *http.Request, code int, name string, data map[string]any) {
	RenderHTML(w, r, code, name, data, ui.app.WriteError)
}

// RenderHTML renders a page of the templates with the catalog's headers
// (its CSP: no external resource, only the page's own script); onErr
// answers a template that fails.
func RenderHTML(w http.ResponseWriter, r *http.Request, code int, name string, data map[string]any, onErr func(http.ResponseWriter, *http.Request, error)) {
	data["Script"] = template.JS(filterScript)
	var b bytes.Buffer
	if err := catalogTmpl.ExecuteTemplate(&b, name, data); err != nil {
		onErr(w, r, err)
		return
	}
	writeHTML(w, r, code, catalogCSP, b.Bytes())
}

// writeHTML writes an HTML page with the catalog's headers and the given
// Content-Security-Policy.
func writeHTML(w http.ResponseWriter, r *http.Request, code int, csp string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache") // (the login pages say no-store)
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}

// releasesSeen counts the CLI releases sc may see (the catalog's link).
func releasesSeen(cat *dist.Catalog, sc Scope) int {
	n := 0
	for i := range cat.Releases {
		if sc.AllowsRelease(cat.Releases[i].Product) {
			n++
		}
	}
	return n
}

// releaseRow is one CLI release on the releases page.
type releaseRow struct {
	dist.CLIRelease
	Dir         string // its files' directory under /releases/
	Fingerprint string // grouped for people
	Pin         string
	// Usage and Fetched (per platform): download counts, with counting
	// on (a tofu platform's zip and .tar.gz count together).
	Usage   UsageCell
	Fetched map[string]UsageCell
}

// releases is the page of the Terraform and OpenTofu CLI releases held
// (/ui/releases), newest first per product. Like /releases/ itself, any
// principal the app admitted sees the releases of the products its rules
// admit (a product it may not see is left out, as if not held).
func (ui *catalogUI) releases(w http.ResponseWriter, r *http.Request) {
	cat := ui.app.Store().Catalog()
	sc := ui.scope(r)
	rows := make([]releaseRow, 0, len(cat.Releases))
	for i := len(cat.Releases) - 1; i >= 0; i-- {
		rel := cat.Releases[i]
		if !sc.AllowsRelease(rel.Product) {
			continue
		}
		dir := "/releases/terraform/" + rel.Version + "/"
		if rel.Product == dist.ProductTofu {
			dir = "/releases/tofu/v" + rel.Version + "/"
		}
		pin := "pinned by airgap for its publisher"
		if rel.KeyPin == dist.KeyPinManifest {
			pin = "pinned by the export manifest's publisher_key"
		}
		row := releaseRow{CLIRelease: rel, Dir: dir, Fingerprint: verify.GroupFingerprint(rel.KeyFingerprint), Pin: pin}
		if u := ui.app.Counts(); u != nil {
			var all store.UsageCount
			row.Fetched = map[string]UsageCell{}
			for _, b := range rel.Builds {
				if _, ok := row.Fetched[b.Platform()]; ok {
					continue
				}
				c := u.Of(store.UsageKey{Kind: store.UsageRelease, Address: rel.Product, Version: rel.Version, Platform: b.Platform()})
				all.Add(c)
				row.Fetched[b.Platform()] = cellOf(c)
			}
			row.Usage = cellOf(all)
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Product < rows[j].Product })
	ui.render(w, r, "releases.html", map[string]any{"Title": "releases", "Releases": rows, "Base": baseURL(r), "UsageSince": ui.usageSince()})
}
