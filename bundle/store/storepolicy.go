package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// StorePolicy is a store's import policy: its import.hcl, read with the
// files it names. Every import into the store applies it (the import's
// flags add to it), 'airgap inventory --json' carries it whole (with the
// station keyring's public keys and the pins file's namespaces), and
// 'airgap verify --against' applies it to forecast the import.
//
//	# STORE/import.hcl
//	require_gate                 = ["modules:trivy", "providers:govulncheck"]
//	require_publisher_signatures = true              # refuse site re-signed and mirror-hashes-only providers
//	publisher_pins               = "pins.hcl"         # the pins file (see PinsFile), relative to the store
//	approvals {                                       # the two-person rule
//	  keyring  = "stations.pub.asc"                   # the transfer stations' public keys, relative to the store
//	  required = 1                                    # approvals by distinct keys of it, per bundle
//	}
//	publisher_key_approvals = "station"               # new publisher keys only by a station approval
type StorePolicy struct {
	File                       string          `json:"file,omitempty"` // ImportConfigName, or "" when the store has none
	RequireGates               []string        `json:"require_gates"`
	RequirePublisherSignatures bool            `json:"require_publisher_signatures"`
	PublisherKeyApprovals      string          `json:"publisher_key_approvals"`
	Approvals                  *ApprovalPolicy `json:"approvals,omitempty"`
	Pins                       *PinsPolicy     `json:"publisher_pins,omitempty"`
	// Chain is the chain-of-custody policy (ChainPolicy).
	Chain *ChainPolicy `json:"chain,omitempty"`

	gates []GateRequirement
	pins  *PinsFile
}

// How new publisher keys may be approved (StorePolicy.PublisherKeyApprovals).
const (
	// keyApprovalsAnywhere: by the bundle's declaration (export
	// --accept-new-publisher-key), import --accept-publisher-key or a
	// station approval.
	keyApprovalsAnywhere = "anywhere"
	// KeyApprovalsStation: only by a station approval of the bundle.
	KeyApprovalsStation = "station"
)

// PinsPolicy is the store's pins file, as the inventory carries it.
type PinsPolicy struct {
	File       string            `json:"file"`
	Unlisted   string            `json:"unlisted"` // "trust-on-first-use" or "refuse"
	Namespaces []PinnedNamespace `json:"namespaces"`
	// Releases: the file's release blocks (Namespace the product); absent
	// when it has none, as in inventories of before release blocks.
	Releases []PinnedNamespace `json:"releases,omitempty"`
}

// PinnedNamespace is one namespace of a pins file.
type PinnedNamespace struct {
	Namespace string   `json:"namespace"`
	Keys      []string `json:"keys"`
}

// Limits on a policy read back from an inventory.
const (
	maxPolicyGates      = 64
	maxPolicyNamespaces = 10000
)

// importHCL is import.hcl's schema.
type importHCL struct {
	RequireGate                []string      `hcl:"require_gate,optional"`
	RequirePublisherSignatures *bool         `hcl:"require_publisher_signatures,optional"`
	PublisherPins              *string       `hcl:"publisher_pins,optional"`
	PublisherKeyApprovals      *string       `hcl:"publisher_key_approvals,optional"`
	Approvals                  *approvalsHCL `hcl:"approvals,block"`
	Chain                      *chainHCL     `hcl:"chain,block"`
}

type approvalsHCL struct {
	Keyring  string    `hcl:"keyring"`
	Required int       `hcl:"required"`
	DefRange hcl.Range `hcl:",def_range"`
}

const importHCLHint = "hint: " + ImportConfigName + " holds require_gate = [\"modules:NAME\", \"providers:NAME\", \"NAME\"], require_publisher_signatures = true, " +
	"publisher_pins = \"pins.hcl\", publisher_key_approvals = \"station\", an approvals block (its keyring and required) and a chain block (its keyring); see 'airgap help import'"

// ReadStorePolicy reads root's import.hcl and the files it names (paths
// relative to the store). No file is no policy. Errors name FILE:LINE:COL.
func ReadStorePolicy(root string) (*StorePolicy, error) {
	sp := &StorePolicy{PublisherKeyApprovals: keyApprovalsAnywhere, RequireGates: []string{}}
	path := filepath.Join(root, ImportConfigName)
	fi, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return sp, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular() || fi.Size() > maxImportConfig:
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxImportConfig)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	release, err := dist.AdmitHCL(src, path)
	if err != nil {
		return nil, err
	}
	defer release()
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	var cfg importHCL
	if !diags.HasErrors() {
		diags = gohcl.DecodeBody(f.Body, nil, &cfg)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s\n%s\nthe store was not changed", strings.Join(dist.DiagLines(diags), "\n"), importHCLHint)
	}
	sp.File = ImportConfigName
	at := func(name string) string {
		if body, ok := f.Body.(*hclsyntax.Body); ok {
			if a := body.Attributes[name]; a != nil {
				r := a.SrcRange
				return fmt.Sprintf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, name)
			}
		}
		return path + ": " + name
	}
	fail := func(where string, err error) error {
		return fmt.Errorf("%s: %v\n%s\nthe store was not changed", where, err, importHCLHint)
	}
	for _, s := range cfg.RequireGate {
		r, err := ParseGateRequirement(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w\nthe store was not changed", path, err)
		}
		sp.gates = append(sp.gates, r)
		sp.RequireGates = append(sp.RequireGates, r.String())
	}
	if cfg.RequirePublisherSignatures != nil {
		sp.RequirePublisherSignatures = *cfg.RequirePublisherSignatures
	}
	if cfg.PublisherPins != nil {
		p := storeRelative(root, *cfg.PublisherPins)
		if sp.pins, err = ReadPinsFile(p); err != nil {
			return nil, fail(at("publisher_pins"), err)
		}
		sp.Pins = sp.pins.Policy(*cfg.PublisherPins)
	}
	if a := cfg.Approvals; a != nil {
		where := fmt.Sprintf("%s:%d:%d: approvals", a.DefRange.Filename, a.DefRange.Start.Line, a.DefRange.Start.Column)
		if a.Required < 1 || a.Required > MaxRequiredApprovals {
			return nil, fail(where, fmt.Errorf("required = %d: give 1 to %d", a.Required, MaxRequiredApprovals))
		}
		kr, err := verify.ReadKeyringFile(storeRelative(root, a.Keyring))
		if err != nil {
			return nil, fail(where, err)
		}
		if sp.Approvals, err = newApprovalPolicy(a.Keyring, a.Required, kr); err != nil {
			return nil, fail(where, err)
		}
	}
	if c := cfg.Chain; c != nil {
		where := fmt.Sprintf("%s:%d:%d: chain", c.DefRange.Filename, c.DefRange.Start.Line, c.DefRange.Start.Column)
		kr, err := verify.ReadKeyringFile(storeRelative(root, c.Keyring))
		if err != nil {
			return nil, fail(where, err)
		}
		if sp.Chain, err = newChainPolicy(c.Keyring, kr); err != nil {
			return nil, fail(where, err)
		}
	}
	if v := cfg.PublisherKeyApprovals; v != nil {
		switch *v {
		case keyApprovalsAnywhere, KeyApprovalsStation:
			sp.PublisherKeyApprovals = *v
		default:
			return nil, fail(at("publisher_key_approvals"), fmt.Errorf("%q: want \"station\" (new publisher keys only by a station approval) or \"anywhere\"", dist.Printable(*v)))
		}
		if *v == KeyApprovalsStation && sp.Approvals == nil {
			return nil, fail(at("publisher_key_approvals"), errors.New("\"station\" needs an approvals block (the station keys whose approvals count)"))
		}
	}
	return sp, nil
}

// storeRelative is p, relative to the store unless absolute.
func storeRelative(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// newApprovalPolicy is the approvals block of keyring kr.
func newApprovalPolicy(name string, required int, kr openpgp.EntityList) (*ApprovalPolicy, error) {
	ap := &ApprovalPolicy{Keyring: name, Required: required, keyring: kr, Keys: []verify.Signer{}}
	var armor bytes.Buffer
	for _, e := range kr {
		if e.PrivateKey != nil {
			return nil, fmt.Errorf("the station keyring %s holds a private key: it takes the stations' public keys only", name)
		}
		ap.Keys = append(ap.Keys, verify.Signer{KeyID: verify.KeyID(e), Fingerprint: verify.Fingerprint(e), Identity: verify.Identity(e)})
		if err := verify.ArmorPublic(&armor, e); err != nil {
			return nil, err
		}
	}
	if len(kr) < required {
		return nil, fmt.Errorf("required = %d, but the station keyring %s has %d key(s): approvals count once per key", required, name, len(kr))
	}
	ap.Armor = armor.String()
	return ap, nil
}

// Policy is the pins file as a store's policy carries it.
func (pf *PinsFile) Policy(name string) *PinsPolicy {
	pp := &PinsPolicy{File: name, Unlisted: "trust-on-first-use", Namespaces: []PinnedNamespace{}}
	if pf.RefuseUnlisted {
		pp.Unlisted = "refuse"
	}
	for ns, keys := range pf.Namespaces {
		pp.Namespaces = append(pp.Namespaces, PinnedNamespace{Namespace: ns, Keys: append([]string{}, keys...)})
	}
	sort.Slice(pp.Namespaces, func(i, j int) bool { return pp.Namespaces[i].Namespace < pp.Namespaces[j].Namespace })
	for product, keys := range pf.Releases {
		pp.Releases = append(pp.Releases, PinnedNamespace{Namespace: product, Keys: append([]string{}, keys...)})
	}
	sort.Slice(pp.Releases, func(i, j int) bool { return pp.Releases[i].Namespace < pp.Releases[j].Namespace })
	return pp
}

// load rebuilds, for a policy read back from an inventory, what the rules
// need (gate requirements, the pins file, the station keyring) and checks
// it: the inventory is untrusted input.
func (sp *StorePolicy) load() error {
	if len(sp.RequireGates) > maxPolicyGates {
		return fmt.Errorf("more than %d required gates", maxPolicyGates)
	}
	sp.gates = nil
	for _, g := range sp.RequireGates {
		r, err := ParseGateRequirement(g)
		if err != nil {
			return err
		}
		sp.gates = append(sp.gates, r)
	}
	switch sp.PublisherKeyApprovals {
	case keyApprovalsAnywhere, KeyApprovalsStation:
	case "":
		sp.PublisherKeyApprovals = keyApprovalsAnywhere
	default:
		return fmt.Errorf("publisher_key_approvals %q", dist.Printable(sp.PublisherKeyApprovals))
	}
	if p := sp.Pins; p != nil {
		if len(p.Namespaces) > maxPolicyNamespaces {
			return fmt.Errorf("its pins file lists more than %d namespaces", maxPolicyNamespaces)
		}
		pf := &PinsFile{Path: p.File, Namespaces: map[string][]string{}, RefuseUnlisted: p.Unlisted == "refuse"}
		if p.Unlisted != "refuse" && p.Unlisted != "trust-on-first-use" {
			return fmt.Errorf("its pins file's unlisted %q", dist.Printable(p.Unlisted))
		}
		for _, n := range p.Namespaces {
			key, err := pinsNamespaceKey(n.Namespace)
			if err != nil || key != n.Namespace || len(n.Keys) == 0 || len(n.Keys) > maxPinnedKeys {
				return fmt.Errorf("its pins file's namespace %q", dist.Printable(n.Namespace))
			}
			for _, k := range n.Keys {
				if fp, err := verify.ParseFingerprint(k); err != nil || fp != k {
					return fmt.Errorf("its pins file's key %q", dist.Printable(k))
				}
			}
			pf.Namespaces[key] = n.Keys
		}
		pf.Releases = map[string][]string{}
		for _, n := range p.Releases {
			if n.Namespace != dist.ProductTerraform && n.Namespace != dist.ProductTofu || pf.Releases[n.Namespace] != nil || len(n.Keys) == 0 || len(n.Keys) > maxPinnedKeys {
				return fmt.Errorf("its pins file's release %q", dist.Printable(n.Namespace))
			}
			for _, k := range n.Keys {
				if fp, err := verify.ParseFingerprint(k); err != nil || fp != k {
					return fmt.Errorf("its pins file's key %q", dist.Printable(k))
				}
			}
			pf.Releases[n.Namespace] = n.Keys
		}
		sp.pins = pf
	}
	if a := sp.Approvals; a != nil {
		if a.Required < 1 || a.Required > MaxRequiredApprovals {
			return fmt.Errorf("approvals.required %d", a.Required)
		}
		kr, err := verify.ReadKeyring(strings.NewReader(a.Armor))
		if err != nil {
			return fmt.Errorf("the station keyring: %v", err)
		}
		ap, err := newApprovalPolicy(a.Keyring, a.Required, kr)
		if err != nil {
			return err
		}
		sp.Approvals = ap
	}
	if sp.PublisherKeyApprovals == KeyApprovalsStation && sp.Approvals == nil {
		return errors.New("publisher_key_approvals \"station\" without an approvals block")
	}
	if c := sp.Chain; c != nil {
		kr, err := verify.ReadKeyring(strings.NewReader(c.Armor))
		if err != nil {
			return fmt.Errorf("the chain keyring: %v", err)
		}
		if sp.Chain, err = newChainPolicy(c.Keyring, kr); err != nil {
			return err
		}
	}
	return nil
}

// Extra is what an import's flags add to the store's policy (and what
// 'verify --against' is given to forecast such an import).
type Extra struct {
	Gates                      []GateRequirement // --require-gate
	RequirePublisherSignatures bool              // --require-publisher-signatures
	Pins                       *PinsFile         // --publisher-pins
	Accept                     []string          // --accept-publisher-key fingerprints
}

// RuleSet is the policies an import into a store runs (after
// CatalogRules), in order, and handles on those whose decisions the
// import reports.
type RuleSet struct {
	Policies  []Policy
	Keys      *KeyPins
	Approvals *Approvals // nil: the store requires none
	Gates     []GateRequirement
}

// Rules is the rule set of an import into a store with policy sp and the
// import's flags x. It refuses flags the policy rules out: approving a
// publisher key at import when keys are approved only at the station, and
// a pins file other than the store's.
func (sp *StorePolicy) Rules(x Extra) (*RuleSet, error) {
	rs := &RuleSet{Gates: append(append([]GateRequirement{}, sp.gates...), x.Gates...)}
	stationOnly := sp.PublisherKeyApprovals == KeyApprovalsStation
	if stationOnly && len(x.Accept) > 0 {
		return nil, fmt.Errorf("--accept-publisher-key: this store takes new publisher keys only from a transfer station's approval (%s: publisher_key_approvals = \"station\")\nhint: approve the key at the transfer station: 'airgap approve --key STATION.key.asc --accept-publisher-key FINGERPRINT … BUNDLE'", ImportConfigName)
	}
	pins := sp.pins
	if x.Pins != nil {
		if pins != nil {
			return nil, fmt.Errorf("--publisher-pins %s: the store's %s names its own pins file (%s); edit that one", dist.Printable(x.Pins.Path), ImportConfigName, dist.Printable(sp.Pins.File))
		}
		pins = x.Pins
	}
	rs.Policies = append(rs.Policies, RequireGates(rs.Gates))
	if sp.RequirePublisherSignatures || x.RequirePublisherSignatures {
		rs.Policies = append(rs.Policies, requirePublisherSignatures())
	}
	if sp.Approvals != nil {
		rs.Approvals = &Approvals{Policy: sp.Approvals}
		rs.Policies = append(rs.Policies, rs.Approvals)
	}
	rs.Keys = &KeyPins{Pins: pins, Accept: x.Accept, Approvals: rs.Approvals, StationOnly: stationOnly}
	rs.Policies = append(rs.Policies, rs.Keys, releaseKeysRule(x.Accept, rs.Approvals, stationOnly, pins))
	if sp.Chain != nil {
		rs.Policies = append(rs.Policies, sp.Chain)
	}
	return rs, nil
}

// Lines describes the policy for people, one rule a line (inventory, verify).
func (sp *StorePolicy) Lines() []string {
	var out []string
	if len(sp.RequireGates) > 0 {
		out = append(out, "every bundle must carry passing or waived results of: "+strings.Join(sp.RequireGates, ", "))
	}
	if sp.RequirePublisherSignatures {
		out = append(out, "every provider needs its publisher's signature (no site re-signed or mirror-hashes-only ones)")
	}
	if a := sp.Approvals; a != nil {
		var keys []string
		for _, k := range a.Keys {
			keys = append(keys, keyName(k))
		}
		out = append(out, fmt.Sprintf("every bundle needs %d approval(s) by distinct station keys of %s: %s", a.Required, dist.Printable(a.Keyring), strings.Join(keys, "; ")))
	}
	if sp.PublisherKeyApprovals == KeyApprovalsStation {
		out = append(out, "new publisher keys, a namespace's first one too, are approved only at the transfer station (not by the bundle, not at import, not by first use)")
	}
	if c := sp.Chain; c != nil {
		var keys []string
		for _, k := range c.Keys {
			keys = append(keys, keyName(k))
		}
		out = append(out, fmt.Sprintf("every hop of a bundle's chain of custody must be signed by a key of %s: %s", dist.Printable(c.Keyring), strings.Join(keys, "; ")))
	}
	if p := sp.Pins; p != nil {
		out = append(out, fmt.Sprintf("the pins file %s decides the keys of %d namespace(s); unlisted namespaces: %s", dist.Printable(p.File), len(p.Namespaces), p.Unlisted))
	}
	return out
}
