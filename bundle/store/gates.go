package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airgap/airgap/dist"
)

// GateRequirement is a gate the offline side demands of every entry a
// bundle brings: a result of gate Gate that passed or was waived on every
// module version (Kind "modules"), every provider package ("providers"),
// or both (Kind "").
type GateRequirement struct {
	Gate, Kind string
}

func (g GateRequirement) String() string {
	if g.Kind == "" {
		return g.Gate
	}
	return g.Kind + ":" + g.Gate
}

// ParseGateRequirement reads "NAME" (every entry), "modules:NAME" or
// "providers:NAME".
func ParseGateRequirement(s string) (GateRequirement, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok {
		kind, name = "", s
	}
	if kind != "" && kind != dist.GateModules && kind != dist.GateProviders || !dist.ValidGateName(name) {
		return GateRequirement{}, fmt.Errorf("required gate %q: write NAME (every entry), modules:NAME or providers:NAME; a gate name has lowercase letters, digits, - and _", dist.Printable(s))
	}
	return GateRequirement{Gate: name, Kind: kind}, nil
}

// ErrGateMissing: a bundle lacks a gate result the store requires.
var ErrGateMissing = errors.New("the bundle lacks required gate results")

// maxNamed bounds the entries a refusal names (the count is always given).
const maxNamed = 20

// RequireGates is the import policy behind 'import --require-gate' and
// the store's import.hcl: a bundle in which any entry (of the kind a
// requirement names) has no result of a required gate is refused, naming
// the entries; nothing is imported. A bundle holds only passed and waived
// results (an entry that failed a gate without a waiver fails its export,
// and the consistency check refuses a result whose status disagrees with
// its exit status and findings), so having the result is the test.
func RequireGates(reqs []GateRequirement) Policy {
	return PolicyFunc(func(in *PolicyInput, out *PolicyResult) error {
		if len(reqs) == 0 {
			return nil
		}
		var missing []string
		var rs []Refusal
		for _, rq := range reqs {
			has := func(rs []dist.GateResult) bool {
				for _, r := range rs {
					if r.Gate == rq.Gate && (r.Status == dist.GatePassed || r.Status == dist.GateWaived) {
						return true
					}
				}
				return false
			}
			if rq.Kind != dist.GateModules {
				for _, p := range in.Manifest.Catalog.Providers {
					for _, pk := range p.Packages {
						if !has(pk.Gates) {
							missing = append(missing, fmt.Sprintf("%s: provider %s %s", rq.Gate, p, pk.Platform()))
							rs = append(rs, providerRefusal(ruleGate, p, fmt.Sprintf("no passing or waived result of gate %s on %s (the store requires %s)", rq.Gate, pk.Platform(), rq)))
						}
					}
				}
			}
			if rq.Kind != dist.GateProviders {
				for _, m := range in.Manifest.Catalog.Modules {
					if !has(m.Gates) {
						missing = append(missing, fmt.Sprintf("%s: module %s", rq.Gate, m))
						rs = append(rs, moduleRefusal(ruleGate, m, fmt.Sprintf("no passing or waived result of gate %s (the store requires %s)", rq.Gate, rq)))
					}
				}
			}
		}
		if len(missing) > 0 {
			n := len(missing)
			more := ""
			if n > maxNamed {
				missing, more = missing[:maxNamed], fmt.Sprintf("\n  … and %d more", n-maxNamed)
			}
			out.Refuse(fmt.Errorf("%w: %d entr%s without a passing or waived result of a gate this store requires (%s):\n  %s%s\n"+
				"hint: export them again with a gate block of that name in the export manifest (its for and command: docs/export.md, Gates and SBOMs, has examples); "+
				"the store requires it through --require-gate or %s",
				ErrGateMissing, n, map[bool]string{true: "y", false: "ies"}[n == 1], requirementList(reqs),
				dist.PrintableLines(strings.Join(missing, "\n  ")), more, ImportConfigName), rs...)
		}
		return nil
	})
}

func requirementList(reqs []GateRequirement) string {
	s := make([]string, len(reqs))
	for i, r := range reqs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

// ImportConfigName is the store's import policy file, read by every
// import into the store (optional; StorePolicy documents it). The store's
// operator writes it; the offline side decides, whatever the bundle says.
const ImportConfigName = "import.hcl"

// maxImportConfig bounds import.hcl.
const maxImportConfig = 64 << 10

// ReadImportConfig reads root's import.hcl and returns the gates it
// requires (none when the file is absent). Errors name file:line:col.
func ReadImportConfig(root string) ([]GateRequirement, error) {
	sp, err := ReadStorePolicy(root)
	if err != nil {
		return nil, err
	}
	return sp.gates, nil
}
