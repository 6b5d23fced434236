package report

import (
	"fmt"
	"strings"

	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Text is the report for people: the verdict and the SBOM, what needs
// attention, then every provider and module (with their gate results),
// the gates, withdrawals and publisher keys, the difference to the
// inventory, and the checks. Everything that came from the bundle or
// the inventory is escaped (dist.Printable) so no string can forge a line
// or drive the terminal.
func (rep *Report) Text() string {
	q := dist.Printable
	var b strings.Builder
	verdict := "OK"
	if rep.Status == StatusNeedsAttention {
		verdict = fmt.Sprintf("OK, NEEDS ATTENTION (%d)", len(rep.Attention))
	}
	kind := "full bundle"
	if rep.Delta != nil {
		kind = fmt.Sprintf("delta bundle (base %s; %d blobs omitted, the offline store must already have them)", q(rep.Delta.Base), rep.Omitted)
	}
	if rep.Parts > 0 {
		kind += fmt.Sprintf(", split into %d parts (each checked against the signed index)", rep.Parts)
	}
	signedBy := ""
	if rep.Signer != nil {
		signedBy = q(rep.Signer.String())
	}
	if rep.SignedAt != nil {
		signedBy += ", on " + rep.SignedAt.Format("2006-01-02 15:04Z")
	}
	fmt.Fprintf(&b, "%s: %s\n  kind:      %s, format %d, written by %s\n  bundle:    %s\n  signed by: %s\n  content:   %d provider versions (%d packages), %d module versions\n  blobs:     %d, %s, all digests match\n",
		verdict, q(rep.File), kind, rep.Format, q(rep.Tool), rep.Bundle, signedBy, rep.ProviderVersions, rep.Packages, rep.ModuleVersions, rep.Blobs, progress.Size(rep.Bytes))
	if rep.Against == nil && rep.keysUnknown() {
		b.WriteString("  keys:      not compared with the store's (give --against the store's 'airgap inventory --json')\n")
	}
	if f := rep.Forecast; rep.OnlyUnapproved() {
		fmt.Fprintf(&b, "  import:    will accept once approved (%s; the forecast at the end lists them)\n", approvalsMissing(f))
	} else if f != nil && f.Verdict == VerdictRefuse {
		fmt.Fprintf(&b, "  import:    WILL REFUSE %s (the forecast at the end lists why)\n", refusalSummary(f.Refused))
	} else if f != nil {
		b.WriteString("  import:    will accept (forecast at the end)\n")
	}
	rep.sbomText(&b)
	rep.evidenceHeader(&b)
	if len(rep.Attention) > 0 {
		fmt.Fprintf(&b, "\nNeeds attention:\n")
		for _, a := range rep.Attention {
			fmt.Fprintf(&b, "  ! %s: %s\n", strings.ReplaceAll(a.Kind, "_", " "), q(a.Message))
		}
	}
	rep.chainText(&b)
	rep.whyText(&b)
	rep.providersText(&b)
	rep.modulesText(&b)
	rep.buildText(&b)
	rep.gatesText(&b)
	if len(rep.Withdraw)+len(rep.Reinstate) > 0 {
		b.WriteString("\nWithdrawals:\n")
	}
	for _, l := range []struct {
		what string
		ws   []dist.Withdrawal
	}{{"withdraws", rep.Withdraw}, {"reinstates", rep.Reinstate}} {
		for _, w := range l.ws {
			fmt.Fprintf(&b, "  %s: %s %s %s (%s)\n", l.what, q(w.Kind), q(w.Addr), q(strings.Join(w.Versions, ", ")), q(w.Reason))
		}
	}
	rep.keysText(&b)
	rep.againstText(&b)
	if rep.Checks != nil {
		b.WriteString("\nChecks:\n")
		b.WriteString(rep.Checks.Summary("  "))
	}
	rep.forecastText(&b)
	b.WriteString("\n" + rep.verdictLine() + "\n")
	return dist.PrintableLines(b.String())
}

// keysUnknown reports whether some provider's key status is unknown.
func (rep *Report) keysUnknown() bool {
	for _, p := range rep.Providers {
		if p.KeyStatus == "unknown" {
			return true
		}
	}
	return false
}

func (rep *Report) providersText(b *strings.Builder) {
	q := dist.Printable
	if len(rep.Providers) == 0 {
		return
	}
	fmt.Fprintf(b, "\nProviders (%d versions, %d packages):\n", rep.ProviderVersions, rep.Packages)
	left := 0 // versions whose unchanged signature a delta leaves out: one line for all
	for _, p := range rep.Providers {
		in := ""
		if p.InStore != "" {
			in = " [" + strings.ReplaceAll(p.InStore, "_", " ") + "]"
		}
		fmt.Fprintf(b, "  %s %s  %s%s\n", q(p.Address), q(p.Version), dist.TrustLabel(p.Trust), in)
		if f := p.Signature; f != nil {
			expires := "never expires"
			if f.KeyExpires != nil {
				expires = "key expires " + f.KeyExpires.Format("2006-01-02")
				if f.KeyExpiredSince {
					expires = "key expired " + f.KeyExpires.Format("2006-01-02") + " (after signing)"
				}
			}
			fmt.Fprintf(b, "    signed %s by %s\n      fingerprint %s, %s\n", f.Created.Format("2006-01-02 15:04Z"), q(identityOrID(f.Signer)), verify.GroupFingerprint(q(f.Signer.Fingerprint)), expires)
		} else {
			left++
		}
		fmt.Fprintf(b, "      key for %s: %s", q(namespaceOf(p.Address)), strings.ReplaceAll(p.KeyStatus, "_", " "))
		if p.KeyNote != "" {
			fmt.Fprintf(b, ": %s", q(p.KeyNote))
		}
		b.WriteString("\n")
		packagesText(b, p.Platforms)
		if p.Docs != nil {
			fmt.Fprintf(b, "    docs: %s\n", q(p.Docs.Summary()))
		}
		b.WriteString(rep.cameWith(p.CameWith))
		gateLines(b, p.Gates)
	}
	if left > 0 {
		fmt.Fprintf(b, "  signatures of %d provider versions left for import (unchanged, not in this delta)\n"+
			"  hint: list them: airgap verify --json ... | jq -r '.providers[] | select(.signature == null) | .address + \" \" + .version'\n", left)
	}
}

// packagesText prints a provider version's packages: one a line for up to
// three, else one line naming the platforms (a bundle of hundreds of
// versions of many platforms each stays readable; 'verify --json' has
// every package's sha256, size and file name).
func packagesText(b *strings.Builder, pks []PackageEntry) {
	q := dist.Printable
	if len(pks) <= 3 {
		for _, pk := range pks {
			fmt.Fprintf(b, "    %-14s sha256:%s %10s  %s\n", q(pk.Platform), pk.SHA256, progress.Size(pk.SizeBytes), q(pk.Filename))
		}
		return
	}
	var plats []string
	var size int64
	for _, pk := range pks {
		plats = append(plats, q(pk.Platform))
		size += pk.SizeBytes
	}
	fmt.Fprintf(b, "    %d packages, %s: %s\n", len(pks), progress.Size(size), strings.Join(plats, ", "))
}

// gateLines prints an entry's gate results, one a line.
func gateLines(b *strings.Builder, gs []GateEntry) {
	for _, g := range gs {
		name := dist.Printable(g.Gate)
		if g.Platform != "" {
			name += " on " + dist.Printable(g.Platform)
		}
		fmt.Fprintf(b, "    gate %s: %s; report %s\n", name, strings.TrimPrefix(g.Summary(), dist.Printable(g.Gate)+": "), dist.Printable(g.Report.Short()))
	}
}

// sbomText is the report's SBOM line (and where --sbom wrote it).
func (rep *Report) sbomText(b *strings.Builder) {
	switch {
	case rep.SBOM == "":
		b.WriteString("  sbom:      none (the bundle was made by an airgap that did not write one)\n")
	case rep.Checks != nil && rep.Checks.SBOM == "checked":
		fmt.Fprintf(b, "  sbom:      %s (CycloneDX 1.6): made again from the bundle's bytes, identical to the signed one\n", rep.SBOM)
	default:
		fmt.Fprintf(b, "  sbom:      %s (CycloneDX 1.6): checked at import (this delta omits zips it describes)\n", rep.SBOM)
	}
	if rep.SBOMFile != "" {
		fmt.Fprintf(b, "             written to %s\n", dist.Printable(rep.SBOMFile))
	}
}

// gatesText lists the gates the export ran (their results are in the
// entries).
func (rep *Report) gatesText(b *strings.Builder) {
	q := dist.Printable
	if len(rep.Gates) == 0 {
		return
	}
	b.WriteString("\nGates (run by the export over every entry of their kind; results above):\n")
	for _, g := range rep.Gates {
		fail := ""
		if g.FailLevel != "" {
			fail = ", fails at SARIF level " + q(g.FailLevel)
		}
		fmt.Fprintf(b, "  %s over every %s (%s%s)\n    %s\n", q(g.Name), strings.TrimSuffix(q(g.For), "s"), q(g.Tool), fail, q(strings.Join(g.Command, " ")))
	}
}

func identityOrID(s verify.Signer) string {
	if s.Identity != "" {
		return s.Identity + " (key " + s.KeyID + ")"
	}
	return "key " + s.KeyID
}

// namespaceOf is host/namespace of a provider address host/namespace/type.
func namespaceOf(addr string) string {
	if i := strings.LastIndexByte(addr, '/'); i > 0 {
		return addr[:i]
	}
	return addr
}

func (rep *Report) modulesText(b *strings.Builder) {
	q := dist.Printable
	if len(rep.Modules) == 0 {
		return
	}
	fmt.Fprintf(b, "\nModules (%d versions):\n", rep.ModuleVersions)
	for _, m := range rep.Modules {
		in := ""
		if m.InStore != "" {
			in = " [" + strings.ReplaceAll(m.InStore, "_", " ") + "]"
		}
		fmt.Fprintf(b, "  %s %s%s\n    source  %s\n", q(m.Address), q(m.Version), in, q(m.Source))
		if m.Commit != "" {
			fmt.Fprintf(b, "    commit  %s\n", q(m.Commit))
		}
		if m.Subdir != "" {
			fmt.Fprintf(b, "    subdir  %s\n", q(m.Subdir))
		}
		fmt.Fprintf(b, "    archive sha256:%s %s\n", m.SHA256, progress.Size(m.SizeBytes))
		if m.Docs != "" {
			fmt.Fprintf(b, "    docs    %s (README, inputs, outputs)\n", m.Docs)
		}
		for _, v := range m.Vendored {
			commit := ""
			if v.Commit != "" {
				commit = " commit " + q(v.Commit)
			}
			fmt.Fprintf(b, "    vendored %s:%d module %q: %s -> %s (sha256:%s%s)\n", q(v.File), v.Line, q(v.Module), q(v.Source), q(v.Path), v.SHA256[:12], commit)
		}
		b.WriteString(rep.cameWith(m.CameWith))
		gateLines(b, m.Gates)
	}
}

func (rep *Report) keysText(b *strings.Builder) {
	q := dist.Printable
	if len(rep.PublisherKeys) == 0 && len(rep.Declared) == 0 {
		return
	}
	b.WriteString("\nPublisher keys (per namespace: the offline side's history, then this bundle's keys):\n")
	for _, n := range rep.PublisherKeys {
		fmt.Fprintf(b, "  %s\n", q(n.Namespace))
		for _, k := range n.History {
			retired := ""
			if k.Retired != nil {
				retired = ", retired " + k.Retired.Format("2006-01-02")
			}
			fmt.Fprintf(b, "    had  %s %s, since %s (%s)%s\n", verify.GroupFingerprint(q(k.Fingerprint)), q(k.Identity), k.Accepted.Format("2006-01-02"), q(strings.ReplaceAll(k.How, "_", " ")), retired)
		}
		for _, k := range n.InBundle {
			fmt.Fprintf(b, "    now  %s %s: %s (signs %s)\n", verify.GroupFingerprint(q(k.Fingerprint)), q(k.Identity), strings.ReplaceAll(k.Status, "_", " "), q(strings.Join(k.Providers, ", ")))
		}
	}
	for _, d := range rep.Declared {
		fmt.Fprintf(b, "  the bundle approves %s as a new key for %s (export --accept-new-publisher-key)\n", verify.GroupFingerprint(q(d.Fingerprint)), q(d.Namespace))
	}
}

func (rep *Report) againstText(b *strings.Builder) {
	q := dist.Printable
	a := rep.Against
	if a == nil {
		return
	}
	fmt.Fprintf(b, "\nAgainst %s (a store with %d provider versions, %d module versions):\n", q(a.Inventory), a.StoreProviders, a.StoreModules)
	for _, l := range []struct {
		what  string
		items []DiffItem
	}{{"added", a.Added}, {"already present", a.AlreadyPresent}, {"withdrawn", a.Withdrawn}, {"reinstated", a.Reinstated}, {"refused", a.Refused}} {
		updated := 0
		for _, it := range l.items {
			if l.what == "already present" && it.Note != "" {
				updated++
			}
		}
		if updated > 0 {
			fmt.Fprintf(b, "  %s: %d (%d of them updated by the import)\n", l.what, len(l.items), updated)
		} else {
			fmt.Fprintf(b, "  %s: %d\n", l.what, len(l.items))
		}
		for _, it := range l.items {
			fmt.Fprintf(b, "    %s %s %s", q(it.Kind), q(it.Address), q(it.Version))
			if len(it.Platforms) > 0 {
				fmt.Fprintf(b, " (%s)", q(strings.Join(it.Platforms, ", ")))
			}
			if it.Note != "" {
				fmt.Fprintf(b, ": %s", q(it.Note))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(b, "  key changes: %d\n", len(a.KeyChanges))
	for _, c := range a.KeyChanges {
		before := "no key"
		if len(c.Before) > 0 {
			var fs []string
			for _, k := range c.Before {
				fs = append(fs, verify.GroupFingerprint(k.Fingerprint)+" "+k.Identity)
			}
			before = strings.Join(fs, "; ")
		}
		fmt.Fprintf(b, "    %s: %s -> %s %s (%s)\n", q(c.Namespace), q(before), verify.GroupFingerprint(q(c.Key.Fingerprint)), q(c.Key.Identity), strings.ReplaceAll(c.Key.Status, "_", " "))
	}
	for _, n := range a.KeysUnknownNotes {
		fmt.Fprintf(b, "  note: %s\n", q(n))
	}
}
