package check

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// unit is one thing of this bundle's manifest that must be found in a hop's
// manifest (a tie), keyed by a digest of what must be equal.
type unit struct {
	what  string
	entry string // the entry's catalog key, for a version record ("" otherwise)
	found bool
}

// unitKey is a digest of v's JSON form: two records tie when their
// fields are equal.
func unitKey(kind string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain records of strings and numbers
	}
	h := sha256.Sum256(append([]byte(kind+"\x00"), b...))
	return hex.EncodeToString(h[:])
}

// What each kind of record ties by. A store builds its catalog from the
// bundles it imports (dist.Catalog.Merge): a provider version's record
// (all but its packages and docs) is the last bundle's that carried it,
// each package's the last bundle's that carried that platform (its build
// information may come from an earlier one: it is checked against the
// zip anyway), each gate result one bundle's, a module version's record
// the last bundle's, and a version's docs and a module's zip may come
// from an earlier bundle than the rest. So each of these must appear,
// equal, in one hop's manifest.
func versionUnit(p dist.ProviderVersion) string {
	v := p
	v.Packages, v.Docs = nil, nil
	return unitKey("provider", v)
}

func providerDocsUnit(p dist.ProviderVersion) string {
	return unitKey("provider-docs", struct {
		Key  string
		Docs *dist.ProviderDocs
	}{p.Key(), p.Docs})
}

func moduleDocsUnit(mv dist.ModuleVersion) string {
	return unitKey("module-docs", []string{mv.Key(), string(mv.Archive), string(mv.Docs)})
}

func packageUnit(p dist.ProviderVersion, pk dist.Package) string {
	k := pk
	k.BuildInfo, k.Gates = "", nil
	return unitKey("package", struct {
		Key string
		Pkg dist.Package
	}{p.Key(), k})
}

func moduleUnit(mv dist.ModuleVersion) string {
	v := mv
	v.Zip, v.ZipSize, v.Gates, v.Docs = "", 0, nil, ""
	return unitKey("module", v)
}

func moduleZipUnit(mv dist.ModuleVersion) string {
	return unitKey("module-zip", []string{mv.Key(), string(mv.Archive), string(mv.Zip), fmt.Sprint(mv.ZipSize)})
}

// A release's record (all but its builds) is the last bundle's that
// carried it, each archive's the last bundle's that carried that file
// (dist.Catalog's mergeReleases).
func releaseUnit(r dist.CLIRelease) string {
	v := r
	v.Builds = nil
	return unitKey("release", v)
}

func releaseBuildUnit(r dist.CLIRelease, b dist.ReleaseBuild) string {
	return unitKey("release-build", struct {
		Key   string
		Build dist.ReleaseBuild
	}{r.ReleaseKey(), b})
}

func gateUnit(entry string, r dist.GateResult) string {
	return unitKey("gate", struct {
		Entry  string
		Result dist.GateResult
	}{entry, r})
}

// unitInfo is one record of a manifest, as walkUnits visits it.
type unitInfo struct {
	what     string
	entry    string                // "p KEY" or "m KEY" for a version record
	provider *dist.ProviderVersion // for a provider version record
	gate     *dist.GateResult      // for a gate result (on an entry of kind gateKind)
	gateKind string
}

// walkUnits calls visit with the key of every record of m that ties
// (versionUnit and the rest) and what it is.
func walkUnits(m *bundle.Manifest, visit func(key string, u unitInfo) error) error {
	for i := range m.Catalog.Providers {
		p := &m.Catalog.Providers[i]
		if err := visit(versionUnit(*p), unitInfo{what: "provider " + p.String(), entry: "p " + p.Key(), provider: p}); err != nil {
			return err
		}
		if p.Docs != nil {
			if err := visit(providerDocsUnit(*p), unitInfo{what: "provider " + p.String() + " docs"}); err != nil {
				return err
			}
		}
		for _, pk := range p.Packages {
			if err := visit(packageUnit(*p, pk), unitInfo{what: "provider " + p.String() + " " + pk.Platform()}); err != nil {
				return err
			}
			on := "p " + p.Key() + " " + pk.Platform()
			for j := range pk.Gates {
				r := &pk.Gates[j]
				u := unitInfo{what: "gate " + r.Gate + " result on provider " + p.String() + " " + pk.Platform(), gate: r, gateKind: dist.GateProviders}
				if err := visit(gateUnit(on, *r), u); err != nil {
					return err
				}
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		if err := visit(moduleUnit(mv), unitInfo{what: "module " + mv.String(), entry: "m " + mv.Key()}); err != nil {
			return err
		}
		if mv.Zip != "" {
			if err := visit(moduleZipUnit(mv), unitInfo{what: "module " + mv.String() + " zip"}); err != nil {
				return err
			}
		}
		if mv.Docs != "" {
			if err := visit(moduleDocsUnit(mv), unitInfo{what: "module " + mv.String() + " docs"}); err != nil {
				return err
			}
		}
		on := "m " + mv.Key()
		for j := range mv.Gates {
			r := &mv.Gates[j]
			u := unitInfo{what: "gate " + r.Gate + " result on module " + mv.String(), gate: r, gateKind: dist.GateModules}
			if err := visit(gateUnit(on, *r), u); err != nil {
				return err
			}
		}
	}
	for _, r := range m.Catalog.Releases {
		if err := visit(releaseUnit(r), unitInfo{what: "release " + r.String(), entry: "r " + r.ReleaseKey()}); err != nil {
			return err
		}
		for _, b := range r.Builds {
			if err := visit(releaseBuildUnit(r, b), unitInfo{what: "release " + r.String() + " " + b.Filename}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Ties is what of a manifest must be tied to the chain's hops: every
// record the chain check ties (see checkChain). An export from a store
// uses it to choose the hops it carries; the check, to tie them.
type Ties struct {
	units map[string]*unit
}

// NewTies lists what of m must be tied.
func NewTies(m *bundle.Manifest) *Ties {
	t := &Ties{units: map[string]*unit{}}
	walkUnits(m, func(key string, u unitInfo) error {
		t.units[key] = &unit{what: u.what, entry: u.entry}
		return nil
	})
	return t
}

// Mark marks every record hm (a hop's manifest) carries, calling found
// (if not nil) with each of them, and reports whether hm carries one that
// no manifest marked before did.
func (t *Ties) Mark(hm *bundle.Manifest, found func(u *unit, info unitInfo) error) (fresh bool, err error) {
	err = walkUnits(hm, func(key string, info unitInfo) error {
		u := t.units[key]
		if u == nil {
			return nil
		}
		fresh = fresh || !u.found
		if found != nil {
			return found(u, info)
		}
		u.found = true
		return nil
	})
	return fresh, err
}

// Untied lists, sorted, what no marked manifest carried.
func (t *Ties) Untied() []string {
	var out []string
	for _, u := range t.units {
		if !u.found {
			out = append(out, u.what)
		}
	}
	sort.Strings(out)
	return out
}

// tieHop marks the records of this bundle that hop h's manifest hm
// carries, records who may have re-signed what, and checks each tied gate
// result against hm's definition of its gate.
func (c *Checker) tieHop(h *HopCheck, hm *bundle.Manifest, ties *Ties) error {
	gates := make(map[string]dist.Gate, len(hm.Gates))
	for _, g := range hm.Gates {
		gates[g.Name] = g
	}
	sizes := make(map[verify.Digest]int64, len(hm.Blobs))
	for _, b := range hm.Blobs {
		sizes[b.Digest] = b.Size
	}
	_, err := ties.Mark(hm, func(u *unit, info unitInfo) error {
		if !u.found {
			u.found = true
			if u.entry != "" {
				c.chain.came[u.entry] = h.Bundle
				h.Brought++
			}
		}
		if p := info.provider; p != nil && (p.SiteSigned || p.MirrorHashesOnly) {
			if c.chain.resigners[p.Key()] == nil {
				c.chain.resigners[p.Key()] = map[string]bool{}
			}
			c.chain.resigners[p.Key()][h.Signer.Fingerprint] = true
		}
		if r := info.gate; r != nil {
			g, ok := gates[r.Gate]
			return checkGateResult("chain hop "+h.Bundle.Short()+": "+info.what, info.gateKind, *r, g, ok, sizes[r.Report])
		}
		return nil
	})
	return err
}

// recordCheck holds the chain to what its checked hops recorded (their own
// chains), one hop manifest at a time: every hop a hop g's chain lists is
// in this chain, equal but for Into (which there is "" for the store g
// was exported from, here g's signer); and every hop said to have come
// into an earlier store is listed by a hop that store exported (one its
// Into signed). It keeps one mark per hop of this chain, never the
// records themselves: memory is O(MaxHops), whatever the hops' chains
// hold.
type recordCheck struct {
	by        map[verify.Digest]bundle.Hop
	confirmed map[verify.Digest]bool // hops listed by a checked hop their Into signed
}

func newRecordCheck(hops []HopCheck) *recordCheck {
	rc := &recordCheck{by: make(map[verify.Digest]bundle.Hop, len(hops)), confirmed: map[verify.Digest]bool{}}
	for _, h := range hops {
		rc.by[h.Bundle] = h.Hop
	}
	return rc
}

// hop checks the records of checked hop g's own chain.
func (rc *recordCheck) hop(g bundle.Hop, records []bundle.Hop) error {
	for _, r := range records {
		want := r
		if want.Into == "" {
			want.Into = g.Signer.Fingerprint
		}
		got, ok := rc.by[r.Bundle]
		switch {
		case !ok:
			return inconsistent("chain hop "+g.Bundle.Short(), "its own chain lists hop %s, which this bundle's chain lacks", r.Bundle.Short())
		case unitKey("hop", got) != unitKey("hop", want):
			return inconsistent("chain hop "+r.Bundle.Short(), "this bundle's chain records it otherwise than hop %s's signed manifest did", g.Bundle.Short())
		}
		if got.Into == g.Signer.Fingerprint {
			rc.confirmed[r.Bundle] = true
		}
	}
	return nil
}

// finish checks that every hop said to have come into an earlier store
// was listed by a checked hop that store exported (or could be: one whose
// blobs a delta omits).
func (rc *recordCheck) finish(hops []HopCheck) error {
	open := map[string]bool{} // signers with a deferred hop
	for _, h := range hops {
		if h.Deferred {
			open[h.Signer.Fingerprint] = true
		}
	}
	for _, h := range hops {
		if h.Into == "" || rc.confirmed[h.Bundle] || open[h.Into] {
			continue
		}
		return inconsistent("chain hop "+h.Bundle.Short(), "it is said to have come into the store whose exports %s signs, but no signed manifest of that store's exports in the chain lists it", verify.GroupFingerprint(h.Into))
	}
	return nil
}

// untied refuses a bundle with an entry no checked hop carries — unless
// the chain has hops recorded without their manifests, which could have
// brought it: then the entries are listed (Result.Untied), for
// 'verify' to show and an import's chain policy to refuse.
func (c *Checker) untied(ties *Ties, recorded bool) error {
	missing := ties.Untied()
	if len(missing) == 0 {
		return nil
	}
	if recorded {
		c.rep.Untied = missing
		return nil
	}
	n := len(missing)
	if n > 5 {
		missing = append(missing[:5], fmt.Sprintf("and %d more", n-5))
	}
	return inconsistent("the chain of custody", "%d record(s) of this bundle are in no hop's signed manifest: %s; a bundle exported from a store carries only what bundles brought into it", n, strings.Join(missing, "; "))
}

// CameWith returns the hop (its bundle digest) a provider or module
// version of the bundle was first found in, oldest hop first, or "".
// kind is dist.KindProvider or dist.KindModule; key the entry's Key.
func (r *Result) CameWith(kind, key string) verify.Digest {
	if r.came == nil {
		return ""
	}
	if kind == dist.KindModule {
		return r.came["m "+key]
	}
	return r.came["p "+key]
}
