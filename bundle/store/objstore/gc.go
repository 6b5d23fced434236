package objstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// GC deletes the blobs in the bucket that the store's index does not
// refer to (left by a killed or refused import, or dropped by a prune),
// under the import lease, so no import runs meanwhile: an import in
// progress holds the lease, and gc is refused naming it (or, with
// wait, waits for it). It deletes, then
// records the run in the index by a write conditional on the ETag it read
// (so an import that somehow ran past an expired lease fails at its own
// index write rather than refer to a deleted blob). dir is a new private
// scratch directory. Each deletion is independent: a gc killed at any
// moment leaves a consistent store, and a re-run finishes the job.
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
	objs, err := c.List(ctx, BlobPrefix, MaxList)
	if err != nil {
		return nil, err
	}
	res := &store.GCResult{OK: true, DryRun: dryRun, Blobs: []verify.Digest{}, Removed: []store.RemovedBlob{}}
	for _, o := range objs {
		hex := strings.TrimPrefix(o.Name, BlobPrefix)
		if !verify.IsHex64(hex) {
			continue
		}
		d := verify.Digest("sha256:" + hex)
		if _, ok := used[d]; ok {
			continue
		}
		if !dryRun {
			if len(res.Blobs)%100 == 0 { // the lease still this one's, every 100 deletions
				if err := lease.Held(ctx); err != nil {
					return res, err
				}
			}
			if err := c.Delete(ctx, o.Name); err != nil && !errors.Is(err, ErrNotFound) {
				return res, fmt.Errorf("deleting blob %s: %w\nthe index was not changed and refers to no deleted blob; run gc again", d.Short(), err)
			}
		}
		what := ix.Unreferenced[d]
		if what == "" {
			what = store.UnknownBlob
		}
		res.Blobs = append(res.Blobs, d)
		res.Bytes += o.Size
		res.Removed = append(res.Removed, store.RemovedBlob{Blob: d, Bytes: o.Size, What: what})
	}
	if dryRun || len(res.Blobs) == 0 {
		return res, nil
	}
	store.RecordGC(ix, res, nil)
	if err := store.WriteIndex(dir, ix); err != nil {
		return res, err
	}
	data, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
	if err != nil {
		return res, err
	}
	if _, err := c.PutBytes(ctx, IndexName, staged.ETag, data); err != nil {
		return res, fmt.Errorf("recording the gc in the index (the blobs were removed; the store is consistent): %w", err)
	}
	return res, nil
}
