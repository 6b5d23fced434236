package dist

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airgap/airgap/verify"
)

// What a catalog's blobs are, and what a bundle changes in entries a store
// already has, said in addresses and versions for reports (import, prune,
// gc). The strings come from checked catalog fields; callers print them
// through Printable as any catalog string.

// DescribeBlobs says, for every blob the catalog refers to, what it is: the
// entry's address and version, and the blob's part in it ("package
// linux_amd64 (terraform-provider-random_3.6.0_linux_amd64.zip)"). A blob
// shared by several entries (the same zip under two origins) names each,
// joined by "; ".
func (c *Catalog) DescribeBlobs() map[verify.Digest]string {
	parts := map[verify.Digest][]string{}
	add := func(d verify.Digest, format string, a ...any) {
		if d != "" {
			parts[d] = append(parts[d], fmt.Sprintf(format, a...))
		}
	}
	reports := func(of string, rs []GateResult) {
		for _, r := range rs {
			add(r.Report, "report of gate %s on %s", r.Gate, of)
		}
	}
	for _, p := range c.Providers {
		add(p.Shasums, "SHA256SUMS of provider %s", p)
		add(p.ShasumsSig, "SHA256SUMS signature of provider %s", p)
		for _, pk := range p.Packages {
			add(pk.Digest, "package of provider %s %s (%s)", p, pk.Platform(), pk.Filename)
			add(pk.BuildInfo, "Go build information of provider %s %s", p, pk.Platform())
			reports(fmt.Sprintf("provider %s %s", p, pk.Platform()), pk.Gates)
		}
		if p.Docs != nil {
			add(p.Docs.Archive, "documentation of provider %s", p)
		}
	}
	for _, m := range c.Modules {
		add(m.Archive, "archive of module %s", m)
		add(m.Zip, "OCI zip of module %s", m)
		add(m.Docs, "documentation of module %s", m)
		reports("module "+m.String(), m.Gates)
	}
	c.describeReleases(add)
	out := make(map[verify.Digest]string, len(parts))
	for d, ps := range parts {
		sort.Strings(ps)
		out[d] = strings.Join(ps, "; ")
	}
	return out
}

// EntryUpdates says what next changes in entries old already has with the
// same content (a provider package of the same platform and digest, a
// module with the same archive), which Merge takes over without listing
// them as added: the gate results a later export ran over them. Each line
// names the entry and the gate: "module ADDR VERSION: gate trivy passed
// (new)", "… (was waived)"; and documentation a bundle brings for them
// ("provider ADDR VERSION: docs added", "… docs updated"). Other kinds of
// update a bundle may carry for entries already present belong here too,
// one line each, so that the import's report and history say them.
func EntryUpdates(old, next *Catalog) []string {
	var out []string
	gates := func(of string, before, after []GateResult) {
		for _, n := range after {
			var prev *GateResult
			for i := range before {
				if before[i].Gate == n.Gate {
					prev = &before[i]
				}
			}
			switch {
			case prev == nil:
				out = append(out, fmt.Sprintf("%s: gate %s %s (new)", of, n.Gate, n.Status))
			case prev.Status != n.Status:
				out = append(out, fmt.Sprintf("%s: gate %s %s (was %s)", of, n.Gate, n.Status, prev.Status))
			case prev.Report != n.Report:
				out = append(out, fmt.Sprintf("%s: gate %s %s (run again: a new report)", of, n.Gate, n.Status))
			}
		}
	}
	docs := func(of string, before, after verify.Digest) {
		switch {
		case after == "" || after == before:
		case before == "":
			out = append(out, of+": docs added")
		default:
			out = append(out, of+": docs updated")
		}
	}
	provs := map[string]ProviderVersion{}
	for _, p := range old.Providers {
		provs[p.Key()] = p
	}
	for _, np := range next.Providers {
		op, ok := provs[np.Key()]
		if !ok {
			continue
		}
		for _, pk := range np.Packages {
			if prev, ok := op.Package(pk.OS, pk.Arch); ok && prev.Digest == pk.Digest {
				gates(fmt.Sprintf("provider %s %s", np, pk.Platform()), prev.Gates, pk.Gates)
			}
		}
		var before, after verify.Digest
		if op.Docs != nil {
			before = op.Docs.Archive
		}
		if np.Docs != nil {
			after = np.Docs.Archive
		}
		docs("provider "+np.String(), before, after)
	}
	mods := map[string]ModuleVersion{}
	for _, m := range old.Modules {
		mods[m.Key()] = m
	}
	for _, nm := range next.Modules {
		if om, ok := mods[nm.Key()]; ok && om.Archive == nm.Archive && om.Subdir == nm.Subdir {
			gates("module "+nm.String(), om.Gates, nm.Gates)
			docs("module "+nm.String(), om.Docs, nm.Docs)
		}
	}
	sort.Strings(out)
	return out
}
