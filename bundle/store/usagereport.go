package store

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
)

// UsageReport is 'airgap inventory --usage': every version the store
// serves, with its downloads through 'airgap serve' (the usage counts), the last
// one, and its last import.
type UsageReport struct {
	OK    bool   `json:"ok"`
	Store string `json:"store"`
	// CountedSince is from when downloads were counted (absent: never).
	CountedSince string         `json:"counted_since,omitempty"`
	Versions     []VersionUsage `json:"versions"`
}

// VersionUsage is one provider or module version's, or CLI release's,
// downloads.
type VersionUsage struct {
	Kind          string `json:"kind"` // provider, module or release (Address: terraform or tofu)
	Address       string `json:"address"`
	Version       string `json:"version"`
	Downloads     int64  `json:"downloads"`
	LastFetchedAt string `json:"last_fetched_at,omitempty"`
	ImportedAt    string `json:"imported_at,omitempty"`
	// Platforms: each package of a provider version, in catalog order.
	Platforms []PlatformUsage `json:"platforms,omitempty"`
}

// PlatformUsage is one provider package's downloads.
type PlatformUsage struct {
	Platform      string `json:"platform"`
	Downloads     int64  `json:"downloads"`
	LastFetchedAt string `json:"last_fetched_at,omitempty"`
}

// LoadUsageReport reads the catalog and the download counts of the store
// at root (counts of versions no longer in the catalog are left out).
func LoadUsageReport(root string) (*UsageReport, error) {
	if _, err := os.Stat(indexPath(root)); err != nil {
		return nil, fmt.Errorf("%w: %s has no %s\nhint: check --store", ErrNoStore, root, indexName)
	}
	ix, err := readIndex(root)
	if err != nil {
		return nil, err
	}
	u, err := ReadUsage(root)
	if err != nil {
		return nil, err
	}
	imported := lastImported(ix)
	rep := &UsageReport{OK: true, Store: root, Versions: []VersionUsage{}}
	if !u.Since.IsZero() {
		rep.CountedSince = u.Since.UTC().Format(time.RFC3339)
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, p := range ix.Catalog.Providers {
		v := VersionUsage{Kind: UsageProvider, Address: p.Addr(), Version: p.Version, ImportedAt: stamp(imported[p.Key()]), Platforms: []PlatformUsage{}}
		var all UsageCount
		for _, pk := range p.Packages {
			c := u.Counts[UsageKey{Kind: UsageProvider, Address: p.Addr(), Version: p.Version, Platform: pk.Platform()}]
			all.Add(c)
			v.Platforms = append(v.Platforms, PlatformUsage{Platform: pk.Platform(), Downloads: c.Downloads, LastFetchedAt: stamp(c.Last)})
		}
		v.Downloads, v.LastFetchedAt = all.Downloads, stamp(all.Last)
		rep.Versions = append(rep.Versions, v)
	}
	for _, m := range ix.Catalog.Modules {
		c := u.Counts[UsageKey{Kind: UsageModule, Address: m.Addr(), Version: m.Version}]
		rep.Versions = append(rep.Versions, VersionUsage{Kind: UsageModule, Address: m.Addr(), Version: m.Version,
			Downloads: c.Downloads, LastFetchedAt: stamp(c.Last), ImportedAt: stamp(imported[m.Key()])})
	}
	for _, r := range ix.Catalog.Releases {
		// A tofu platform has a zip and a .tar.gz: one line, both counted.
		v := VersionUsage{Kind: UsageRelease, Address: r.Product, Version: r.Version, Platforms: []PlatformUsage{}}
		var all UsageCount
		seen := map[string]bool{}
		for _, b := range r.Builds {
			if seen[b.Platform()] {
				continue
			}
			seen[b.Platform()] = true
			c := u.Counts[UsageKey{Kind: UsageRelease, Address: r.Product, Version: r.Version, Platform: b.Platform()}]
			all.Add(c)
			v.Platforms = append(v.Platforms, PlatformUsage{Platform: b.Platform(), Downloads: c.Downloads, LastFetchedAt: stamp(c.Last)})
		}
		v.Downloads, v.LastFetchedAt = all.Downloads, stamp(all.Last)
		rep.Versions = append(rep.Versions, v)
	}
	return rep, nil
}

// WriteText prints the report for people: one line per version, and for
// providers one per platform.
func (r *UsageReport) WriteText(out io.Writer) {
	q := dist.Printable
	var w strings.Builder
	defer func() { io.WriteString(out, dist.PrintableLines(w.String())) }()
	if r.CountedSince == "" {
		fmt.Fprintf(&w, "store %s: no download counted yet ('airgap serve' counts package and module downloads when it can write STORE/state)\n", q(r.Store))
	} else {
		fmt.Fprintf(&w, "store %s: package, module and release downloads through airgap serve (every replica), counted since %s\n", q(r.Store), r.CountedSince)
	}
	day := func(s string) string {
		if s == "" {
			return "-"
		}
		return strings.Replace(strings.TrimSuffix(s, "Z"), "T", " ", 1)
	}
	line := func(format string, a ...any) {
		w.WriteString(strings.TrimRight(fmt.Sprintf(format, a...), " "))
		w.WriteByte('\n')
	}
	line("\n  %-8s %-50s %-12s %9s  %-19s  %s", "KIND", "ADDRESS", "VERSION", "DOWNLOADS", "LAST FETCHED (UTC)", "LAST IMPORTED (UTC)")
	for _, v := range r.Versions {
		line("  %-8s %-50s %-12s %9d  %-19s  %s", v.Kind, q(v.Address), q(v.Version), v.Downloads, day(v.LastFetchedAt), day(v.ImportedAt))
		for _, p := range v.Platforms {
			line("  %-8s %-50s %-12s %9d  %s", "", "  "+q(p.Platform), "", p.Downloads, day(p.LastFetchedAt))
		}
	}
}
