package objstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// GC deletes the blobs in the bucket that the store's index does not
// refer to (left by a killed or refused import, or dropped by a prune),
// and the probe objects of conditional-write checks killed before their
// clean-up (counted as temporary files),
// under the import lease, so no import runs meanwhile: an import in
// progress holds the lease, and gc is refused naming it (or, with wait,
// waits for it). It records the run in the index by a write conditional
// on the ETag it read, and only then deletes (so an import that somehow
// ran past an expired lease fails at its own index write rather than
// refer to a deleted blob). dir is a new private scratch directory. Each
// deletion is independent: a gc killed at any moment leaves a consistent
// store, and a re-run deletes the rest.
func GC(ctx context.Context, c *Client, dir, holder string, wait, dryRun bool) (*store.GCResult, error) {
	if !dryRun {
		if err := c.CheckConditional(ctx); err != nil {
			return nil, err
		}
	}
	lease, err := AcquireLeaseWait(ctx, c, holder, LeaseTTL, wait, TellWaiting)
	if err != nil {
		return nil, fmt.Errorf("%w\nthe store was not changed", err)
	}
	defer lease.Release()
	staged, err := Stage(ctx, c, dir)
	if err != nil {
		return nil, err
	}
	if staged.ETag == "" {
		return nil, fmt.Errorf("store %s: %w: no index in the bucket\nhint: check --store", c.addr, store.ErrNoStore)
	}
	st, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	ix := st.Index()
	used := ix.Blobs()
	objs, err := c.ListBlobs(ctx)
	if err != nil {
		return nil, err
	}
	res := &store.GCResult{OK: true, DryRun: dryRun, Blobs: []verify.Digest{}, Removed: []store.RemovedBlob{}}
	var doomed []string
	for _, o := range objs {
		hex := strings.TrimPrefix(o.Name, BlobPrefix)
		if !verify.IsHex64(hex) {
			continue
		}
		d := verify.Digest("sha256:" + hex)
		if _, ok := used[d]; ok {
			continue
		}
		what := ix.Unreferenced[d]
		if what == "" {
			what = store.UnknownBlob
		}
		doomed = append(doomed, o.Name)
		res.Blobs = append(res.Blobs, d)
		res.Bytes += o.Size
		res.Removed = append(res.Removed, store.RemovedBlob{Blob: d, Bytes: o.Size, What: what})
	}
	if !dryRun && len(doomed) > 0 {
		// The run is recorded in the index before anything is deleted, by
		// a write conditional on the ETag read: an import that staged the
		// same index (one that ran on past an expired lease, say while it
		// was stopped) then fails at its own index write, and one that
		// wrote its index first makes this write fail, so nothing is
		// deleted that an index refers to.
		store.RecordGC(ix, res, nil)
		if err := store.WriteIndex(dir, ix); err != nil {
			return res, err
		}
		data, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
		if err != nil {
			return res, err
		}
		if err := lease.Held(ctx); err != nil {
			return res, fmt.Errorf("%w\nnothing was deleted", err)
		}
		if _, err := c.PutBytes(ctx, IndexName, staged.ETag, data); err != nil {
			if errors.Is(err, ErrPrecondition) {
				return res, fmt.Errorf("store %s: another writer replaced the index since gc began\nnothing was deleted; run gc again", c.addr)
			}
			return res, fmt.Errorf("recording the gc in the index: %w\nnothing was deleted; run gc again", err)
		}
		for i, name := range doomed {
			if i%100 == 0 { // the lease still this one's, every 100 deletions
				if err := lease.Held(ctx); err != nil {
					return res, fmt.Errorf("%w\n%d of %d deleted; no index refers to them; run gc again", err, i, len(doomed))
				}
			}
			if err := c.Delete(ctx, name); err != nil && !errors.Is(err, ErrNotFound) {
				return res, fmt.Errorf("deleting blob %s: %w\n%d of %d deleted; no index refers to them; run gc again", res.Blobs[i].Short(), err, i, len(doomed))
			}
		}
	}
	// The probe objects of checks killed before their clean-up: any older
	// than ProbeStale (no check runs that long; the server's clock is
	// within the 15 minutes request signatures allow of this one's).
	probes, err := c.List(ctx, probePrefix, MaxList)
	if err != nil {
		return res, err
	}
	for _, o := range probes {
		if time.Since(o.Modified) < ProbeStale {
			continue
		}
		if !dryRun {
			if err := c.Delete(ctx, o.Name); err != nil && !errors.Is(err, ErrNotFound) {
				return res, fmt.Errorf("deleting %s, left by a killed check: %w\nrun gc again", o.Name, err)
			}
		}
		res.Temps++
		res.TempBytes += o.Size
	}
	return res, nil
}
