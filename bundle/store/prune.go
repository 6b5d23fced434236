package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
)

// PruneOptions say what Prune removes: exactly one of Keep, OlderThan,
// UnusedFor and Versions.
type PruneOptions struct {
	// Keep keeps the newest Keep versions of each provider and module.
	Keep int
	// ByAge removes versions last imported more than OlderThan ago.
	ByAge     bool
	OlderThan time.Duration
	// ByUse removes versions nobody downloaded for UnusedFor: neither
	// imported nor downloaded through serve (the usage counts) since.
	ByUse     bool
	UnusedFor time.Duration
	// Versions names versions to remove, as ADDRESS@VERSION (a provider
	// source or a registry module address).
	Versions []string
	DryRun   bool
	Wait     bool
	Now      func() time.Time
}

// PruneResult says what Prune removed (or would remove): 'airgap prune
// --json'.
type PruneResult struct {
	OK      bool     `json:"ok"`
	DryRun  bool     `json:"dry_run"`
	Removed []string `json:"removed"` // "provider ADDR VERSION", "module ADDR VERSION"; never nil
	// Blobs and Bytes: every blob deleted (or to be deleted): what no
	// remaining version references, including blobs that were unreferenced
	// already (left by a withdrawal or an interrupted prune), which are
	// also counted in Stale and StaleBytes.
	Blobs      int   `json:"blobs_freed"`
	Bytes      int64 `json:"bytes_freed"`
	Stale      int   `json:"blobs_already_unreferenced"`
	StaleBytes int64 `json:"bytes_already_unreferenced"`
	// Deleted says of each blob counted in Blobs its size and what it was
	// (the version and part; never nil).
	Deleted []RemovedBlob `json:"blobs"`
	// Unused says, with --unused-for, why each removed version was: when
	// it was last imported and downloaded.
	Unused []UnusedVersion `json:"unused,omitempty"`
	// UsageSince is, with --unused-for, from when downloads were counted.
	UsageSince string `json:"usage_counted_since,omitempty"`
}

// UnusedVersion is a version --unused-for removes, with what it was
// judged by.
type UnusedVersion struct {
	Entry         string `json:"entry"` // as in Removed
	Downloads     int64  `json:"downloads"`
	LastFetchedAt string `json:"last_fetched_at,omitempty"`
	ImportedAt    string `json:"imported_at,omitempty"`
}

// ErrPrune: the prune request is wrong (nothing was changed).
var ErrPrune = errors.New("invalid prune request")

// ParseAge reads --older-than: a Go duration ("720h") or a number of days
// ("30d").
func ParseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 100_000 {
			return 0, fmt.Errorf("%w: --older-than %q: want a number of days (30d) or a duration (720h)", ErrPrune, s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: --older-than %q: want a number of days (30d) or a duration (720h)", ErrPrune, s)
	}
	return d, nil
}

// Prune removes provider and module versions from the catalog under a
// policy and deletes the blobs that only they used. The index is replaced
// atomically first (with the prune recorded in its maintenance history),
// then unreferenced blobs are swept as GC does; a kill after the index swap
// leaves only unreferenced blobs, which a re-run (or 'airgap gc') removes.
// It holds the store lock. Pruned versions are not withdrawn: a later bundle
// may carry them again.
func Prune(root string, opt PruneOptions) (*PruneResult, error) {
	n := 0
	if opt.Keep > 0 {
		n++
	}
	if opt.ByAge {
		n++
	}
	if opt.ByUse {
		n++
	}
	if len(opt.Versions) > 0 {
		n++
	}
	if n != 1 || opt.Keep < 0 {
		return nil, fmt.Errorf("%w: give exactly one of --keep N (N >= 1), --older-than DURATION, --unused-for DURATION or ADDRESS@VERSION arguments", ErrPrune)
	}
	unlock, err := lockExisting(root, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ix, err := readIndex(root)
	if err != nil {
		return nil, err
	}
	now := stamp(opt.Now)
	var use *versionUse
	if opt.ByUse {
		if use, err = readVersionUse(root, ix, now, opt.UnusedFor); err != nil {
			return nil, fmt.Errorf("%w\nthe store was not changed", err)
		}
	}
	drop, policy, err := pruneKeys(ix, opt, now, use)
	if err != nil {
		return nil, fmt.Errorf("%w\nthe store was not changed", err)
	}
	res := &PruneResult{OK: true, DryRun: opt.DryRun, Removed: []string{}, Deleted: []RemovedBlob{}}
	removed := func(key, entry string) {
		res.Removed = append(res.Removed, entry)
		if use != nil {
			res.Unused = append(res.Unused, use.explain(key, entry))
		}
	}
	for _, p := range ix.Catalog.Providers {
		if drop[p.Key()] {
			removed(p.Key(), "provider "+p.String())
		}
	}
	for _, m := range ix.Catalog.Modules {
		if drop[m.Key()] {
			removed(m.Key(), "module "+m.String())
		}
	}
	if use != nil {
		res.UsageSince = use.since.UTC().Format(time.RFC3339)
	}
	before, pruned, names := ix.Blobs(), ix.Catalog.DescribeBlobs(), blobNames(ix)
	removeKeys(&ix.Catalog, drop)
	// What the sweep below deletes: every blob the pruned catalog does not
	// reference, those this prune frees and those unreferenced already.
	plan := &GCResult{DryRun: true, Removed: []RemovedBlob{}}
	if err := sweep(root, ix, plan, names); err != nil {
		return nil, fmt.Errorf("listing the blobs: %w\nthe store was not changed", err)
	}
	res.Blobs, res.Bytes, res.Deleted = len(plan.Blobs), plan.Bytes, plan.Removed
	for i, b := range res.Deleted {
		if _, ok := before[b.Blob]; ok {
			res.Deleted[i].What += " (pruned)"
		}
	}
	for _, d := range plan.Blobs {
		if _, ok := before[d]; !ok {
			res.Stale++
			if fi, err := os.Lstat(BlobPath(root, d)); err == nil {
				res.StaleBytes += fi.Size()
			}
		}
	}
	if opt.DryRun {
		return res, nil
	}
	if len(res.Removed) > 0 || res.Blobs > 0 {
		// Should the sweep below be interrupted, gc names what is left.
		noteUnreferenced(ix, pruned, " (pruned)")
		tidyUnreferenced(root, ix)
		ix.recordMaintenance(MaintenanceEntry{Action: "prune", Time: now, Policy: policy, Removed: res.Removed, BlobsRemoved: res.Blobs, BytesRemoved: res.Bytes})
		if testHookPruneBeforeIndex != nil {
			testHookPruneBeforeIndex()
		}
		if err := WriteIndex(root, ix); err != nil {
			return nil, fmt.Errorf("writing the store index: %w\nthe store was not changed", err)
		}
	}
	// Also finishes the sweep of an earlier, interrupted prune.
	done := &GCResult{}
	if err := sweep(root, ix, done, names); err != nil {
		return res, fmt.Errorf("%w\nthe versions were removed from the catalog and %d of %d blob(s) deleted; run 'airgap gc --store %s' to delete the rest", err, len(done.Blobs), res.Blobs, root)
	}
	return res, nil
}

// testHookPruneBeforeIndex runs before the pruned index is written (tests only).
var testHookPruneBeforeIndex func()

// pruneKeys returns the catalog keys opt removes and a description of the
// policy for the history.
func pruneKeys(ix *Index, opt PruneOptions, now time.Time, use *versionUse) (map[string]bool, string, error) {
	drop := map[string]bool{}
	type ver struct{ key, version string }
	groups := map[string][]ver{}
	// Grouped by the address part of the key (canonical, as clients
	// compare addresses), which the ADDRESS@VERSION lookup below uses too.
	for _, p := range ix.Catalog.Providers {
		a, _, _ := strings.Cut(p.Key(), " ")
		groups[a] = append(groups[a], ver{p.Key(), p.Version})
	}
	for _, m := range ix.Catalog.Modules {
		a, _, _ := strings.Cut(m.Key(), " ")
		groups[a] = append(groups[a], ver{m.Key(), m.Version})
	}
	switch {
	case opt.Keep > 0:
		for _, vs := range groups {
			sort.Slice(vs, func(i, j int) bool { return dist.CompareVersions(vs[i].version, vs[j].version) > 0 })
			for i := opt.Keep; i < len(vs); i++ {
				drop[vs[i].key] = true
			}
		}
		return drop, fmt.Sprintf("--keep %d", opt.Keep), nil
	case opt.ByAge:
		cut := now.Add(-opt.OlderThan)
		last := lastImported(ix)
		for _, vs := range groups {
			for _, v := range vs {
				// A version with no import record (a hand-made index) is kept.
				if t, ok := last[v.key]; ok && t.Before(cut) {
					drop[v.key] = true
				}
			}
		}
		return drop, "--older-than " + opt.OlderThan.String(), nil
	case opt.ByUse:
		cut := now.Add(-opt.UnusedFor)
		for _, vs := range groups {
			for _, v := range vs {
				if t, ok := use.lastUse(v.key); ok && t.Before(cut) {
					drop[v.key] = true
				}
			}
		}
		return drop, "--unused-for " + opt.UnusedFor.String(), nil
	}
	for _, arg := range opt.Versions {
		addr, v, ok := strings.Cut(arg, "@")
		if !ok || !dist.ValidVersion(v) {
			return nil, "", fmt.Errorf("%w: %q: want ADDRESS@VERSION, e.g. hashicorp/aws@5.61.0", ErrPrune, dist.Printable(arg))
		}
		var keys []string
		if p, err := dist.ParseProviderSource(addr); err == nil {
			keys = append(keys, dist.VersionKey(p.String(), v))
		}
		if m, sub, ok, err := dist.ParseModuleSource(addr); err == nil && ok && sub == "" {
			keys = append(keys, dist.VersionKey(m.String(), v))
		}
		found := false
		for _, k := range keys {
			a, _, _ := strings.Cut(k, " ")
			for _, gv := range groups[a] {
				if gv.key == k {
					drop[k], found = true, true
				}
			}
		}
		if !found {
			return nil, "", fmt.Errorf("%w: %s is not in the store\nhint: 'airgap inventory --store DIR' lists what it has", ErrPrune, dist.Printable(arg))
		}
	}
	return drop, strings.Join(opt.Versions, " "), nil
}

// lastImported maps each catalog key to the time of the newest import that
// added it (or added platforms to it), from the import history.
func lastImported(ix *Index) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range ix.Imports {
		for _, line := range e.Added {
			_, addr, ver, ok := HistoryLine(line)
			if !ok {
				continue
			}
			k := dist.VersionKey(addr, ver)
			if e.Time.After(out[k]) {
				out[k] = e.Time
			}
		}
	}
	return out
}

// WriteText prints the result for people.
func (r *PruneResult) WriteText(out io.Writer) {
	var w strings.Builder
	defer func() { io.WriteString(out, dist.PrintableLines(w.String())) }()
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	if len(r.Removed) == 0 && r.Blobs == 0 {
		fmt.Fprintln(&w, "nothing to prune")
		return
	}
	why := map[string]UnusedVersion{}
	for _, u := range r.Unused {
		why[u.Entry] = u
	}
	for _, l := range r.Removed {
		if u, ok := why[l]; ok {
			fmt.Fprintf(&w, "%s %s (%s)\n", verb, l, u.text())
			continue
		}
		fmt.Fprintln(&w, verb, l)
	}
	if r.UsageSince != "" {
		fmt.Fprintf(&w, "(downloads through airgap serve counted since %s)\n", r.UsageSince)
	}
	writeRemoved(&w, verb, r.Deleted)
	fmt.Fprintf(&w, "%s %d version(s); %d blob(s), %s freed", verb, len(r.Removed), r.Blobs, human(r.Bytes))
	if r.Stale > 0 {
		fmt.Fprintf(&w, " (%d of them, %s, no version referenced already: left by a withdrawal or an interrupted prune)", r.Stale, human(r.StaleBytes))
	}
	fmt.Fprintln(&w)
}

// WriteText prints the result for people.
func (r *GCResult) WriteText(out io.Writer) {
	var w strings.Builder
	defer func() { io.WriteString(out, dist.PrintableLines(w.String())) }()
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	writeRemoved(&w, verb, r.Removed)
	fmt.Fprintf(&w, "%s %d unreferenced blob(s) (%s) and %d temporary file(s) of interrupted runs (%s)\n", verb, len(r.Blobs), human(r.Bytes), r.Temps, human(r.TempBytes))
}
