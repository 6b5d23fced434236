package protocol

import (
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/ui"
)

// scope is what one set of access rules sees of a catalog snapshot: the
// view with every address the rules do not allow taken out, so that a
// denied address is answered by the same code, with the same status, body
// and headers, as one the catalog does not have. Without an access file
// there is one scope, the whole view (rules nil).
//
// A scope is cheap: it holds the rules and the origins in which they allow
// something (in default-view order); each lookup filters the shared view
// as it goes. The default view falls through denied addresses exactly as
// it falls through missing ones: for a token that may read
// registry.opentofu.org/hashicorp/aws but not registry.terraform.io's, the
// appliance's own name serves the former, as it would if the latter were
// not in the catalog. Scopes are built once per catalog snapshot, access
// file and distinct rule set (tokens with the same patterns share one), in
// O(addresses × patterns), and hold O(origins).
type scope struct {
	v       *view
	rules   *acl.Rules   // nil: everything
	origins []string     // origins with something the rules allow, default-view order
	sbom    ui.SBOMCache // the SBOM of what it sees
}

func newScope(v *view, rules *acl.Rules) *scope {
	sc := &scope{v: v, rules: rules}
	if rules == nil {
		sc.origins = v.origins
		return sc
	}
	for _, o := range v.origins {
		if sc.anyAllowed(o) {
			sc.origins = append(sc.origins, o)
		}
	}
	return sc
}

func (sc *scope) anyAllowed(origin string) bool {
	for _, vs := range sc.v.providers[origin] {
		if sc.rules.Allows(vs[0].Addr()) {
			return true
		}
	}
	for _, vs := range sc.v.modules[origin] {
		if sc.rules.Allows(vs[0].Addr()) {
			return true
		}
	}
	return false
}

// allows reports whether the scope may see addr (a catalog address).
func (sc *scope) allows(addr string) bool { return sc.rules == nil || sc.rules.Allows(addr) }

// allowsRelease reports whether the scope may see product's CLI releases
// (acl.Rules.AllowsRelease).
func (sc *scope) allowsRelease(product string) bool {
	return sc.rules == nil || sc.rules.AllowsRelease(product)
}

// isOrigin reports whether name (lowercase) is an origin, exactly: path
// values (/origin/{origin}/…, /mirror/{hostname}/…) name an origin as
// clients write it in a source address, so "registry.terraform.io:junk" is
// no origin (it would otherwise be one under unboundedly many spellings,
// each with an entry in the answer cache). Only the Host header may carry
// a port (see hostOrigin). The result is the catalog's own string, never
// the request's.
func (sc *scope) isOrigin(name string) (string, bool) {
	for _, o := range sc.origins {
		if o == name {
			return o, true
		}
	}
	return "", false
}

// hostOrigin is view.hostOrigin over the scope's origins: a Host naming an
// origin the scope sees nothing in gets the default view, as a Host naming
// no origin does.
func (sc *scope) hostOrigin(host string) string {
	if sc.rules == nil {
		return sc.v.hostOrigin(host)
	}
	o := sc.v.hostOrigin(host)
	if _, ok := sc.isOrigin(o); ok {
		return o
	}
	return defaultOrigin
}

func (sc *scope) providerVersions(origin, ns, typ string) []*dist.ProviderVersion {
	if sc.rules == nil {
		return sc.v.providerVersions(origin, ns, typ)
	}
	return scoped(sc, sc.v.providers, origin, strings.ToLower(ns)+"/"+strings.ToLower(typ), (*dist.ProviderVersion).Addr)
}

func (sc *scope) moduleVersions(origin, ns, name, system string) []*dist.ModuleVersion {
	if sc.rules == nil {
		return sc.v.moduleVersions(origin, ns, name, system)
	}
	return scoped(sc, sc.v.modules, origin, strings.ToLower(ns+"/"+name+"/"+system), (*dist.ModuleVersion).Addr)
}

// scoped looks key up in one origin, or for the default view in the first
// of the scope's origins that has it and whose address the rules allow.
func scoped[T any](sc *scope, byOrigin map[string]map[string][]*T, origin, key string, addr func(*T) string) []*T {
	pick := func(o string) []*T {
		if vs := byOrigin[o][key]; len(vs) > 0 && sc.rules.Allows(addr(vs[0])) {
			return vs
		}
		return nil
	}
	if origin != defaultOrigin {
		return pick(origin)
	}
	for _, o := range sc.origins {
		if vs := pick(o); vs != nil {
			return vs
		}
	}
	return nil
}

// owner returns, of a blob's owners (in catalog order), the first whose
// address the scope allows, or nil.
func (sc *scope) owner(owners []*access.Download) *access.Download {
	for _, o := range owners {
		if sc.allows(o.Address) {
			return o
		}
	}
	return nil
}

// count returns how many provider and module versions the scope sees.
func (sc *scope) count() (providers, modules int) {
	if sc.rules == nil {
		return len(sc.v.cat.Providers), len(sc.v.cat.Modules)
	}
	for _, o := range sc.origins {
		for _, vs := range sc.v.providers[o] {
			if sc.rules.Allows(vs[0].Addr()) {
				providers += len(vs)
			}
		}
		for _, vs := range sc.v.modules[o] {
			if sc.rules.Allows(vs[0].Addr()) {
				modules += len(vs)
			}
		}
	}
	return providers, modules
}
