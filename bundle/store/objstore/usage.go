package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/airgap/airgap/bundle/store"
)

// UsageName is the object that holds the download counts every replica
// adds to (the directory store's STATE/usage/usage.json).
const UsageName = "state/usage/usage.json"

// maxUsage bounds the counts' object (the directory store bounds its file
// the same way).
const maxUsage = 32 << 20

// usageAttempts bounds the read-add-write rounds one flush makes when
// other replicas write at the same time (each round after the first
// waits 50 to 550 ms).
const usageAttempts = 20

// AddUsage adds a batch of download counts to the bucket's counts with no
// lost update: it reads the object and its ETag, adds the batch in the
// replica's directory exactly as a directory store adds it
// (store.AddUsage), and writes the result only if the object is still the
// one read (If-Match; If-None-Match: * for the first); if another replica
// wrote meanwhile, it reads again and retries, at most usageAttempts
// times. On an error the caller keeps the batch for its next flush.
func (r *Replica) AddUsage(delta map[store.UsageKey]store.UsageCount, now time.Time) (*store.Usage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	local := store.UsageFile(r.dir)
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		return nil, err
	}
	for attempt := 0; attempt < usageAttempts; attempt++ {
		if attempt > 0 {
			time.Sleep(50*time.Millisecond + rand.N(500*time.Millisecond))
		}
		data, o, err := r.c.ReadSmall(ctx, UsageName, maxUsage)
		etag := o.ETag
		switch {
		case errors.Is(err, ErrNotFound):
			data, etag = nil, ""
			os.Remove(local)
		case err != nil:
			return nil, err
		default:
			if err := writeAtomic(local, data); err != nil {
				return nil, err
			}
			os.Chmod(local, 0o600)
		}
		u, err := store.AddUsage(r.dir, delta, now, time.Second)
		if err != nil {
			return nil, err
		}
		merged, err := os.ReadFile(local)
		if err != nil {
			return nil, err
		}
		if etag != "" && bytes.Equal(merged, data) {
			return u, nil // nothing to add
		}
		_, err = r.c.PutBytes(ctx, UsageName, etag, merged)
		if errors.Is(err, ErrPrecondition) {
			continue // another replica wrote first: add to theirs
		}
		if err != nil {
			return nil, err
		}
		return u, nil
	}
	return nil, fmt.Errorf("adding download counts to %s: other replicas kept writing it (%d attempts); kept for the next flush", r.c.where(UsageName), usageAttempts)
}

// fetchUsage copies the bucket's download counts, if any, into dir's
// STATE/usage (for 'inventory --usage' and 'prune --unused-for').
func fetchUsage(ctx context.Context, c *Client, dir string) error {
	data, _, err := c.ReadSmall(ctx, UsageName, maxUsage)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	local := store.UsageFile(dir)
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		return err
	}
	return os.WriteFile(local, data, 0o600)
}
