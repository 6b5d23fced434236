package dist

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Kinds of a Withdrawal.
const (
	KindProvider = "provider"
	KindModule   = "module"
	// KindRelease is a Terraform or OpenTofu CLI release (CLIRelease);
	// its address is the product, "terraform" or "tofu".
	KindRelease = "release"
)

// Limits on withdrawals (they come from signed but still untrusted bundles).
const (
	MaxWithdrawals      = 10_000 // versions in the withdraw plus reinstate lists of one bundle
	MaxWithdrawalReason = 1024   // bytes
)

// Withdrawal takes versions of one provider or module out of a store's
// catalog (in a bundle's "withdraw" list), or lifts an earlier withdrawal
// (in its "reinstate" list). Addr is the full canonical address:
// host/namespace/type for a provider, host/namespace/name/system for a
// module. Versions are exact versions, not constraints: the offline side
// cannot resolve a constraint against versions it never saw.
type Withdrawal struct {
	Kind     string   `json:"kind"`
	Addr     string   `json:"addr"`
	Versions []string `json:"versions"`
	Reason   string   `json:"reason"`
}

// Keys returns the catalog keys (as ProviderVersion.Key and
// ModuleVersion.Key) of the withdrawn versions.
func (w Withdrawal) Keys() []string {
	out := make([]string, len(w.Versions))
	for i, v := range w.Versions {
		out[i] = VersionKey(w.Addr, v)
	}
	return out
}

// VersionKey is the catalog key of addr at version v.
func VersionKey(addr, v string) string { return canonicalAddr(addr) + " " + canonicalVersion(v) }

// canonicalAddr is addr as clients compare it: lower case, and the host's
// port in canonical form, dropped when it is 443 (Terraform and OpenTofu
// read "registry.terraform.io:443/hashicorp/aws" and
// "registry.terraform.io/hashicorp/aws" as one provider, svchost.ForComparison),
// so a spelling with a port can neither twin an entry nor slip past a
// withdrawal.
func canonicalAddr(addr string) string {
	addr = strings.ToLower(addr)
	host, rest, _ := strings.Cut(addr, "/")
	h, port, ok := strings.Cut(host, ":")
	if !ok {
		return addr
	}
	port = strings.TrimLeft(port, "0")
	if port == "443" {
		host = h
	} else {
		host = h + ":" + port
	}
	return host + "/" + rest
}

// Validate checks the kind, the address (canonical form), each version and
// the reason (required, at most MaxWithdrawalReason bytes of valid UTF-8).
func (w Withdrawal) Validate() error {
	parts := strings.Split(w.Addr, "/")
	switch w.Kind {
	case KindProvider:
		if len(parts) != 3 || !ValidHost(parts[0]) || !ValidProviderName(parts[1]) || !ValidProviderName(parts[2]) {
			return fmt.Errorf("withdrawal of %q: not a provider address HOST/NAMESPACE/TYPE", w.Addr)
		}
	case KindModule:
		if len(parts) != 4 || !ValidHost(parts[0]) || !validModuleName(parts[1]) || !validModuleName(parts[2]) || !validModuleName(parts[3]) {
			return fmt.Errorf("withdrawal of %q: not a module address HOST/NAMESPACE/NAME/SYSTEM", w.Addr)
		}
	case KindRelease:
		if w.Addr != ProductTerraform && w.Addr != ProductTofu {
			return fmt.Errorf("withdrawal of %q: not a CLI release product (terraform or tofu)", w.Addr)
		}
	default:
		return fmt.Errorf("withdrawal of %q: unknown kind %q (want %q, %q or %q)", w.Addr, w.Kind, KindProvider, KindModule, KindRelease)
	}
	if len(w.Versions) == 0 {
		return fmt.Errorf("withdrawal of %s: no versions", w.Addr)
	}
	for _, v := range w.Versions {
		if !ValidVersion(v) {
			return fmt.Errorf("withdrawal of %s: %q is not an exact version (MAJOR.MINOR.PATCH)", w.Addr, v)
		}
	}
	if strings.TrimSpace(w.Reason) == "" {
		return fmt.Errorf("withdrawal of %s: a reason is required", w.Addr)
	}
	if len(w.Reason) > MaxWithdrawalReason || !utf8.ValidString(w.Reason) {
		return fmt.Errorf("withdrawal of %s: the reason must be valid UTF-8 of at most %d bytes", w.Addr, MaxWithdrawalReason)
	}
	// The reason is printed by verify, import's refusal and inventory and
	// shown on the catalog page: one line of visible text, so that it can
	// neither forge lines (a "hint:" telling the operator to reinstate)
	// nor reorder what follows it (bidi overrides).
	if i := strings.IndexFunc(w.Reason, needsEscape); i >= 0 {
		r, _ := utf8.DecodeRuneInString(w.Reason[i:])
		return fmt.Errorf("withdrawal of %s: the reason contains a control or formatting character (%s at byte %d)\nhint: write the reason as one line of plain text", w.Addr, Printable(string(r)), i)
	}
	return nil
}

// ValidateWithdrawals checks a bundle's withdraw and reinstate lists against
// each other and its catalog: each entry valid, at most MaxWithdrawals in
// all, no version both withdrawn and reinstated, and no version withdrawn
// that the same catalog carries.
func ValidateWithdrawals(cat *Catalog, withdraw, reinstate []Withdrawal) error {
	n := 0
	for _, l := range [][]Withdrawal{withdraw, reinstate} {
		for _, w := range l {
			n += len(w.Versions)
		}
	}
	if n > MaxWithdrawals {
		return fmt.Errorf("%d versions withdrawn or reinstated: the limit is %d per bundle", n, MaxWithdrawals)
	}
	out := map[string]bool{}
	for _, w := range withdraw {
		if err := w.Validate(); err != nil {
			return err
		}
		for _, k := range w.Keys() {
			out[k] = true
		}
	}
	for _, w := range reinstate {
		if err := w.Validate(); err != nil {
			return fmt.Errorf("reinstate: %w", err)
		}
		for i, k := range w.Keys() {
			if out[k] {
				return fmt.Errorf("%s %s is both withdrawn and reinstated", w.Addr, w.Versions[i])
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, p := range cat.Providers {
		if out[p.Key()] {
			return fmt.Errorf("provider %s is both carried and withdrawn", p)
		}
	}
	for _, m := range cat.Modules {
		if out[m.Key()] {
			return fmt.Errorf("module %s is both carried and withdrawn", m)
		}
	}
	for _, r := range cat.Releases {
		if out[r.ReleaseKey()] {
			return fmt.Errorf("release %s is both carried and withdrawn", r)
		}
	}
	return nil
}

// SortWithdrawals puts a withdraw or reinstate list in canonical order (by
// kind and address, each entry's versions in version order), for
// deterministic bundles.
func SortWithdrawals(ws []Withdrawal) {
	for i := range ws {
		vs := ws[i].Versions
		sort.Slice(vs, func(a, b int) bool { return CompareVersions(vs[a], vs[b]) < 0 })
	}
	sort.SliceStable(ws, func(i, j int) bool {
		if ws[i].Kind != ws[j].Kind {
			return ws[i].Kind < ws[j].Kind
		}
		return ws[i].Addr < ws[j].Addr
	})
}
