package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// PinsFile is the site's own list of which publisher keys may sign the
// providers of which namespace ('airgap verify' and 'airgap import'
// --publisher-pins FILE), written on the offline side and checked from the
// very first import, before any key was ever seen:
//
//	# registry.terraform.io's hashicorp/* providers: HashiCorp's key only
//	namespace "registry.terraform.io/hashicorp" {
//	  keys = ["C874 011F 0AB4 0511 0D02  1055 3436 5D94 72D7 468F"]
//	}
//	unlisted = "trust-on-first-use"   # or "refuse"
//
// A namespace the file lists accepts exactly the keys listed there: a
// provider signed by any other key is refused, whatever the store has
// pinned, the bundle declares or the import is told (the file is the
// site's policy; change the file to change it). A site re-signed provider
// of a listed namespace is accepted only if the site key is listed too.
// Namespaces the file does not list follow the store's pins (trust on
// first use, then a change needs approval), or, with unlisted = "refuse",
// are refused outright.
//
// The keys of Terraform's and OpenTofu's own releases are pinned the same
// way, per product:
//
//	release "terraform" { keys = ["C874 011F 0AB4 0511 0D02  1055 3436 5D94 72D7 468F"] }
//	release "tofu"      { keys = ["E3E6 E43D 84CB 852E ADB0  051D 0C0A F313 E5FD 9F80"] }
//
// A release of a listed product signed by any other key is refused,
// naming the release and the key; a listed key is taken even where the
// store holds the product's releases under another. A product the file
// does not list follows the store's rule for releases (its first key, then
// a change needs approval): unlisted = "refuse" is about namespaces only,
// so a pins file written before release blocks existed means what it did.
type PinsFile struct {
	Path       string
	Namespaces map[string][]string // dist.NamespaceKey -> fingerprints (verify.ParseFingerprint form)
	// Releases: product (dist.ProductTerraform, dist.ProductTofu) ->
	// fingerprints.
	Releases map[string][]string
	// RefuseUnlisted: a namespace not in Namespaces is refused.
	RefuseUnlisted bool
}

// Limits on a pins file (it is written by people, but read as input).
const (
	MaxPinsFileSize = 1 << 20
	maxPinnedKeys   = 64 // per namespace
)

type pinsHCL struct {
	Namespaces []pinsNamespace `hcl:"namespace,block"`
	Releases   []pinsNamespace `hcl:"release,block"`
	Unlisted   *string         `hcl:"unlisted,optional"`
}

type pinsNamespace struct {
	Name     string    `hcl:"name,label"`
	Keys     []string  `hcl:"keys"`
	DefRange hcl.Range `hcl:",def_range"`
}

// ReadPinsFile reads and checks the pins file at path.
func ReadPinsFile(path string) (*PinsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--publisher-pins: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxPinsFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("--publisher-pins %s: %w", path, err)
	}
	return ParsePinsFile(src, path)
}

// ParsePinsFile parses a pins file's text (at most MaxPinsFileSize bytes).
// Errors point at FILE:LINE:COL, unknown blocks and attributes with HCL's
// nearest valid name; namespaces must be HOST/NAMESPACE (a bare namespace
// is refused with the full form to use: pins are per registry, and
// OpenTofu's registry signs its own builds of hashicorp/* providers), keys
// must be fingerprints, and no namespace may be listed twice.
func ParsePinsFile(src []byte, path string) (*PinsFile, error) {
	if len(src) > MaxPinsFileSize {
		return nil, fmt.Errorf("--publisher-pins %s: larger than %d bytes", path, MaxPinsFileSize)
	}
	release, err := dist.AdmitHCL(src, path)
	if err != nil {
		return nil, fmt.Errorf("--publisher-pins %s: %w", path, err)
	}
	defer release()
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, pinsErr(path, dist.DiagLines(diags))
	}
	var ph pinsHCL
	if diags := gohcl.DecodeBody(f.Body, nil, &ph); diags.HasErrors() {
		return nil, pinsErr(path, dist.DiagLines(diags))
	}
	pf := &PinsFile{Path: path, Namespaces: map[string][]string{}, Releases: map[string][]string{}}
	if ph.Unlisted != nil {
		switch *ph.Unlisted {
		case "trust-on-first-use":
		case "refuse":
			pf.RefuseUnlisted = true
		default:
			return nil, pinsErr(path, []string{fmt.Sprintf("unlisted = %q: want \"trust-on-first-use\" or \"refuse\"", dist.Printable(*ph.Unlisted))})
		}
	}
	var problems []string
	blocks := make([]pinsBlock, 0, len(ph.Namespaces)+len(ph.Releases))
	for _, n := range ph.Namespaces {
		blocks = append(blocks, pinsBlock{n, "namespace"})
	}
	for _, n := range ph.Releases {
		blocks = append(blocks, pinsBlock{n, "release"})
	}
	for _, b := range blocks {
		n, into := b.pinsNamespace, pf.Namespaces
		at := fmt.Sprintf("%s:%d:%d: %s %q", n.DefRange.Filename, n.DefRange.Start.Line, n.DefRange.Start.Column, b.kind, dist.Printable(n.Name))
		key, err := "", error(nil)
		if b.kind == "release" {
			into, key = pf.Releases, strings.ToLower(n.Name)
			if key != dist.ProductTerraform && key != dist.ProductTofu {
				err = fmt.Errorf("not a product whose releases airgap carries (terraform, tofu)")
			}
		} else {
			key, err = pinsNamespaceKey(n.Name)
		}
		if err != nil {
			problems = append(problems, at+": "+err.Error())
			continue
		}
		if _, dup := into[key]; dup {
			problems = append(problems, at+": listed twice (as "+key+")")
			continue
		}
		if len(n.Keys) == 0 || len(n.Keys) > maxPinnedKeys {
			problems = append(problems, fmt.Sprintf("%s: keys lists %d fingerprints; give 1 to %d", at, len(n.Keys), maxPinnedKeys))
			continue
		}
		fps := make([]string, 0, len(n.Keys))
		for _, k := range n.Keys {
			fp, err := verify.ParseFingerprint(k)
			if err != nil {
				problems = append(problems, at+": "+firstLine(err.Error()))
				continue
			}
			fps = append(fps, fp)
		}
		sort.Strings(fps)
		into[key] = fps
	}
	if len(problems) > 0 {
		return nil, pinsErr(path, problems)
	}
	return pf, nil
}

// pinsBlock is a namespace or release block of the file (the same form).
type pinsBlock struct {
	pinsNamespace
	kind string
}

// pinsNamespaceKey reads a namespace as the pins file writes it.
func pinsNamespaceKey(s string) (string, error) {
	host, ns, ok := strings.Cut(strings.ToLower(s), "/")
	if !ok {
		return "", fmt.Errorf("give the registry too, e.g. \"%s/%s\" (pins are per registry)", dist.DefaultRegistry, dist.Printable(s))
	}
	if !dist.ValidHost(host) || !dist.ValidProviderName(ns) {
		return "", errors.New("not a provider namespace HOST/NAMESPACE")
	}
	return dist.NamespaceKey(host, ns), nil
}

func pinsErr(path string, lines []string) error {
	return fmt.Errorf("--publisher-pins %s:\n  %s\nhint: the file lists namespace \"HOST/NAMESPACE\" { keys = [\"FINGERPRINT\", …] } blocks, release \"terraform\" or \"tofu\" blocks of the same form, and optionally unlisted = \"refuse\"; see 'airgap help import'",
		dist.Printable(path), dist.PrintableLines(strings.Join(lines, "\n  ")))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// AllowsRelease reports whether the file governs product's releases, and
// if so whether it allows fingerprint fp for them (a product not listed
// is not governed, whatever unlisted says).
func (pf *PinsFile) AllowsRelease(product, fp string) (governed, ok bool) {
	if pf == nil {
		return false, true
	}
	fps, listed := pf.Releases[product]
	if !listed {
		return false, true
	}
	for _, f := range fps {
		if f == fp {
			return true, true
		}
	}
	return true, false
}

// Allows reports whether the file governs namespace ns, and if so whether
// it allows fingerprint fp there. governed is false for a namespace the
// file does not list (then ok says whether unlisted namespaces may go on
// to the store's pins).
func (pf *PinsFile) Allows(ns, fp string) (governed, ok bool) {
	if pf == nil {
		return false, true
	}
	fps, listed := pf.Namespaces[ns]
	if !listed {
		return false, !pf.RefuseUnlisted
	}
	for _, f := range fps {
		if f == fp {
			return true, true
		}
	}
	return true, false
}
