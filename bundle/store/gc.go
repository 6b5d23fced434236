package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/airgap/airgap/verify"
)

// MaintenanceEntry is one prune or gc run in the store's history.
type MaintenanceEntry struct {
	Action       string    `json:"action"` // "prune" or "gc"
	Time         time.Time `json:"time"`
	Policy       string    `json:"policy,omitempty"`  // prune: what was asked
	Removed      []string  `json:"removed,omitempty"` // prune: versions removed
	BlobsRemoved int       `json:"blobs_removed"`
	BytesRemoved int64     `json:"bytes_removed"`
	TempsRemoved int       `json:"temps_removed,omitempty"`
	TempBytes    int64     `json:"temp_bytes_removed,omitempty"`
}

// MaxMaintenanceHistory bounds the maintenance history kept in index.json
// (oldest entries are dropped), so repeated gc runs cannot grow it for good.
const MaxMaintenanceHistory = 1000

// GCOptions configure GC.
type GCOptions struct {
	Wait   bool // wait for an import or prune to finish instead of ErrLocked
	DryRun bool // only report what would be removed
	Now    func() time.Time
}

// GCResult says what GC removed (or would remove): 'airgap gc --json'.
type GCResult struct {
	OK     bool            `json:"ok"`
	DryRun bool            `json:"dry_run"`
	Blobs  []verify.Digest `json:"blobs_removed"` // never nil
	Bytes  int64           `json:"bytes_removed"`
	// Removed says of each blob in Blobs its size and what it was (the
	// version and part, from the store's records); never nil.
	Removed   []RemovedBlob `json:"removed"`
	Temps     int           `json:"temps_removed"` // temporary files of interrupted runs
	TempBytes int64         `json:"temp_bytes_removed"`
}

// GC deletes the blobs no catalog entry references (after a prune or a
// withdrawal) and the temporary files an interrupted import, prune or gc
// left. It holds the store lock, so no import runs meanwhile (an import
// places blobs before its index refers to them). It is safe while 'airgap
// serve' runs: the server serves only blobs its catalog snapshot refers to,
// a download in flight keeps its open file after the unlink, and a snapshot
// still naming a removed blob answers 404 until its reload (within 2 s).
// Each removal is independent, so a GC killed at any moment leaves a
// consistent store (the index never refers to a removed blob) and a re-run
// finishes the job. A run that removed something is recorded in the index's
// maintenance history.
func GC(root string, opt GCOptions) (*GCResult, error) {
	unlock, err := lockExisting(root, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &GCResult{OK: true, DryRun: opt.DryRun, Blobs: []verify.Digest{}, Removed: []RemovedBlob{}}
	if res.Temps, res.TempBytes, err = cleanTmp(root, opt.DryRun); err != nil {
		return nil, fmt.Errorf("removing temporary files: %w", err)
	}
	ix, err := readIndex(root)
	if err != nil {
		return nil, err
	}
	if err := sweep(root, ix, res, ix.Unreferenced); err != nil {
		return res, err
	}
	if opt.DryRun || (len(res.Blobs) == 0 && res.Temps == 0) {
		return res, nil
	}
	tidyUnreferenced(root, ix)
	ix.recordMaintenance(MaintenanceEntry{Action: "gc", Time: stamp(opt.Now), BlobsRemoved: len(res.Blobs), BytesRemoved: res.Bytes, TempsRemoved: res.Temps, TempBytes: res.TempBytes})
	if err := WriteIndex(root, ix); err != nil {
		return res, fmt.Errorf("recording the gc in the index (the blobs were removed; the store is consistent): %w", err)
	}
	return res, nil
}

// lockExisting takes the lock of an existing store (prune, gc).
func lockExisting(root string, wait bool) (func(), error) {
	if _, err := os.Stat(indexPath(root)); err != nil {
		return nil, fmt.Errorf("%w: %s has no %s\nhint: check --store", ErrNoStore, root, indexName)
	}
	unlock, err := lockStore(context.Background(), root, wait)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w\nhint: wait for it to finish, or use --wait\nthe store was not changed", err)
		}
		return nil, fmt.Errorf("locking the store: %w", err)
	}
	return unlock, nil
}

// sweep removes (unless res.DryRun) every blob in blobs/ that ix does not
// reference (Index.Blobs: the catalog, the approvals, and the bundles and
// chains of custody its history keeps), adding each to res, named from
// names (what each blob was). The caller holds the lock.
func sweep(root string, ix *Index, res *GCResult, names map[verify.Digest]string) error {
	blobs, err := listBlobs(root)
	if err != nil {
		return err
	}
	used := ix.Blobs()
	for _, d := range blobs {
		if _, ok := used[d]; ok {
			continue
		}
		p := BlobPath(root, d)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if !res.DryRun {
			if testHookGCRemove != nil {
				testHookGCRemove()
			}
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("removing blob %s: %w", d.Short(), err)
			}
		}
		res.Blobs = append(res.Blobs, d)
		res.Bytes += fi.Size()
		what := names[d]
		if what == "" {
			what = unknownBlob
		}
		res.Removed = append(res.Removed, RemovedBlob{Blob: d, Bytes: fi.Size(), What: what})
	}
	if len(res.Blobs) > 0 && !res.DryRun {
		return syncDir(blobDir(root))
	}
	return nil
}

// testHookGCRemove runs before each blob removal (tests only).
var testHookGCRemove func()

func (ix *Index) recordMaintenance(e MaintenanceEntry) {
	ix.Maintenance = append(ix.Maintenance, e)
	if n := len(ix.Maintenance); n > MaxMaintenanceHistory {
		ix.Maintenance = append([]MaintenanceEntry(nil), ix.Maintenance[n-MaxMaintenanceHistory:]...)
	}
}

func stamp(now func() time.Time) time.Time {
	if now == nil {
		now = time.Now
	}
	return now().UTC().Truncate(time.Second)
}

// UnknownBlob is what GC says of a removed blob the store has no record of.
const UnknownBlob = unknownBlob

// RecordGC records in ix a gc that removed res's blobs from a store kept
// elsewhere (in object storage), as GC records its own: the removed blobs
// leave the records of unreferenced blobs (as do blobs referenced again),
// and the run joins the maintenance history.
func RecordGC(ix *Index, res *GCResult, now func() time.Time) {
	for _, d := range res.Blobs {
		delete(ix.Unreferenced, d)
	}
	used := ix.Blobs()
	for d := range ix.Unreferenced {
		if _, ok := used[d]; ok {
			delete(ix.Unreferenced, d)
		}
	}
	if len(ix.Unreferenced) == 0 {
		ix.Unreferenced = nil
	}
	ix.recordMaintenance(MaintenanceEntry{Action: "gc", Time: stamp(now), BlobsRemoved: len(res.Blobs), BytesRemoved: res.Bytes})
}
