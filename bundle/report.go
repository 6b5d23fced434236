package bundle

import (
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Report is what Check found; 'airgap verify --json' prints it.
type Report struct {
	OK         bool          `json:"ok"`
	Bundle     string        `json:"bundle"`
	File       string        `json:"file"`
	Signer     verify.Signer `json:"signer"`
	Compressed bool          `json:"compressed"`
	Tool       string        `json:"tool"`
	Delta      *Delta        `json:"delta,omitempty"`
	Providers  int           `json:"provider_versions"`
	Packages   int           `json:"provider_packages"`
	Modules    int           `json:"module_versions"`
	Blobs      int           `json:"blobs"`
	Omitted    int           `json:"blobs_omitted"`
	Parts      int           `json:"parts,omitempty"`
	Bytes      int64         `json:"bytes"`
	Error      string        `json:"error,omitempty"`
	// Withdraw and Reinstate are the bundle's withdrawals (see Manifest).
	Withdraw  []dist.Withdrawal `json:"withdraw,omitempty"`
	Reinstate []dist.Withdrawal `json:"reinstate,omitempty"`
	// MirrorHashesOnly lists the provider versions that carry a network
	// mirror's hashes only (no publisher signature), each with the mirror.
	MirrorHashesOnly []string `json:"mirror_hashes_only,omitempty"`

	Checks *CheckReport `json:"checks,omitempty"` // the consistency check (check.go)
	// Gates are the gates the export ran; GateResults every entry's
	// results (see dist.GateResult). SBOM is the digest of the bundle's
	// SBOM, SBOMFile where 'verify --sbom' wrote it.
	Gates       []dist.Gate   `json:"gates,omitempty"`
	GateResults []EntryGates  `json:"gate_results,omitempty"`
	SBOM        verify.Digest `json:"sbom,omitempty"`
	SBOMFile    string        `json:"sbom_file,omitempty"`
}

// EntryGates are the gate results on one entry of a bundle.
type EntryGates struct {
	Entry   string            `json:"entry"`
	Results []dist.GateResult `json:"results"`
}

// GateResults lists the gate results on every entry of m that has some,
// in catalog order.
func GateResults(m *Manifest) []EntryGates {
	var out []EntryGates
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			if len(pk.Gates) > 0 {
				out = append(out, EntryGates{"provider " + p.String() + " " + pk.Platform(), pk.Gates})
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		if len(mv.Gates) > 0 {
			out = append(out, EntryGates{"module " + mv.String(), mv.Gates})
		}
	}
	return out
}

// Check reads a whole bundle, checking the signature, every blob's digest
// and what the signed manifest says against itself and its blobs
// (CheckAll), and fills rep. It keeps nothing: what the h1: check must
// spool goes to a temporary file that is removed.
func Check(r io.Reader, kr openpgp.EntityList, rep *Report) error {
	br, err := NewReader(r, kr)
	if err != nil {
		return err
	}
	defer br.Close()
	m := br.Manifest()
	rep.Bundle, rep.Signer, rep.Compressed, rep.Tool, rep.Delta = string(br.ID()), br.Signer(), br.Compressed(), m.Tool, m.Delta
	rep.Providers, rep.Modules = len(m.Catalog.Providers), len(m.Catalog.Modules)
	for _, p := range m.Catalog.Providers {
		rep.Packages += len(p.Packages)
	}
	rep.Omitted = len(m.Blobs) - len(m.Carried())
	rep.Withdraw, rep.Reinstate = m.Withdraw, m.Reinstate
	for _, p := range m.Catalog.Providers {
		if p.MirrorHashesOnly {
			rep.MirrorHashesOnly = append(rep.MirrorHashesOnly, fmt.Sprintf("%s (%s)", p, p.Mirror))
		}
	}
	rep.Gates, rep.GateResults, rep.SBOM = m.Gates, GateResults(m), m.SBOM
	rep.Checks, rep.Blobs, rep.Bytes, err = CheckAll(br, "")
	return err
}

// Text is the report for people.
func (rep *Report) Text() string {
	kind := "full bundle"
	if rep.Delta != nil {
		kind = fmt.Sprintf("delta bundle (base %s; %d blobs omitted, the offline store must already have them)", rep.Delta.Base, rep.Omitted)
	}
	if rep.Parts > 0 {
		kind += fmt.Sprintf(", split into %d parts (each checked against the signed index)", rep.Parts)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "OK: %s\n  kind:      %s\n  bundle:    %s\n  signed by: %s\n  content:   %d provider versions (%d packages), %d module versions\n  blobs:     %d, %s, all digests match\n",
		rep.File, kind, rep.Bundle, rep.Signer, rep.Providers, rep.Packages, rep.Modules, rep.Blobs, progress.Size(rep.Bytes))
	for _, l := range []struct {
		what string
		ws   []dist.Withdrawal
	}{{"withdraws", rep.Withdraw}, {"reinstates", rep.Reinstate}} {
		for _, w := range l.ws {
			fmt.Fprintf(&b, "  %s: %s %s %s (%s)\n", l.what, w.Kind, w.Addr, strings.Join(w.Versions, ", "), dist.Printable(w.Reason))
		}
	}
	if len(rep.MirrorHashesOnly) > 0 {
		fmt.Fprintf(&b, "  attention: %d provider version(s) carry a network mirror's hashes only, no publisher signature (exported with --trust-mirror-hashes; 'airgap import --require-publisher-signatures' refuses them):\n", len(rep.MirrorHashesOnly))
		for _, m := range rep.MirrorHashesOnly {
			fmt.Fprintf(&b, "    %s\n", dist.Printable(m))
		}
	}
	for _, g := range rep.Gates {
		fail := ""
		if g.FailLevel != "" {
			fail = ", fails at SARIF level " + g.FailLevel
		}
		fmt.Fprintf(&b, "  gate:      %s over every %s entry (%s%s)\n", g.Name, strings.TrimSuffix(g.For, "s"), dist.Printable(g.Tool), fail)
		fmt.Fprintf(&b, "             %s\n", dist.Printable(strings.Join(g.Command, " ")))
	}
	for _, e := range rep.GateResults {
		for _, r := range e.Results {
			fmt.Fprintf(&b, "    %s: %s\n", dist.Printable(e.Entry), r.Summary())
		}
	}
	switch {
	case rep.SBOM == "":
		b.WriteString("  SBOM:      none (the bundle was made by an airgap that did not write one)\n")
	case rep.Checks != nil && rep.Checks.SBOM == "checked":
		fmt.Fprintf(&b, "  SBOM:      %s (CycloneDX 1.6): made again from the bundle's bytes, identical to the signed one\n", rep.SBOM)
	default:
		fmt.Fprintf(&b, "  SBOM:      %s (CycloneDX 1.6): checked at import (this delta omits zips it describes)\n", rep.SBOM)
	}
	if rep.SBOMFile != "" {
		fmt.Fprintf(&b, "  SBOM written to %s\n", rep.SBOMFile)
	}
	b.WriteString(rep.Checks.Summary("  "))
	// The signer's name comes from the bundle: escape control characters.
	return dist.PrintableLines(b.String())
}
