package objstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
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
// killed is waited for at most ttl, when its lease expires; a lease that
// says it expires later than any airgap sets one (a forged or garbled
// lease.json) is not honoured at all: AcquireLease takes it over, and a
// warning on stderr names whose it was.
func AcquireLeaseWait(ctx context.Context, c *Client, holder string, ttl time.Duration, wait bool, waiting func(error)) (*Lease, error) {
	told := false
	for {
		l, err := AcquireLease(ctx, c, holder, ttl)
		if err == nil && l.Note != "" {
			// Said on stderr, as TellWaiting says what a --wait waits for:
			// every verb that takes the lease is a command-line verb.
			fmt.Fprintln(os.Stderr, "warning: "+l.Note)
		}
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

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// TellWaiting says on stderr, once, what a --wait waits for.
func TellWaiting(err error) {
	fmt.Fprintf(os.Stderr, "waiting: %s\n", firstLine(err))
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
	return store.OpenRemoteCarry(ctx, c.addr.String(), dir, NewListedRemote(c, log, st.Index()), release)
}

// ListedRemote is the Remote over the bucket of a store whose index is
// ix, for a verb that asks the size of many blobs (an export's plan, a
// delta's omitted blobs): at the first Size, the bucket's blobs are
// listed once (one request per thousand) and the sizes of those ix
// refers to kept, instead of one HEAD request per blob (a store of some
// thousand blobs on a remote server would take minutes). A blob the
// listing lacks, or every blob if the listing fails, is asked for by
// HEAD. A size is a claim: the bytes streamed are checked against it
// and against the blob's name. Memory: one entry per blob the index,
// already in memory, refers to.
type ListedRemote struct {
	*Replica
	used  map[verify.Digest]string
	once  sync.Once
	sizes map[verify.Digest]int64
}

// NewListedRemote is a ListedRemote over c for the store whose index is ix.
func NewListedRemote(c *Client, log *slog.Logger, ix *store.Index) *ListedRemote {
	return &ListedRemote{Replica: NewRemote(c, log), used: ix.Blobs()}
}

// Size is blob d's size, from the listing.
func (r *ListedRemote) Size(ctx context.Context, d verify.Digest) (int64, error) {
	r.once.Do(func() {
		objs, err := r.c.ListBlobs(ctx)
		if err != nil {
			return
		}
		r.sizes = make(map[verify.Digest]int64, len(r.used))
		for _, o := range objs {
			d := verify.Digest("sha256:" + strings.TrimPrefix(o.Name, BlobPrefix))
			if _, ok := r.used[d]; ok {
				r.sizes[d] = o.Size
			}
		}
	})
	if n, ok := r.sizes[d]; ok {
		return n, nil
	}
	return r.Replica.Size(ctx, d)
}
