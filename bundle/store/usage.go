package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
)

// Usage: how often each provider package and module version was downloaded
// through 'airgap serve', and when last. serve counts in memory and adds
// its counts to the file in batches (the server's usage counter); every replica
// serving the store adds to the same file, so the counts are the site's:
//
//	STATE/usage/usage.json   the counts, replaced whole (temp, fsync, rename, fsync dir)
//	STATE/usage/lock         flock(2) held by the one replica writing
//
// A writer takes the lock, reads the file, adds its counts, writes a
// temporary file beside it, fsyncs it, renames it over the file and fsyncs
// the directory, then lets go (AddUsage): two replicas never lose each
// other's counts, a crash at any moment leaves the old file or the new one
// whole (and at most a temporary file, which the next writer removes),
// and a reader (inventory, prune, the catalog page of a replica) never
// needs the lock. Import, prune and gc never write here.
//
// The file holds one entry per provider package (address, version,
// platform) and per module version that was downloaded at least once:
// entries are made only from catalog entries a download named, so what a
// client sends cannot add one; entries of versions pruned or withdrawn
// since are kept (the file is bounded by what was ever imported).
// ReadUsage refuses a file over maxUsageFile bytes before reading it.
// Reading costs about eleven times the file's size in short-lived
// allocations and ~4 µs of CPU an entry: for 50,000 entries (9 MB, one a
// line) about 100 MB and 0.2 s, which a replica pays when it writes
// (every usage-flush with downloads to add) and when another has written.

// usageFormat is the version of usage.json this airgap writes and reads.
const usageFormat = 1

const (
	usageDir  = "usage"
	usageName = "usage.json"
	// maxUsageFile bounds the file read: about 200,000 entries of ~160
	// bytes, four times the 50,000 packages of make bench's largest
	// catalog. Reading one costs about three times its size in memory,
	// for as long as it is parsed.
	maxUsageFile = 32 << 20
	// maxUsageString bounds an entry's address, version and platform.
	maxUsageString = 512
)

// UsageDir is where serve keeps the download counts.
func UsageDir(root string) string { return filepath.Join(StateDir(root), usageDir) }

// UsageFile is the file the counts are in.
func UsageFile(root string) string { return filepath.Join(UsageDir(root), usageName) }

// Usage kinds.
const (
	UsageProvider = "provider"
	UsageModule   = "module"
	// UsageRelease counts a Terraform or OpenTofu CLI release archive
	// (Address the product, Platform its os_arch). In the file it is
	// written as a provider entry under dist.ReleaseKeyNamespace
	// (cli.airgap.invalid/PRODUCT): the readers of older airgaps refuse
	// a kind or a field they do not know, and read this as the counts of
	// a provider that no catalog can hold (a host under .invalid), so
	// they go on reading the file and show nothing of it.
	UsageRelease = "release"
)

// UsageKey names what a count is of: a provider package (Platform set), a
// module version, or a CLI release's archive, as the catalog spells them.
type UsageKey struct {
	Kind     string // UsageProvider, UsageModule or UsageRelease
	Address  string // host/namespace/type, host/namespace/name/system, or the product
	Version  string
	Platform string // os_arch of a provider package or release; "" for a module
}

// releaseHost is the host of the file's spelling of a release entry
// (UsageRelease).
var releaseHost = dist.ReleaseKeyNamespace("")

// fileKey is k as the file spells it (UsageRelease), fromFileKey its
// inverse.
func fileKey(k UsageKey) UsageKey {
	if k.Kind == UsageRelease {
		k.Kind, k.Address = UsageProvider, releaseHost+k.Address
	}
	return k
}

func fromFileKey(k UsageKey) UsageKey {
	if p, ok := strings.CutPrefix(k.Address, releaseHost); ok && k.Kind == UsageProvider {
		k.Kind, k.Address = UsageRelease, p
	}
	return k
}

// VersionKey is the catalog key of the version k counts downloads of
// (dist.ProviderVersion.Key, dist.ModuleVersion.Key).
func (k UsageKey) VersionKey() string { return dist.VersionKey(k.Address, k.Version) }

// UsageCount is how many downloads completed, and when the last one did.
type UsageCount struct {
	Downloads int64
	Last      time.Time
}

// Add merges o into c: the downloads add up (to at most math.MaxInt64),
// the later time stays.
func (c *UsageCount) Add(o UsageCount) {
	if c.Downloads > math.MaxInt64-o.Downloads {
		c.Downloads = math.MaxInt64
	} else {
		c.Downloads += o.Downloads
	}
	if o.Last.After(c.Last) {
		c.Last = o.Last
	}
}

// Usage is the content of the usage file.
type Usage struct {
	// Since is when counting began for this store (the file was made);
	// zero when there is no file yet.
	Since  time.Time
	Counts map[UsageKey]UsageCount
}

type usageFile struct {
	Format  int          `json:"format"`
	Since   time.Time    `json:"since"`
	Entries []usageEntry `json:"entries"`
}

type usageEntry struct {
	Kind      string    `json:"kind"`
	Address   string    `json:"address"`
	Version   string    `json:"version"`
	Platform  string    `json:"platform,omitempty"`
	Downloads int64     `json:"downloads"`
	Last      time.Time `json:"last_fetched_at"`
}

// ErrUsage: the usage file is unreadable (nothing was changed).
var ErrUsage = errors.New("the download counts are unreadable")

// ReadUsage reads the store's download counts; with no file yet, an
// empty Usage with a zero Since.
func ReadUsage(root string) (*Usage, error) {
	// Only a regular file: a FIFO would block the reader (and the writer
	// holding the lock), and serve never makes a link.
	fi, err := os.Lstat(UsageFile(root))
	if errors.Is(err, os.ErrNotExist) {
		return &Usage{Counts: map[UsageKey]UsageCount{}}, nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)\nhint: move it aside (serve then counts anew from an empty file); nothing was changed", UsageFile(root), fi.Mode().Type())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fi.Size() > maxUsageFile {
		// Refused before it is read: a replica retries every flush.
		return nil, fmt.Errorf("%w: %s: larger than %d bytes\nhint: move it aside (serve then counts anew from an empty file); nothing was changed", ErrUsage, UsageFile(root), maxUsageFile)
	}
	f, err := os.Open(UsageFile(root))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	defer f.Close()
	return decodeUsage(f, UsageFile(root))
}

// decodeUsage reads a usage file of at most maxUsageFile bytes, checking
// every entry; the same key twice is added up.
func decodeUsage(r io.Reader, name string) (*Usage, error) {
	var buf bytes.Buffer
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Size() <= maxUsageFile {
			buf.Grow(int(fi.Size()) + bytes.MinRead) // read once, no doubling
		}
	}
	_, err := buf.ReadFrom(io.LimitReader(r, maxUsageFile+1))
	data := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUsage, name, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s\nhint: move it aside (serve then counts anew from an empty file); nothing was changed", ErrUsage, name, fmt.Sprintf(format, a...))
	}
	if len(data) > maxUsageFile {
		return nil, bad("larger than %d bytes", maxUsageFile)
	}
	var uf usageFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&uf); err != nil {
		return nil, bad("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("more than one JSON document")
	}
	if uf.Format != usageFormat {
		return nil, bad("format %d, this airgap reads %d", uf.Format, usageFormat)
	}
	u := &Usage{Since: uf.Since.UTC(), Counts: make(map[UsageKey]UsageCount, len(uf.Entries))}
	for i, e := range uf.Entries {
		k := UsageKey{Kind: e.Kind, Address: e.Address, Version: e.Version, Platform: e.Platform}
		if k.Kind == UsageRelease {
			// Only ever written as a provider entry (fileKey).
			return nil, bad("entry %d: kind %q", i, k.Kind)
		}
		if err := checkUsageEntry(k, e.Downloads); err != nil {
			return nil, bad("entry %d: %v", i, err)
		}
		k = fromFileKey(k)
		c := u.Counts[k]
		c.Add(UsageCount{Downloads: e.Downloads, Last: e.Last.UTC()})
		u.Counts[k] = c
	}
	return u, nil
}

// checkUsageEntry checks what an entry may hold: a known kind, a platform
// exactly for providers, bounded printable strings, a count that is not
// negative.
func checkUsageEntry(k UsageKey, n int64) error {
	switch {
	case k.Kind != UsageProvider && k.Kind != UsageModule && k.Kind != UsageRelease:
		return fmt.Errorf("kind %q: want provider or module", dist.Printable(k.Kind))
	case (k.Kind != UsageModule) != (k.Platform != ""):
		return fmt.Errorf("a provider entry names a platform, a module entry none")
	case n < 0:
		return fmt.Errorf("downloads %d", n)
	}
	for _, s := range []string{k.Address, k.Version, k.Platform} {
		if len(s) > maxUsageString || dist.Printable(s) != s {
			return fmt.Errorf("%q is not an address, version or platform", dist.Printable(s))
		}
	}
	if k.Address == "" || k.Version == "" {
		return fmt.Errorf("an entry without address or version")
	}
	return nil
}

// encodeUsage is the file form of u: one entry a line, sorted (by
// strings: the order is for people reading it, and parsing versions to
// sort 50,000 entries cost seconds).
func encodeUsage(u *Usage) ([]byte, error) {
	entries := make([]usageEntry, 0, len(u.Counts))
	for k, c := range u.Counts {
		k = fileKey(k)
		entries = append(entries, usageEntry{Kind: k.Kind, Address: k.Address, Version: k.Version, Platform: k.Platform,
			Downloads: c.Downloads, Last: c.Last.UTC()})
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := &entries[i], &entries[j]
		if a.Kind != b.Kind {
			return a.Kind > b.Kind // providers first
		}
		if a.Address != b.Address {
			return a.Address < b.Address
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Platform < b.Platform
	})
	since, err := json.Marshal(u.Since.UTC())
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(entries) * 200)
	fmt.Fprintf(&b, "{\"format\":%d,\"since\":%s,\"entries\":[", usageFormat, since)
	enc := json.NewEncoder(&b) // one entry and a newline at a time
	enc.SetEscapeHTML(false)
	for i := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		if err := enc.Encode(&entries[i]); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // the encoder's newline
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}

// ErrUsageBusy: another writer held the usage lock for longer than the
// caller would wait (nothing was changed).
var ErrUsageBusy = errors.New("another replica holds the download counts' lock")

// AddUsage adds delta to the store's download counts under the usage
// lock, waiting at most wait for it (ErrUsageBusy), and returns what the
// file holds now. Without a file it makes one, whose Since is now: serve
// calls it with an empty delta when it starts, so the file says from when
// downloads were counted. With an error nothing was added, unless the
// returned Usage is not nil: then the file was replaced but its directory
// could not be synced (a crash may bring the previous file back).
func AddUsage(root string, delta map[UsageKey]UsageCount, now time.Time, wait time.Duration) (*Usage, error) {
	dir := UsageDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := tryLockPath(filepath.Join(dir, "lock"), wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	removeUsageTemps(dir)
	u, err := ReadUsage(root)
	if err != nil {
		return nil, err
	}
	if u.Since.IsZero() {
		u.Since = now.UTC().Truncate(time.Second)
	} else if len(delta) == 0 {
		return u, nil // nothing to add, and the file exists
	}
	for k, c := range delta {
		if err := checkUsageEntry(k, c.Downloads); err != nil {
			return nil, fmt.Errorf("internal error: counting %v: %v", k, err)
		}
		have := u.Counts[k]
		have.Add(UsageCount{Downloads: c.Downloads, Last: c.Last.UTC().Truncate(time.Second)})
		u.Counts[k] = have
	}
	data, err := encodeUsage(u)
	if err != nil {
		return nil, err
	}
	p, err := prepareAtomic(UsageFile(root), data, 0o600)
	if err != nil {
		return nil, err
	}
	defer p.abort()
	if err := p.commit(); err != nil {
		if p.done {
			return u, err
		}
		return nil, err
	}
	return u, nil
}

// tryLockPath takes the lock file at path, trying every 20 ms for at most
// wait.
func tryLockPath(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := osfile.TryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if ok {
			return func() { osfile.Unlock(f); f.Close() }, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w (%s, waited %v)", ErrUsageBusy, path, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeUsageTemps removes the temporary files of writers that died
// before their rename (called under the lock: no live writer has one).
func removeUsageTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+usageName+".") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// versionUse is, per catalog version (dist key), when it was last imported
// and downloaded: what 'prune --unused-for' judges by.
type versionUse struct {
	since    time.Time
	imported map[string]time.Time
	fetched  map[string]UsageCount // all platforms of a provider version together
}

// ErrUsageWindow: the download counts do not cover the time asked about.
var ErrUsageWindow = errors.New("the download counts do not cover that time")

// readVersionUse reads the counts for 'prune --unused-for d' at now. It
// refuses when the counts do not reach back d: a version nobody was
// counting for is not unused.
func readVersionUse(root string, ix *Index, now time.Time, d time.Duration) (*versionUse, error) {
	u, err := ReadUsage(root)
	if err != nil {
		return nil, err
	}
	if u.Since.IsZero() {
		return nil, fmt.Errorf("%w: no download has been counted for this store (%s does not exist)\nhint: 'airgap serve' counts downloads (usage = \"on\", the default) when it can write STORE/state; prune --unused-for works once it has counted for that long", ErrUsageWindow, UsageFile(root))
	}
	cut := now.Add(-d)
	if u.Since.After(cut) {
		return nil, fmt.Errorf("%w: downloads have been counted since %s, %s ago; --unused-for %s needs counts for all of that time\nhint: give a shorter --unused-for, or wait until %s",
			ErrUsageWindow, u.Since.Format(time.RFC3339), days(now.Sub(u.Since)), days(d), u.Since.Add(d).Format(time.RFC3339))
	}
	v := &versionUse{since: u.Since, imported: lastImported(ix), fetched: map[string]UsageCount{}}
	for k, c := range u.Counts {
		vk := k.VersionKey()
		have := v.fetched[vk]
		have.Add(c)
		v.fetched[vk] = have
	}
	return v, nil
}

// days is d in days when it is a whole number of them ("90d"), else as Go
// writes durations.
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	if d > 48*time.Hour {
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	}
	return d.Round(time.Second).String()
}

// lastUse is the later of the version's last import and last download;
// false when there is neither (a hand-made index: kept).
func (v *versionUse) lastUse(key string) (time.Time, bool) {
	t, imported := v.imported[key]
	c := v.fetched[key]
	if c.Last.After(t) {
		t = c.Last
	}
	return t, imported || !c.Last.IsZero()
}

// explain is what prune says about a removed version.
func (v *versionUse) explain(key, entry string) UnusedVersion {
	out := UnusedVersion{Entry: entry, Downloads: v.fetched[key].Downloads}
	if t := v.fetched[key].Last; !t.IsZero() {
		out.LastFetchedAt = t.UTC().Format(time.RFC3339)
	}
	if t, ok := v.imported[key]; ok {
		out.ImportedAt = t.UTC().Format(time.RFC3339)
	}
	return out
}

// text is the explanation for people.
func (u UnusedVersion) text() string {
	var parts []string
	if u.ImportedAt != "" {
		parts = append(parts, "last imported "+u.ImportedAt)
	}
	if u.LastFetchedAt == "" {
		parts = append(parts, "not downloaded since counting began")
	} else {
		parts = append(parts, fmt.Sprintf("%d download(s), the last %s", u.Downloads, u.LastFetchedAt))
	}
	return strings.Join(parts, ", ")
}
