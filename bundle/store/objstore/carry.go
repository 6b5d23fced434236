package objstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// leaseWaitPoll is how often a --wait asks whether the lease is free (one
// small PUT, conditional, each time).
const leaseWaitPoll = 2 * time.Second

// AcquireLeaseWait is AcquireLease, or, with wait, the --wait of the
// verbs on disk: while another holds the lease it tells waiting (once)
// and tries again every leaseWaitPoll until ctx ends. A holder that was
// killed is waited for at most LeaseTTL, when its lease expires.
func AcquireLeaseWait(ctx context.Context, c *Client, holder string, ttl time.Duration, wait bool, waiting func(error)) (*Lease, error) {
	told := false
	for {
		l, err := AcquireLease(ctx, c, holder, ttl)
		if err == nil || !wait || !errors.Is(err, ErrLeased) {
			return l, err
		}
		if !told && waiting != nil {
			waiting(err)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped waiting: %v)", err, ctx.Err())
		case <-time.After(leaseWaitPoll):
		}
	}
}

// TellWaiting says on stderr, once, what a --wait waits for.
func TellWaiting(err error) {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(os.Stderr, "waiting: %s\n", msg)
}

// OpenCarry is store.OpenCarry for the store in the bucket (the export
// --from-store of an enclave): the store's lease taken (waiting for it
// with wait), as on disk the store's lock, so that no import, prune or gc
// changes or deletes what the export reads until Close; its index staged
// into a private scratch directory; every blob then streamed from the
// bucket and hashed as it streams (store.Carry), nothing copied to disk
// but the SHA256SUMS the staging reads and the module archives a
// manifest's dependencies are read from.
func OpenCarry(ctx context.Context, c *Client, holder string, wait bool, log *slog.Logger) (*store.Carry, error) {
	lease, err := AcquireLeaseWait(ctx, c, holder, LeaseTTL, wait, TellWaiting)
	if err != nil {
		return nil, fmt.Errorf("%w\nnothing was written", err)
	}
	dir, err := os.MkdirTemp("", "airgap-carry-")
	if err != nil {
		lease.Release()
		return nil, err
	}
	release := func() {
		lease.Release()
		os.RemoveAll(dir)
	}
	staged, err := Stage(ctx, c, dir)
	if err == nil && staged.ETag == "" {
		err = fmt.Errorf("%w: %s has no index\nhint: --from-store takes an offline store (what 'airgap import --store' filled); check the address; nothing was written", store.ErrNoStore, c.addr)
	}
	if err != nil {
		release()
		return nil, err
	}
	st, err := store.Open(dir)
	if err != nil {
		release()
		return nil, err
	}
	sizes, err := listSizes(ctx, c, st.Index())
	if err != nil {
		release()
		return nil, err
	}
	return store.OpenRemoteCarry(ctx, c.addr.String(), dir, &sizedRemote{Replica: NewRemote(c, log), sizes: sizes}, release)
}

// listSizes lists the blobs in the bucket (one request per thousand) and
// keeps the sizes of those ix refers to, so that the export's plan does
// not send one HEAD request per blob (a store of some thousand blobs, each
// a round trip to a remote server, would take minutes). Memory: one entry
// per blob the index, already in memory, refers to.
func listSizes(ctx context.Context, c *Client, ix *store.Index) (map[verify.Digest]int64, error) {
	used := ix.Blobs()
	objs, err := c.List(ctx, BlobPrefix, MaxList)
	if err != nil {
		return nil, err
	}
	sizes := make(map[verify.Digest]int64, len(used))
	for _, o := range objs {
		d := verify.Digest("sha256:" + strings.TrimPrefix(o.Name, BlobPrefix))
		if _, ok := used[d]; ok {
			sizes[d] = o.Size
		}
	}
	return sizes, nil
}

// sizedRemote answers Size from the listing, and asks the bucket for a
// blob the listing did not have. The size only sizes the manifest: the
// bytes streamed are checked against it and against the blob's name.
type sizedRemote struct {
	*Replica
	sizes map[verify.Digest]int64
}

func (r *sizedRemote) Size(ctx context.Context, d verify.Digest) (int64, error) {
	if n, ok := r.sizes[d]; ok {
		return n, nil
	}
	return r.Replica.Size(ctx, d)
}
