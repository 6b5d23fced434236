package dist

import (
	"fmt"
	"sort"
	"strings"
)

// Reason says why export put one provider or module version in a bundle:
// Where is where it was asked for (a manifest block or project file as
// FILE:LINE, or the project's lock file), and, for a version that modules
// brought, Via is the chain of module calls from there, outermost first,
// each "ADDRESS VERSION" of a module version of the same catalog (the
// module at Where called Via[0], which called Via[1]..., whose last called
// this entry). A bundle's manifest carries them (format 3).
type Reason struct {
	Kind    string   `json:"kind"` // KindProvider or KindModule
	Address string   `json:"address"`
	Version string   `json:"version"`
	Where   string   `json:"where"`
	Via     []string `json:"via,omitempty"`
}

// Bounds of Reasons (ValidateReasons): Where at most MaxReasonText bytes and
// printable; Via at most MaxReasonVia calls (export follows module calls at
// most 32 deep).
const (
	MaxReasonText = 1024
	MaxReasonVia  = 33
)

// Key is the catalog key of the entry a reason is for.
func (r Reason) Key() string { return VersionKey(r.Address, r.Version) }

// Text is the reason for people: "FILE:LINE", or "FILE:LINE → MODULE VERSION
// → …" for one modules brought (not escaped: callers print it through
// Printable).
func (r Reason) Text() string {
	if len(r.Via) == 0 {
		return r.Where
	}
	return r.Where + " → " + strings.Join(r.Via, " → ")
}

// SortReasons puts reasons in their canonical order: kind, address,
// version.
func SortReasons(rs []Reason) {
	sort.Slice(rs, func(i, j int) bool { return reasonLess(rs[i], rs[j]) })
}

// ValidateReasons checks a manifest's reasons against its catalog: each for
// an entry of the catalog, at most one per entry (so at most as many as the
// catalog has entries), sorted, Where printable and at most MaxReasonText
// bytes, Via at most MaxReasonVia module versions of the catalog.
func ValidateReasons(c *Catalog, rs []Reason) error {
	if len(rs) > len(c.Providers)+len(c.Modules) {
		return fmt.Errorf("requested_by: %d reasons for %d catalog entries", len(rs), len(c.Providers)+len(c.Modules))
	}
	entries := make(map[string]string, len(c.Providers)+len(c.Modules))
	for _, p := range c.Providers {
		entries[KindProvider+" "+p.Key()] = p.String()
	}
	modules := make(map[string]bool, len(c.Modules))
	for _, m := range c.Modules {
		entries[KindModule+" "+m.Key()] = m.String()
		modules[m.String()] = true
	}
	seen := make(map[string]bool, len(rs))
	for i, r := range rs {
		k := r.Kind + " " + r.Key()
		what := fmt.Sprintf("requested_by %d (%s %s %s)", i, Printable(r.Kind), Printable(r.Address), Printable(r.Version))
		switch {
		case entries[k] == "":
			return fmt.Errorf("%s: not an entry of the catalog", what)
		case seen[k]:
			return fmt.Errorf("%s: listed twice", what)
		case i > 0 && !reasonLess(rs[i-1], r):
			return fmt.Errorf("%s: not sorted by kind, address and version", what)
		case r.Where == "" || len(r.Where) > MaxReasonText || Printable(r.Where) != r.Where:
			return fmt.Errorf("%s: where is empty, over %d bytes or not printable", what, MaxReasonText)
		case len(r.Via) > MaxReasonVia:
			return fmt.Errorf("%s: a chain of %d module calls, over %d", what, len(r.Via), MaxReasonVia)
		}
		for _, v := range r.Via {
			if !modules[v] {
				return fmt.Errorf("%s: via %q, which is not a module version of the catalog", what, Printable(v))
			}
		}
		seen[k] = true
	}
	return nil
}

func reasonLess(a, b Reason) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Address != b.Address {
		return a.Address < b.Address
	}
	return a.Version < b.Version
}
