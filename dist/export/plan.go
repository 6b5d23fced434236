package export

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

// PlanItem is one resolved provider or module version of an export plan
// ('airgap export --dry-run --json').
type PlanItem struct {
	Kind      string   `json:"kind"` // provider or module
	Address   string   `json:"address"`
	Version   string   `json:"version"`
	Platforms []string `json:"platforms,omitempty"`
	Source    string   `json:"source,omitempty"` // modules: where the archive comes from
	Why       string   `json:"requested_by,omitempty"`
}

// Status is a progress status function for an export: packages done of
// total (and the share), bytes received and the rate, an estimate of the
// time left (from the time per package so far), and the downloads under
// way; once every package is done, only the totals.
func (p *Progress) Status(received func() int64) func(time.Duration) string {
	return func(el time.Duration) string {
		p.mu.Lock()
		total, done, act := p.PackagesTotal.Load(), p.PackagesDone.Load(), p.activeLocked()
		p.mu.Unlock()
		if total == 0 {
			return ""
		}
		b := received()
		if done >= total {
			return fmt.Sprintf("%d/%d packages  %s in %s", done, total, human(b), el.Round(time.Second))
		}
		line := fmt.Sprintf("%d/%d packages (%d%%)  %s  %s/s", done, total, done*100/total, human(b), human(int64(float64(b)/max(el.Seconds(), 0.001))))
		if done > 0 {
			left := time.Duration(float64(el) / float64(done) * float64(total-done))
			line += "  ETA " + left.Round(time.Second).String()
		}
		if len(act) > 0 {
			line += "  ↓ " + dist.Printable(strings.Join(act, ", "))
		}
		return line
	}
}

// Summary is what an export did ('airgap export --json'; for --dry-run,
// the plan).
type Summary struct {
	DryRun     bool              `json:"dry_run"`
	Out        string            `json:"out,omitempty"`
	Size       int64             `json:"size_bytes,omitempty"`
	Plan       []PlanItem        `json:"plan"`
	Providers  int               `json:"provider_versions"`
	Modules    int               `json:"module_versions"`
	Blobs      int               `json:"blobs"`
	BlobBytes  int64             `json:"blob_bytes"`
	Downloaded int64             `json:"downloaded_bytes"`
	Cached     int               `json:"packages_from_cache"`
	Millis     int64             `json:"duration_ms"`
	Delta      string            `json:"delta_base,omitempty"`
	Omitted    int               `json:"blobs_omitted,omitempty"`
	Gaps       []string          `json:"platform_gaps"`
	Withdraw   []dist.Withdrawal `json:"withdraw"`
	// MirrorHashesOnly: provider versions carried with a network mirror's
	// hashes only (--trust-mirror-hashes), each with the mirror's URL.
	MirrorHashesOnly []string `json:"mirror_hashes_only"`
	// DocsMissing: provider versions exported without their
	// documentation, each with why (docsReason).
	DocsMissing []string          `json:"docs_missing"`
	Reinstate   []dist.Withdrawal `json:"reinstate"`
	Warnings    []string          `json:"warnings"`
	// LeftOut: versions a constraint matched that the offline store
	// withdrew (--have), left out.
	LeftOut []string `json:"left_out"`
	// PublisherKeys: each key that signed SHA256SUMS, per namespace (not
	// in a dry run, which downloads no SHA256SUMS).
	PublisherKeys []PublisherKey `json:"publisher_keys"`
	// Gates says what each gate did (or, for a dry run, would run over);
	// GateReports is where the reports are; SBOM is the bundle's SBOM
	// blob.
	Gates       []GateSummary `json:"gates"`
	GateReports string        `json:"gate_reports,omitempty"`
	SBOM        string        `json:"sbom,omitempty"`
}

// GateSummary is one gate of an export.
type GateSummary struct {
	Name    string        `json:"name"`
	For     string        `json:"for"`
	Tool    string        `json:"tool,omitempty"`
	Entries int           `json:"entries"` // entries it ran (would run) over
	Passed  int           `json:"passed"`
	Waived  []WaivedEntry `json:"waived"`
}

// WaivedEntry is an entry that failed a gate and was let through.
type WaivedEntry struct {
	Entry  string          `json:"entry"`
	Result dist.GateResult `json:"result"`
}

// Summarize fills a Summary from a finished (or dry) run.
func (r *Result) Summarize(dryRun bool, elapsed time.Duration) *Summary {
	s := &Summary{DryRun: dryRun, Plan: r.Planned, Downloaded: r.Bytes, Cached: r.Cached,
		Millis: elapsed.Milliseconds(), Gaps: r.Gaps, Warnings: r.Warnings}
	if s.Plan == nil {
		s.Plan = []PlanItem{}
	}
	if s.Gaps == nil {
		s.Gaps = []string{}
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	s.MirrorHashesOnly = append([]string{}, r.MirrorHashesOnly...)
	s.DocsMissing = append([]string{}, r.DocsMissing...)
	sort.Strings(s.DocsMissing)
	s.LeftOut = append([]string{}, r.LeftOut...)
	s.Withdraw, s.Reinstate, s.PublisherKeys = []dist.Withdrawal{}, []dist.Withdrawal{}, []PublisherKey{}
	s.Gates = []GateSummary{}
	if m := r.Manifest; m != nil {
		s.Providers, s.Modules = len(m.Catalog.Providers), len(m.Catalog.Modules)
		s.Withdraw = append(s.Withdraw, m.Withdraw...)
		s.Reinstate = append(s.Reinstate, m.Reinstate...)
		s.Blobs, s.BlobBytes = m.Totals()
		s.Gates = gateSummaries(r.gates, &m.Catalog, r.Planned, dryRun)
		if m.SBOM != "" {
			s.SBOM = string(m.SBOM)
		}
	}
	if len(s.Gates) > 0 && !dryRun {
		s.GateReports = r.GateReports
	}
	return s
}

// gateSummaries counts each gate's results on the catalog (for a dry run,
// the entries it would run over).
func gateSummaries(gates []GateSpec, cat *dist.Catalog, plan []PlanItem, dryRun bool) []GateSummary {
	out := []GateSummary{}
	for _, g := range gates {
		gs := GateSummary{Name: g.Name, For: g.For, Tool: g.Tool, Waived: []WaivedEntry{}}
		tally := func(entry string, rs []dist.GateResult) {
			gs.Entries++
			for _, res := range rs {
				switch {
				case res.Gate != g.Name:
				case res.Status == dist.GatePassed:
					gs.Passed++
				default:
					gs.Waived = append(gs.Waived, WaivedEntry{Entry: entry, Result: res})
				}
			}
		}
		if g.For == dist.GateModules {
			for _, mv := range cat.Modules {
				tally("module "+mv.String(), mv.Gates)
			}
		} else {
			for _, p := range cat.Providers {
				for _, pk := range p.Packages {
					tally("provider "+p.String()+" "+pk.Platform(), pk.Gates)
				}
			}
			for _, it := range plan {
				if dryRun && it.Kind == "provider" { // no packages yet: one run per planned platform
					gs.Entries += len(it.Platforms)
				}
			}
		}
		out = append(out, gs)
	}
	return out
}

// Text is the summary for people.
func (s *Summary) Text() string {
	var b strings.Builder
	if s.DryRun {
		fmt.Fprintf(&b, "plan (%d provider versions, %d module versions; no provider package downloaded):\n", s.Providers, s.Modules)
		for _, p := range s.Plan {
			if p.Kind == "provider" {
				fmt.Fprintf(&b, "  provider %s %s: %s\n", dist.Printable(p.Address), dist.Printable(p.Version), dist.Printable(strings.Join(p.Platforms, " ")))
			} else {
				fmt.Fprintf(&b, "  module %s %s: %s\n", dist.Printable(p.Address), dist.Printable(p.Version), dist.Printable(p.Source))
			}
			if p.Why != "" { // what asked for it: a manifest block, a project file, a module calling it
				fmt.Fprintf(&b, "    why: %s\n", dist.Printable(p.Why))
			}
		}
	} else {
		fmt.Fprintf(&b, "wrote %s (%s): %d provider versions, %d module versions, %d blobs (%s); downloaded %s, %d packages from the cache, in %gs\n",
			s.Out, human(s.Size), s.Providers, s.Modules, s.Blobs, human(s.BlobBytes), human(s.Downloaded), s.Cached, (time.Duration(s.Millis) * time.Millisecond).Seconds())
	}
	for _, k := range s.PublisherKeys {
		declared := ""
		if k.Declared {
			declared = "; declared new (--accept-new-publisher-key)"
		}
		fmt.Fprintf(&b, "  %s key %s %s (%s): %d provider versions%s\n", k.Namespace, verify.GroupFingerprint(k.Fingerprint), dist.Printable(k.Identity), k.Trust, len(k.Providers), declared)
	}
	for _, w := range s.Withdraw {
		fmt.Fprintf(&b, "  withdraw %s %s %s: %s\n", dist.Printable(w.Kind), dist.Printable(w.Addr), dist.Printable(strings.Join(w.Versions, ", ")), dist.Printable(w.Reason))
	}
	for _, w := range s.Reinstate {
		fmt.Fprintf(&b, "  reinstate %s %s %s: %s\n", dist.Printable(w.Kind), dist.Printable(w.Addr), dist.Printable(strings.Join(w.Versions, ", ")), dist.Printable(w.Reason))
	}
	if len(s.MirrorHashesOnly) > 0 {
		fmt.Fprintf(&b, "carried with a network mirror's hashes only, no publisher signature (the bundle marks them; 'airgap import --require-publisher-signatures' refuses them) (%d):\n", len(s.MirrorHashesOnly))
		for _, m := range s.MirrorHashesOnly {
			fmt.Fprintf(&b, "  %s\n", m)
		}
	}
	if len(s.DocsMissing) > 0 {
		fmt.Fprintf(&b, "provider versions carried without their documentation (%d):\n", len(s.DocsMissing))
		for _, d := range s.DocsMissing {
			fmt.Fprintf(&b, "  %s\n", dist.Printable(d))
		}
	}
	if len(s.LeftOut) > 0 {
		fmt.Fprintf(&b, "left out, withdrawn in the offline store (--have; a reinstate block in the manifest carries one again) (%d):\n", len(s.LeftOut))
		for _, l := range s.LeftOut {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if len(s.Gaps) > 0 {
		fmt.Fprintf(&b, "requested platforms the provider does not publish, so not carried (%d):\n", len(s.Gaps))
		for _, g := range s.Gaps {
			fmt.Fprintf(&b, "  %s\n", g)
		}
	}
	for _, g := range s.Gates {
		if s.DryRun {
			per := map[string]string{dist.GateModules: "module version", dist.GateProviders: "provider package"}[g.For]
			fmt.Fprintf(&b, "  gate %s: would run %d time(s), once per %s\n", g.Name, g.Entries, per)
			continue
		}
		fmt.Fprintf(&b, "gate %s (%s; %s): %d passed, %d waived\n", g.Name, g.For, dist.Printable(g.Tool), g.Passed, len(g.Waived))
		for _, w := range g.Waived {
			fmt.Fprintf(&b, "  waived: %s: %s\n", dist.Printable(w.Entry), w.Result.Summary())
		}
	}
	if s.GateReports != "" {
		fmt.Fprintf(&b, "gate reports: %s\n", s.GateReports)
	}
	if s.SBOM != "" && !s.DryRun {
		fmt.Fprintf(&b, "SBOM (CycloneDX 1.6): %s in the bundle ('airgap verify --sbom FILE' writes it)\n", s.SBOM)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", dist.PrintableLines(w))
	}
	// Addresses, versions, sources and warnings come from registries and
	// manifests: escape what could drive the terminal.
	return dist.PrintableLines(b.String())
}

// LoadRequest reads what to export from a manifest or (when manifest is "")
// a project directory (in: the values of its variables, see FromProject). A request for nothing is refused with ErrEmpty
// unless allowEmpty: a bundle with nothing in it is found out only on the
// other side of the gap.
func LoadRequest(manifest, from string, platforms []string, allowEmpty bool, in tfconfig.Inputs) (*Request, error) {
	var req *Request
	var err error
	if manifest != "" {
		req, err = ParseSpec(manifest, platforms)
	} else {
		req, err = FromProject(from, platforms, in)
	}
	if err != nil {
		return nil, err
	}
	if req.Empty() && !allowEmpty {
		return nil, fmt.Errorf("%w: %s%s asks for no provider and no module\nhint: add provider or module blocks (or required_providers to the project), or pass --allow-empty to write an empty bundle on purpose", ErrEmpty, manifest, from)
	}
	return req, nil
}
