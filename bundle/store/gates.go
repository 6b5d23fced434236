package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

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
						}
					}
				}
			}
			if rq.Kind != dist.GateProviders {
				for _, m := range in.Manifest.Catalog.Modules {
					if !has(m.Gates) {
						missing = append(missing, fmt.Sprintf("%s: module %s", rq.Gate, m))
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
			return fmt.Errorf("%w: %d entr%s without a passing or waived result of a gate this store requires (%s):\n  %s%s\n"+
				"hint: export them again with a gate block of that name in the export manifest (its for and command: docs/export.md, Gates and SBOMs, has examples); "+
				"the store requires it through --require-gate or %s",
				ErrGateMissing, n, map[bool]string{true: "y", false: "ies"}[n == 1], requirementList(reqs),
				dist.PrintableLines(strings.Join(missing, "\n  ")), more, ImportConfigName)
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

// ImportConfigName is the store's import configuration, read by every
// import into the store (optional):
//
//	# STORE/import.hcl
//	require_gate = ["modules:trivy", "providers:govulncheck"]
//	chain {
//	  keyring = "upstream.pub.asc"   # relative to the store
//	}
//
// require_gate lists gates every bundle must carry a passing or waived
// result of (RequireGates), as --require-gate does; the import's flags add
// to it. chain is the chain-of-custody policy (ChainPolicy). The store's operator writes it; the offline side decides, whatever
// the bundle says.
const ImportConfigName = "import.hcl"

// maxImportConfig bounds import.hcl.
const maxImportConfig = 64 << 10

// ImportConfig is import.hcl.
type ImportConfig struct {
	RequireGate []string `hcl:"require_gate,optional"`
	// Chain is the chain-of-custody policy (chainpolicy.go).
	Chain *ChainConfig `hcl:"chain,block"`
}

// readImportConfig reads root's import.hcl (a zero config when it is
// absent) and returns it with its path. Errors name file:line:col.
func readImportConfig(root string) (*ImportConfig, string, error) {
	path := filepath.Join(root, ImportConfigName)
	fi, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return &ImportConfig{}, path, nil
	case err != nil:
		return nil, path, err
	case !fi.Mode().IsRegular() || fi.Size() > maxImportConfig:
		return nil, path, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxImportConfig)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, path, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	var cfg ImportConfig
	if !diags.HasErrors() {
		diags = gohcl.DecodeBody(f.Body, nil, &cfg)
	}
	if diags.HasErrors() {
		return nil, path, fmt.Errorf("%s\nhint: %s holds require_gate = [\"modules:NAME\", \"providers:NAME\", \"NAME\"] and a chain { keyring = \"FILE\" } block\nthe store was not changed",
			strings.Join(dist.DiagLines(diags), "\n"), ImportConfigName)
	}
	return &cfg, path, nil
}

// ReadImportConfig reads root's import.hcl and returns the gates it
// requires (none when the file is absent). Errors name file:line:col.
func ReadImportConfig(root string) ([]GateRequirement, error) {
	cfg, path, err := readImportConfig(root)
	if err != nil {
		return nil, err
	}
	var out []GateRequirement
	for _, s := range cfg.RequireGate {
		r, err := ParseGateRequirement(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w\nthe store was not changed", path, err)
		}
		out = append(out, r)
	}
	return out, nil
}
