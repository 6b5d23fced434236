package ui

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// App is what the pages need of the appliance that serves them.
type App interface {
	// Store is the store the appliance reads (its current catalog and
	// blobs); a *store.Store also gives the history the pages list.
	Store() Store
	// Origins are the current catalog's origins in default-view order.
	Origins() []string
	// Scope is what the request's principal may see of the current
	// catalog (everything without an access file).
	Scope(r *http.Request) Scope
	// Viewer is who the request acts as, for the page's header.
	Viewer(r *http.Request) Viewer
	// AccessControl reports whether an access file is enforced, SignIn
	// whether it has single sign-on (a login block).
	AccessControl() bool
	SignIn() bool
	// CAPEM is the built-in CA's certificate (nil with other TLS).
	CAPEM() []byte
	// Counts are the download counts (nil when serve does not count).
	Counts() Counts
	// Tool names the airgap serving, for the SBOM.
	Tool() string
	// WriteClientConfig writes a CLI configuration pointing at base.
	WriteClientConfig(w io.Writer, base string, origins []string, tool, mode string, login bool) error
	// WriteError answers an error the way every endpoint does.
	WriteError(w http.ResponseWriter, r *http.Request, err error)
	// NoteDenied records, for the access log and the audit, that the
	// request named addr, which its principal may not read (the page
	// answers as for an address that does not exist).
	NoteDenied(w http.ResponseWriter, addr string)
}

// Store is what the pages read of the store.
type Store interface {
	Catalog() *dist.Catalog
	OpenBlob(verify.Digest) (*os.File, error)
}

// Scope is what one principal may see of a catalog snapshot: a denied
// address is shown as a missing one.
type Scope interface {
	Catalog() *dist.Catalog
	// Restricted reports whether rules filter the catalog; RulesKey names
	// the rules (scopes of one key see the same).
	Restricted() bool
	RulesKey() string
	Allows(addr string) bool
	// AllowsRelease reports whether the scope may see product's CLI
	// releases (acl.Rules.AllowsRelease).
	AllowsRelease(product string) bool
	Origins() []string
	IsOrigin(name string) (string, bool)
	// ProviderKeys are the "namespace/type" keys of an origin's
	// providers, unfiltered and unsorted.
	ProviderKeys(origin string) []string
	ProviderVersions(origin, ns, typ string) []*dist.ProviderVersion
	ModuleVersions(origin, ns, name, system string) []*dist.ModuleVersion
	// SBOM is the scope's SBOM cache: one per scope.
	SBOM() *SBOMCache
}

// Viewer is who a request acts as.
type Viewer struct {
	Name    string // the token's name, acl.AnonymousName, or "" (no access file)
	Person  string // a login token's person
	Groups  []string
	Until   time.Time // a login token's expiry
	SignOut string    // the sign-out form's MAC
}

// Counts are the download counts the pages show.
type Counts interface {
	Of(store.UsageKey) store.UsageCount
	Since() time.Time
}

// UsageCell is what the pages show of a download count.
type UsageCell struct {
	Downloads int64
	Last      string // "2006-01-02 15:04 UTC", "" when never
}

func (c UsageCell) String() string {
	switch {
	case c.Downloads == 0:
		return "never downloaded"
	case c.Downloads == 1:
		return "1 download, last " + c.Last
	}
	return strconv.FormatInt(c.Downloads, 10) + " downloads, last " + c.Last
}

func cellOf(c store.UsageCount) UsageCell {
	out := UsageCell{Downloads: c.Downloads}
	if !c.Last.IsZero() {
		out.Last = c.Last.UTC().Format("2006-01-02 15:04 UTC")
	}
	return out
}

// providerUsage is a provider version's counts for its page: the whole
// version's, and each platform's.
func providerUsage(u Counts, p *dist.ProviderVersion) (UsageCell, map[string]UsageCell) {
	var all store.UsageCount
	per := make(map[string]UsageCell, len(p.Packages))
	for _, pk := range p.Packages {
		c := u.Of(store.UsageKey{Kind: store.UsageProvider, Address: p.Addr(), Version: p.Version, Platform: pk.Platform()})
		all.Add(c)
		per[pk.Platform()] = cellOf(c)
	}
	return cellOf(all), per
}

// moduleUsage is a module version's count for its page.
func moduleUsage(u Counts, m *dist.ModuleVersion) UsageCell {
	return cellOf(u.Of(store.UsageKey{Kind: store.UsageModule, Address: m.Addr(), Version: m.Version}))
}

// sinceText says from when the pages' counts run.
func sinceText(u Counts) string {
	if t := u.Since(); !t.IsZero() {
		return "Downloads counted since " + t.UTC().Format("2006-01-02 15:04 UTC") + ", by every replica serving this store."
	}
	return "Downloads counted since this server started: the store's download counts could not be read or written (serve's log says why), so these are not kept."
}

// Pages are the HTML pages' handlers; the server's route table says which
// path goes to which, and who may reach them.
type Pages struct {
	catalog *catalogUI
	docs    *docsUI
}

// New returns the pages of app.
func New(app App) *Pages {
	return &Pages{catalog: newCatalogUI(app), docs: newDocsUI(app)}
}

// Index is the catalog page ("/"), Provider and Module an address's
// versions, SBOM the CycloneDX SBOM of what the request's scope sees.
func (p *Pages) Index(w http.ResponseWriter, r *http.Request)    { p.catalog.index(w, r) }
func (p *Pages) Provider(w http.ResponseWriter, r *http.Request) { p.catalog.provider(w, r) }
func (p *Pages) Module(w http.ResponseWriter, r *http.Request)   { p.catalog.module(w, r) }

// Releases is the page of the Terraform and OpenTofu CLI releases held.
func (p *Pages) Releases(w http.ResponseWriter, r *http.Request) { p.catalog.releases(w, r) }
func (p *Pages) SBOM(w http.ResponseWriter, r *http.Request)     { p.catalog.sbom(w, r) }

// ProviderDocs and ModuleDocs are a version's documentation, DocsSearch
// the search over the newest documented version of every provider.
func (p *Pages) ProviderDocs(w http.ResponseWriter, r *http.Request) { p.docs.provider(w, r) }
func (p *Pages) ModuleDocs(w http.ResponseWriter, r *http.Request)   { p.docs.module(w, r) }
func (p *Pages) DocsSearch(w http.ResponseWriter, r *http.Request)   { p.docs.search(w, r) }

// DocsSearchJSON and DocsPagesJSON answer 'airgap docs --url' with the
// same search and pages as JSON.
func (p *Pages) DocsSearchJSON(w http.ResponseWriter, r *http.Request) { p.docs.searchJSON(w, r) }
func (p *Pages) DocsPagesJSON(w http.ResponseWriter, r *http.Request)  { p.docs.pagesJSON(w, r) }
func (p *Pages) DocsModuleJSON(w http.ResponseWriter, r *http.Request) { p.docs.moduleJSON(w, r) }
