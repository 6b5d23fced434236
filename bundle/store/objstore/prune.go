package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// Prune prunes the store in the bucket as store.Prune prunes a directory,
// under the import lease (an import in progress holds it; prune is then
// refused naming it, or with opt.Wait waits for it). The directory prune runs in dir, a new private
// scratch directory holding the bucket's index, import.hcl, the blobs
// Stage reads, and for every other blob the bucket lists an empty sparse
// file of its size (so the prune's plan, its counts and its records of
// unreferenced blobs are what they are on disk); then the pruned index is
// written by a write conditional on the ETag read (the index first, as on
// disk), and then the blobs the prune deleted in dir are deleted from the
// bucket. Interrupted after the index, 'airgap gc' deletes the rest.
func Prune(ctx context.Context, c *Client, dir, holder string, opt store.PruneOptions) (*store.PruneResult, error) {
	if !opt.DryRun {
		if err := c.CheckConditional(ctx); err != nil {
			return nil, err
		}
	}
	lease, err := AcquireLeaseWait(ctx, c, holder, LeaseTTL, opt.Wait, TellWaiting)
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
	objs, err := c.ListBlobs(ctx)
	if err != nil {
		return nil, err
	}
	blobDir := filepath.Join(dir, filepath.FromSlash(BlobPrefix))
	var listed []string
	for _, o := range objs {
		hex := strings.TrimPrefix(o.Name, BlobPrefix)
		if !verify.IsHex64(hex) {
			continue
		}
		listed = append(listed, hex)
		if staged.Fetched[hex] {
			continue
		}
		// A placeholder: no bytes, its size for the prune's counts.
		f, err := os.OpenFile(filepath.Join(blobDir, hex), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			return nil, err
		}
		err = f.Truncate(o.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	res, err := store.Prune(dir, opt)
	if err != nil || opt.DryRun {
		return res, err
	}
	if len(res.Removed) > 0 || res.Blobs > 0 {
		data, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
		if err != nil {
			return nil, err
		}
		if err := lease.Held(ctx); err != nil {
			return nil, fmt.Errorf("%w\nthe store was not changed", err)
		}
		if _, err := c.PutBytes(ctx, IndexName, staged.ETag, data); err != nil {
			if errors.Is(err, ErrPrecondition) {
				return nil, fmt.Errorf("store %s: another writer replaced the index since this prune began\nthe store was not changed; run the prune again", c.addr)
			}
			return nil, fmt.Errorf("writing the index: %w\nthe store was not changed", err)
		}
	}
	deleted := 0
	for _, hex := range listed {
		if _, err := os.Lstat(filepath.Join(blobDir, hex)); err == nil {
			continue // kept
		}
		if err := c.Delete(ctx, BlobPrefix+hex); err != nil && !errors.Is(err, ErrNotFound) {
			return res, fmt.Errorf("%w\nthe versions were removed from the catalog and %d of %d blob(s) deleted; run 'airgap gc --store ADDR' to delete the rest", err, deleted, res.Blobs)
		}
		deleted++
	}
	return res, nil
}

// UpdateIndex changes the index of the store in the bucket as fn changes
// a directory store's (a key retired or revoked): under the import lease,
// fn runs on dir, a new private scratch directory staged from the bucket
// (objstore.Stage); if fn changed its index, the new index is written by
// a write conditional on the ETag read, so a change made meanwhile by
// another writer is never lost (this one is refused instead).
func UpdateIndex(ctx context.Context, c *Client, dir, holder string, fn func(root string) error) error {
	if err := c.CheckConditional(ctx); err != nil {
		return err
	}
	lease, err := AcquireLease(ctx, c, holder, LeaseTTL)
	if err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	defer lease.Release()
	staged, err := Stage(ctx, c, dir)
	if err != nil {
		return err
	}
	if staged.ETag == "" {
		return fmt.Errorf("store %s: %w: no index in the bucket\nhint: check --store", c.addr, store.ErrNoStore)
	}
	before, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
	if err != nil {
		return err
	}
	if err := fn(dir); err != nil {
		return err
	}
	after, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
	if err != nil || bytes.Equal(before, after) {
		return err
	}
	if err := lease.Held(ctx); err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	if _, err := c.PutBytes(ctx, IndexName, staged.ETag, after); err != nil {
		if errors.Is(err, ErrPrecondition) {
			return fmt.Errorf("store %s: another writer replaced the index meanwhile\nthe store was not changed; run the command again", c.addr)
		}
		return fmt.Errorf("writing the index: %w\nthe store was not changed", err)
	}
	return nil
}
