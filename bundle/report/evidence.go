package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
)

// Requested is why an entry is in the bundle (dist.Reason, in the
// report's JSON as requested_by).
type Requested struct {
	Where string   `json:"where"`
	Via   []string `json:"via"`
}

// requested is the reason of the entry with kind and key, or nil.
func requested(m *bundle.Manifest, kind, key string) *Requested {
	for _, r := range m.RequestedBy {
		if r.Kind == kind && r.Key() == key {
			return &Requested{Where: r.Where, Via: append([]string{}, r.Via...)}
		}
	}
	return nil
}

// evidenceHeader is the report's lines on gates and build information,
// beside its SBOM line.
func (rep *Report) evidenceHeader(b *strings.Builder) {
	q := dist.Printable
	if len(rep.Gates) == 0 {
		b.WriteString("  gates:     no scanner gate ran (the export manifest names no gate block)\n")
	} else {
		var names []string
		for _, g := range rep.Gates {
			names = append(names, q(g.Name)+" over every "+strings.TrimSuffix(q(g.For), "s"))
		}
		fmt.Fprintf(b, "  gates:     %s (results under each entry; 'airgap show BUNDLE report' prints the reports)\n", strings.Join(names, ", "))
	}
	with, without := 0, 0
	for _, p := range rep.Providers {
		for _, s := range p.Build {
			if s.None == "" {
				with += len(s.Platforms)
			} else {
				without += len(s.Platforms)
			}
		}
	}
	switch {
	case with+without == 0:
	case without == 0:
		fmt.Fprintf(b, "  build:     all %d plugins carry Go build information (summarised under Build information)\n", with)
	default:
		fmt.Fprintf(b, "  build:     %d plugins carry Go build information, %d do not (named under Build information)\n", with, without)
	}
}

// buildText is the summary of each provider version's build information:
// a line per group of platforms whose plugins agree, and one line naming
// the plugins without Go build information (marked "!"), per reason.
func (rep *Report) buildText(b *strings.Builder) {
	q := dist.Printable
	head := false
	for _, p := range rep.Providers {
		if len(p.Build) == 0 {
			continue
		}
		if !head {
			b.WriteString("\nBuild information (what each provider's plugins were built from; the SBOM lists every module):\n")
			head = true
		}
		fmt.Fprintf(b, "  %s %s\n", q(p.Address), q(p.Version))
		var reasons []string
		none := map[string][]string{} // reason -> "file (platforms)"
		for _, s := range p.Build {
			plats := q(strings.Join(s.Platforms, ", "))
			if s.None != "" {
				file := s.File
				if file == "" {
					file = "(no plugin file)"
				}
				if _, ok := none[s.None]; !ok {
					reasons = append(reasons, s.None)
				}
				none[s.None] = append(none[s.None], q(file)+" ("+plats+")")
				continue
			}
			var notable []string
			for _, n := range s.Notable {
				notable = append(notable, q(n.Path)+" "+q(n.Version))
			}
			line := fmt.Sprintf("    %s: %s, main module %s %s, %d modules", plats, q(s.GoVersion), q(s.Main), q(s.MainVersion), s.Modules)
			if len(notable) > 0 {
				line += "; " + strings.Join(notable, ", ")
			}
			b.WriteString(line + "\n")
		}
		for _, r := range reasons {
			fmt.Fprintf(b, "    ! %s: %s\n", strings.Join(none[r], ", "), q(r))
		}
	}
}

// whyText groups the entries by what asked for them: each manifest block
// or project file position, then, under it, what the module chains it
// started brought, several versions of one address on one line.
func (rep *Report) whyText(b *strings.Builder) {
	q := dist.Printable
	type group struct {
		at, via string
		lines   []string
		index   map[string]int // "kind address" -> line
	}
	var groups []*group
	byKey := map[string]*group{}
	add := func(kind, addr, version string, r *Requested) {
		if r == nil {
			return
		}
		via := strings.Join(r.Via, " → ")
		k := r.Where + "\x00" + via
		g := byKey[k]
		if g == nil {
			g = &group{at: r.Where, via: via, index: map[string]int{}}
			byKey[k] = g
			groups = append(groups, g)
		}
		ka := kind + " " + addr
		if i, ok := g.index[ka]; ok {
			g.lines[i] += ", " + q(version)
			return
		}
		g.index[ka] = len(g.lines)
		g.lines = append(g.lines, q(kind)+" "+q(addr)+" "+q(version))
	}
	for _, p := range rep.Providers {
		add(dist.KindProvider, p.Address, p.Version, p.RequestedBy)
	}
	for _, m := range rep.Modules {
		add(dist.KindModule, m.Address, m.Version, m.RequestedBy)
	}
	if len(groups) == 0 {
		return
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].at != groups[j].at {
			return positionLess(groups[i].at, groups[j].at)
		}
		return groups[i].via < groups[j].via
	})
	b.WriteString("\nWhy they are in the bundle (what asked for each, as the export recorded it):\n")
	for i, g := range groups {
		if i == 0 || groups[i-1].at != g.at {
			fmt.Fprintf(b, "  %s\n", q(g.at))
		}
		indent := "    "
		if g.via != "" {
			fmt.Fprintf(b, "    through %s:\n", q(g.via))
			indent = "      "
		}
		for _, l := range g.lines {
			b.WriteString(indent + l + "\n")
		}
	}
}

// positionLess orders FILE:LINE positions by file, then line number.
func positionLess(a, b string) bool {
	fa, la := splitPosition(a)
	fb, lb := splitPosition(b)
	if fa != fb {
		return fa < fb
	}
	return la < lb
}

func splitPosition(p string) (string, int) {
	i := strings.LastIndexByte(p, ':')
	if i < 0 {
		return p, 0
	}
	n, err := strconv.Atoi(p[i+1:])
	if err != nil {
		return p, 0
	}
	return p[:i], n
}
