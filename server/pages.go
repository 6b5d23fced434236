package server

import (
	"io"
	"net/http"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/ui"
)

// uiApp is the server as the HTML pages see it (ui.App).
type uiApp struct{ s *Server }

func (a uiApp) Store() ui.Store   { return a.s.store }
func (a uiApp) Origins() []string { return a.s.current().view.origins }

func (a uiApp) Scope(r *http.Request) ui.Scope {
	return a.s.current().scopeFor(access.Of(r).Principal())
}

func (a uiApp) Viewer(r *http.Request) ui.Viewer {
	p := access.Of(r).Principal()
	v := ui.Viewer{Person: p.User(), SignOut: a.s.login.SignOutMAC(p)}
	if p != nil {
		v.Name = p.Name()
		if l := p.Login(); l != nil {
			v.Groups, v.Until = l.Groups, l.Expires
		}
	}
	return v
}

func (a uiApp) AccessControl() bool { return a.s.access != nil }
func (a uiApp) SignIn() bool        { return a.s.access.LoginConfig() != nil }
func (a uiApp) CAPEM() []byte       { return a.s.caPEM }
func (a uiApp) Tool() string        { return a.s.tool }

func (a uiApp) Counts() ui.Counts {
	if a.s.usage == nil {
		return nil // not a typed nil: the pages test for nil
	}
	return a.s.usage
}

func (a uiApp) WriteClientConfig(w io.Writer, base string, origins []string, tool, mode string, login bool) error {
	return WriteClientConfig(w, ClientConfigOptions{URL: base, Origins: origins, Tool: tool, Mode: mode, Login: login})
}

func (a uiApp) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	a.s.writeError(w, r, err)
}
func (a uiApp) NoteDenied(w http.ResponseWriter, addr string) { access.NoteDenied(w, addr) }

// The scope as the pages see it (ui.Scope).

func (sc *scope) Catalog() *dist.Catalog              { return sc.v.cat }
func (sc *scope) Restricted() bool                    { return sc.rules != nil }
func (sc *scope) RulesKey() string                    { return sc.rules.Key() }
func (sc *scope) Allows(addr string) bool             { return sc.allows(addr) }
func (sc *scope) Origins() []string                   { return sc.origins }
func (sc *scope) IsOrigin(name string) (string, bool) { return sc.isOrigin(name) }
func (sc *scope) SBOM() *ui.SBOMCache                 { return &sc.sbom }

func (sc *scope) ProviderKeys(origin string) []string {
	keys := make([]string, 0, len(sc.v.providers[origin]))
	for k := range sc.v.providers[origin] {
		keys = append(keys, k)
	}
	return keys
}

func (sc *scope) ProviderVersions(origin, ns, typ string) []*dist.ProviderVersion {
	return sc.providerVersions(origin, ns, typ)
}

func (sc *scope) ModuleVersions(origin, ns, name, system string) []*dist.ModuleVersion {
	return sc.moduleVersions(origin, ns, name, system)
}
