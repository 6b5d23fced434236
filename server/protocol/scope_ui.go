package protocol

import (
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/ui"
)

// Origins lists the origins of the current catalog snapshot in
// default-view order.
func (s *Answers) Origins() []string { return s.current().view.origins }

// Scope is principal p's scope of the current catalog snapshot, as the
// pages see it: the same scope the protocol answers use, so a page and an
// answer agree on what p may see.
func (s *Answers) Scope(p *access.Principal) ui.Scope { return s.current().scopeFor(p) }

// The scope as the pages see it (ui.Scope).

func (sc *scope) Catalog() *dist.Catalog              { return sc.v.cat }
func (sc *scope) Restricted() bool                    { return sc.rules != nil }
func (sc *scope) RulesKey() string                    { return sc.rules.Key() }
func (sc *scope) Allows(addr string) bool             { return sc.allows(addr) }
func (sc *scope) AllowsRelease(product string) bool   { return sc.allowsRelease(product) }
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
