package protocol

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/internal/filestamp"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/verify"
)

// Who uses what: serve counts the downloads of provider packages (per
// address, version and platform), of module versions, and of the CLI
// releases' archives (per product, version and platform), with the time of
// the last one, and keeps the counts in the store's state
// (store.AddUsage: STATE/usage/usage.json, shared by every replica).
//
// What counts: a GET of a provider package or a module archive (the
// registry's download_url, the mirror's archive url, or an OCI blob that is
// one) whose last byte went out — a 200 with the whole body, or a 206 whose
// one range ends at the last byte and was sent whole. So a download counts
// once: Terraform's HEAD before the zip (1.12.0) counts nothing, nor does a
// 304, nor a download the client broke off, and a download resumed with a
// Range to the end counts when it completes. A client that reads only the
// last byte counts as one download (it could as well fetch the whole
// package: counts can be made higher by a client with access, never
// lower). Metadata (versions lists, download answers, mirror documents,
// SHA256SUMS, signatures, reports) never counts.
//
// The same bytes listed under two catalog entries (a package exported from
// both registry.terraform.io and registry.opentofu.org) count for both: a
// download URL names the bytes, not the address the client asked about.
//
// Cost per request: none for anything but a package or archive GET; for
// those, a response-writer wrapper that keeps io.ReaderFrom and, once the
// body is out, one mutex-guarded map update per catalog entry owning the
// blob (no I/O). A goroutine adds the counts to the file every
// UsageOptions.Interval (default 10 s), and once more when serve stops,
// after the downloads in flight have drained.
//
// Memory: pending counts are keyed by catalog entries, taken from the
// snapshot's owner index (never from request text), so they hold at most
// one entry per provider package and module version of the catalogs served
// since the last flush, and never more than maxPendingUsage entries (about
// 200 bytes each; beyond, counts are dropped and the drop is logged); a
// request for anything not in the catalog is answered before counting. The
// counts shown (the file as last read, plus what is pending) are as many
// entries as the file has, which is bounded by what was ever imported
// (store.Usage).
//
// Failure: a flush that cannot write (a read-only or full disk, another
// replica holding the lock for more than the lock wait) keeps its counts
// pending and tries again at the next tick; the error is logged once, and
// the recovery. A crash loses at most the counts of one interval.

// DefaultUsageInterval is how often the counts are written by default.
const DefaultUsageInterval = 10 * time.Second

// maxPendingUsage bounds the counts held between two flushes.
const maxPendingUsage = 1 << 20

// usageLockWait is how long a flush waits for another replica's.
const usageLockWait = 5 * time.Second

// UsageOptions configure StartUsage.
type UsageOptions struct {
	Interval time.Duration // 0: DefaultUsageInterval
	// Add, if set, adds a batch of counts where they are kept instead of
	// store.AddUsage on the store's directory (a replica of a store in
	// object storage adds them to the bucket's file), returning the file
	// as it now is.
	Add func(delta map[store.UsageKey]store.UsageCount, now time.Time) (*store.Usage, error)
	Log *slog.Logger
	Now func() time.Time // tests
}

// Usage counts downloads and keeps the counts in the store's state.
type Usage struct {
	root string
	opt  UsageOptions

	mu      sync.Mutex
	pending map[store.UsageKey]store.UsageCount
	// inflight is what a flush is writing; with file, changed together
	// under mu, so Of never shows a count twice or not at all.
	inflight map[store.UsageKey]store.UsageCount
	dropped  int64
	max      int // the bound on pending keys: maxPendingUsage

	file    atomic.Pointer[store.Usage] // the file as last read or written
	stamp   string                      // of that file (fileStamp; flush goroutine only)
	failing bool                        // the last flush failed (flush goroutine only)

	flushMu sync.Mutex // one flush at a time
	stop    chan struct{}
	done    chan struct{}
}

// StartUsage starts counting for the store at root: it makes the usage
// file if there is none (its Since says from when downloads were counted)
// and reads it, then writes the counts every interval until Close. A
// store whose state cannot be written is counted in memory only (logged).
func StartUsage(root string, opt UsageOptions) *Usage {
	if opt.Interval <= 0 {
		opt.Interval = DefaultUsageInterval
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	u := &Usage{root: root, opt: opt, pending: map[store.UsageKey]store.UsageCount{}, max: maxPendingUsage, stop: make(chan struct{}), done: make(chan struct{})}
	u.file.Store(&store.Usage{Counts: map[store.UsageKey]store.UsageCount{}})
	u.flush()
	go u.loop()
	return u
}

func (u *Usage) loop() {
	defer close(u.done)
	t := time.NewTicker(u.opt.Interval)
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
			u.flush()
		}
	}
}

// Close stops the flush goroutine and writes what is pending (call it
// once the downloads in flight have finished).
func (u *Usage) Close() {
	if u == nil {
		return
	}
	select {
	case <-u.stop:
		return // closed before
	default:
	}
	close(u.stop)
	<-u.done
	u.flush()
}

// count notes one completed download of each key.
func (u *Usage) count(keys []store.UsageKey, at time.Time) {
	u.mu.Lock()
	for _, k := range keys {
		c, ok := u.pending[k]
		if !ok && len(u.pending) >= u.max {
			u.dropped++
			continue
		}
		c.Downloads++
		c.Last = at
		u.pending[k] = c
	}
	u.mu.Unlock()
}

// Of returns the count of k: the file's, plus what this replica has not
// written yet.
func (u *Usage) Of(k store.UsageKey) store.UsageCount {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.file.Load().Counts[k]
	c.Add(u.inflight[k])
	c.Add(u.pending[k])
	return c
}

// Since is when counting began for the store (zero: not known, the state
// is not writable).
func (u *Usage) Since() time.Time { return u.file.Load().Since }

// Flush writes the pending counts now (the flush goroutine does every
// interval).
func (u *Usage) Flush() { u.flush() }

// flush adds the pending counts to the file, or, with none pending, reads
// the file again if another replica changed it.
func (u *Usage) flush() {
	u.flushMu.Lock()
	defer u.flushMu.Unlock()
	u.mu.Lock()
	var delta map[store.UsageKey]store.UsageCount
	dropped := u.dropped
	if len(u.pending) > 0 {
		delta = u.pending
		u.pending, u.inflight = map[store.UsageKey]store.UsageCount{}, delta
	}
	u.dropped = 0
	u.mu.Unlock()
	if dropped > 0 {
		u.opt.Log.Error("download counts dropped: more catalog entries downloaded between two writes than the counter holds", "dropped", dropped, "max_entries", u.max)
	}
	if len(delta) == 0 && !u.file.Load().Since.IsZero() {
		u.reread()
		return
	}
	var f *store.Usage
	var err error
	if u.opt.Add != nil {
		f, err = u.opt.Add(delta, u.opt.Now())
	} else {
		f, err = store.AddUsage(u.root, delta, u.opt.Now(), usageLockWait)
	}
	u.mu.Lock()
	if f != nil {
		u.file.Store(f)
	} else {
		// Not written: keep the counts for the next tick, within the
		// same bound.
		for k, c := range delta {
			p, ok := u.pending[k]
			if !ok && len(u.pending) >= u.max {
				u.dropped += c.Downloads
				continue
			}
			p.Add(c)
			u.pending[k] = p
		}
	}
	u.inflight = nil
	u.mu.Unlock()
	if f != nil {
		// Another replica may write between our rename and a stat: read
		// the file again at the next tick with nothing to write.
		u.stamp = ""
	}
	switch {
	case err != nil && !u.failing:
		u.failing = true
		hint := "serve must be able to write STORE/state (in the systemd unit: ReadWritePaths); or turn counting off with usage = \"off\""
		if errors.Is(err, store.ErrUsage) {
			hint = "the file is not what serve writes: move it aside, and serve counts anew from an empty file"
		}
		u.opt.Log.Error("writing the download counts; they are kept in memory and written when it works again", "dir", store.UsageDir(u.root), "err", err, "hint", hint)
	case err == nil && u.failing:
		u.failing = false
		u.opt.Log.Info("writing the download counts again", "dir", store.UsageDir(u.root))
	}
}

// reread loads the file again when another replica has replaced it.
func (u *Usage) reread() {
	st, err := filestamp.Of(store.UsageFile(u.root))
	if err != nil || st == u.stamp {
		return
	}
	f, err := store.ReadUsage(u.root)
	if err != nil {
		u.opt.Log.Debug("reading the download counts", "err", err)
		return
	}
	u.mu.Lock()
	u.file.Store(f)
	u.mu.Unlock()
	u.stamp = st
}

// countedRole: the blobs whose downloads count.
func countedRole(role string) bool {
	return role == dist.RoleProviderPackage || role == dist.RoleModuleArchive || role == dist.RoleModuleZip
}

// usageKey names what a download of one owner of a blob counts for.
func usageKey(dl *access.Download) store.UsageKey {
	k := store.UsageKey{Kind: store.UsageModule, Address: dl.Address, Version: dl.Version}
	if dl.Kind == store.UsageProvider || dl.Kind == store.UsageRelease {
		k.Kind, k.Platform = dl.Kind, dl.Platform
	}
	return k
}

// countBlob counts a completed download of blob d for every catalog entry
// of the snapshot that has it as a package or archive (at most a few).
func (s *Answers) countBlob(st *Snapshot, d verify.Digest) {
	var keys [4]store.UsageKey
	ks := keys[:0]
	for _, dl := range st.ownerIndex()[d] {
		if countedRole(dl.Role) {
			ks = append(ks, usageKey(dl))
		}
	}
	if len(ks) > 0 {
		s.usage.count(ks, s.usage.opt.Now())
	}
}

// serveCounted serves a package or archive like http.ServeContent and
// counts it if its last byte went out (see the rules above). The status
// and body bytes are noted by a recorder of its own (Observe's), which
// nothing inside ServeContent asks for notes.
func (s *Answers) serveCounted(w http.ResponseWriter, r *http.Request, st *Snapshot, d verify.Digest, f *os.File) {
	rec := ops.NewRecorder(w)
	http.ServeContent(rec, r, "", time.Time{}, f)
	if completed(rec) {
		s.countBlob(st, d)
	}
}

// completed reports whether the answer sent the blob's last byte: a 200
// whose body is its Content-Length, or a 206 of one range ending at the
// last byte, sent whole (a multipart answer has no Content-Range of its
// own and does not count).
func completed(rec *ops.Recorder) bool {
	h := rec.Header()
	switch rec.Status() {
	case http.StatusOK:
		n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		return err == nil && n == rec.Written()
	case http.StatusPartialContent:
		first, last, size, ok := parseContentRange(h.Get("Content-Range"))
		return ok && last == size-1 && rec.Written() == last-first+1
	}
	return false
}

// parseContentRange reads "bytes FIRST-LAST/SIZE" (as net/http writes it).
func parseContentRange(s string) (first, last, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, total, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var errs [3]error
	first, errs[0] = strconv.ParseInt(a, 10, 64)
	last, errs[1] = strconv.ParseInt(b, 10, 64)
	size, errs[2] = strconv.ParseInt(total, 10, 64)
	if errors.Join(errs[:]...) != nil || first < 0 || last < first || size <= last {
		return 0, 0, 0, false
	}
	return first, last, size, true
}
