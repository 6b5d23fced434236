package store

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
	"github.com/zclconf/go-cty/cty"
)

// Withdrawn is one version a bundle took out of the catalog: it stays
// listed here (and keeps later bundles from carrying it back) until a
// bundle reinstates it.
type Withdrawn struct {
	Kind    string        `json:"kind"` // dist.KindProvider or dist.KindModule
	Addr    string        `json:"addr"`
	Version string        `json:"version"`
	Reason  string        `json:"reason"`
	Bundle  verify.Digest `json:"bundle"` // the withdrawing bundle's manifest digest
	Signer  verify.Signer `json:"signer"`
	Time    time.Time     `json:"time"`
	// Absent is true when the store did not have the version when it was
	// withdrawn (the withdrawal only keeps it out).
	Absent bool `json:"absent,omitempty"`
}

// Key is the catalog key of the withdrawn version.
func (w Withdrawn) Key() string { return dist.VersionKey(w.Addr, w.Version) }

func (w Withdrawn) String() string { return w.Kind + " " + w.Addr + " " + w.Version }

// withdrawnRule refuses every version the bundle carries that the store
// has withdrawn, unless the bundle itself reinstates it (one of
// CatalogRules).
func withdrawnRule(in *PolicyInput, out *PolicyResult) error {
	ix, m := in.Index, in.Manifest
	if len(ix.Withdrawn) == 0 {
		return nil
	}
	lifted := map[string]bool{}
	for _, r := range m.Reinstate {
		for _, k := range r.Keys() {
			lifted[k] = true
		}
	}
	open := make(map[string]Withdrawn, len(ix.Withdrawn))
	for _, w := range ix.Withdrawn {
		if !lifted[w.Key()] {
			open[w.Key()] = w
		}
	}
	var rs []Refusal
	var lines, hints []string
	refuse := func(r Refusal, key string) {
		w, ok := open[key]
		if !ok {
			return
		}
		r.Reason = fmt.Sprintf("the store withdrew it: %s (bundle %s, signed by %s, on %s)", w.Reason, w.Bundle.Short(), verify.GroupFingerprint(w.Signer.Fingerprint), w.Time.Format(time.RFC3339))
		rs = append(rs, r)
		if len(lines) < maxListed {
			lines = append(lines, fmt.Sprintf("%s, which bundle %s (signed by %s) withdrew on %s: %s",
				r.Entry(), w.Bundle.Short(), verify.GroupFingerprint(w.Signer.Fingerprint), w.Time.Format(time.RFC3339), dist.Printable(w.Reason)))
			hints = append(hints, reinstateHint(w))
		}
	}
	for _, p := range m.Catalog.Providers {
		refuse(providerRefusal(ruleWithdrawn, p, ""), p.Key())
	}
	for _, mv := range m.Catalog.Modules {
		refuse(moduleRefusal(ruleWithdrawn, mv, ""), mv.Key())
	}
	for _, r := range m.Catalog.Releases {
		refuse(releaseRefusal(ruleWithdrawn, r, ""), r.ReleaseKey())
	}
	if len(rs) == 0 {
		return nil
	}
	if n := len(rs) - len(lines); n > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more", n))
	}
	block := "this block"
	if len(hints) > 1 {
		block = "these blocks"
	}
	out.Refuse(fmt.Errorf("%w: the bundle carries %s\n"+
		"hint: the store keeps withdrawn versions out; if a version is safe again, export it with %s in the same manifest:\n%s"+
		"or export without it ('airgap export --have' the store's inventory leaves withdrawn versions out of version constraints)",
		ErrWithdrawn, strings.Join(lines, "\n  and "), block, strings.Join(hints, "\n")+"\n"), rs...)
	return nil
}

// ReinstateHint is the manifest block that reinstates w (for hints:
// indented, as an error's hint shows HCL).
func ReinstateHint(w Withdrawn) string { return reinstateHint(w) }

// reinstateHint is the manifest block that reinstates w.
func reinstateHint(w Withdrawn) string {
	attrs := []dist.HCLAttr{{Name: "versions", Value: cty.StringVal(w.Version)}}
	if w.Kind == dist.KindModule {
		attrs = append(attrs, dist.HCLAttr{Name: "module", Value: cty.True})
	}
	if w.Kind == dist.KindRelease {
		attrs = append(attrs, dist.HCLAttr{Name: "cli", Value: cty.True})
	}
	attrs = append(attrs, dist.HCLAttr{Name: "reason", Value: cty.StringVal("why it is safe again")})
	return dist.HCLHint("reinstate", []string{shortAddr(w.Addr)}, attrs...)
}

// shortAddr drops the default registry host, as manifests usually write it.
func shortAddr(a string) string { return strings.TrimPrefix(a, dist.DefaultRegistry+"/") }

// applyWithdrawals lifts the withdrawals m reinstates and applies the ones
// it makes: the versions leave ix.Catalog and are recorded in ix.Withdrawn.
// It returns what changed, as lines for the history and the report.
func applyWithdrawals(ix *Index, m *bundle.Manifest, id verify.Digest, signer verify.Signer, now time.Time) (withdrew, reinstated []string) {
	lifted := map[string]bool{}
	for _, r := range m.Reinstate {
		for _, k := range r.Keys() {
			lifted[k] = true
		}
	}
	keep := ix.Withdrawn[:0:0]
	for _, w := range ix.Withdrawn {
		if lifted[w.Key()] {
			reinstated = append(reinstated, w.String())
			continue
		}
		keep = append(keep, w)
	}
	have := map[string]bool{}
	for _, w := range keep {
		have[w.Key()] = true
	}
	drop := map[string]bool{}
	for _, wd := range m.Withdraw {
		for _, v := range wd.Versions {
			k := dist.VersionKey(wd.Addr, v)
			if have[k] {
				continue // already withdrawn: the first record stands
			}
			have[k] = true
			drop[k] = true
			keep = append(keep, Withdrawn{Kind: wd.Kind, Addr: wd.Addr, Version: v, Reason: wd.Reason, Bundle: id, Signer: signer, Time: now, Absent: true})
		}
	}
	if len(drop) > 0 {
		still := stillServed(&ix.Catalog, drop)
		present := removeKeys(&ix.Catalog, drop)
		for i := range keep {
			if present[keep[i].Key()] {
				keep[i].Absent = false
			}
			if drop[keep[i].Key()] {
				line := keep[i].String()
				if keep[i].Absent {
					line += " (not in the store; kept out)"
				}
				if other := still[keep[i].Key()]; other != "" {
					line += " (its bytes are still served as " + other + ": withdraw that too to take them out of reach)"
				}
				withdrew = append(withdrew, line)
			}
		}
	}
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].Key() < keep[j].Key() })
	ix.Withdrawn = keep
	return withdrew, reinstated
}

// stillServed maps each key in drop to a version that stays in c and serves
// one of the same packages or archives (the OpenTofu registry republishes
// HashiCorp's providers byte for byte): a withdrawal is by address, so the
// import's report must say that the bytes stay in reach under that name.
func stillServed(c *dist.Catalog, drop map[string]bool) map[string]string {
	gone := map[verify.Digest]string{}
	for _, p := range c.Providers {
		if drop[p.Key()] {
			for _, pk := range p.Packages {
				gone[pk.Digest] = p.Key()
			}
		}
	}
	for _, m := range c.Modules {
		if drop[m.Key()] {
			gone[m.Archive] = m.Key()
			if m.Zip != "" {
				gone[m.Zip] = m.Key()
			}
		}
	}
	out := map[string]string{}
	note := func(d verify.Digest, what string) {
		if k, ok := gone[d]; ok && out[k] == "" {
			out[k] = what
		}
	}
	for _, p := range c.Providers {
		if !drop[p.Key()] {
			for _, pk := range p.Packages {
				note(pk.Digest, "provider "+p.String())
			}
		}
	}
	for _, m := range c.Modules {
		if !drop[m.Key()] {
			note(m.Archive, "module "+m.String())
			if m.Zip != "" {
				note(m.Zip, "module "+m.String())
			}
		}
	}
	return out
}

// removeKeys removes the provider and module versions whose Key is in keys
// from c, and reports which keys it found.
func removeKeys(c *dist.Catalog, keys map[string]bool) map[string]bool {
	found := map[string]bool{}
	ps := make([]dist.ProviderVersion, 0, len(c.Providers))
	for _, p := range c.Providers {
		if keys[p.Key()] {
			found[p.Key()] = true
			continue
		}
		ps = append(ps, p)
	}
	ms := make([]dist.ModuleVersion, 0, len(c.Modules))
	for _, mv := range c.Modules {
		if keys[mv.Key()] {
			found[mv.Key()] = true
			continue
		}
		ms = append(ms, mv)
	}
	rs := make([]dist.CLIRelease, 0, len(c.Releases))
	for _, r := range c.Releases {
		if keys[r.ReleaseKey()] {
			found[r.ReleaseKey()] = true
			continue
		}
		rs = append(rs, r)
	}
	c.Providers, c.Modules = ps, ms
	if len(c.Releases) > 0 {
		c.Releases = rs
	}
	return found
}
