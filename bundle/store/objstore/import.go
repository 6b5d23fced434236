package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// LeaseTTL is how long an import's lease lasts unless renewed; the
// importer renews it every LeaseTTL/4, so a killed importer holds the
// store at most LeaseTTL.
const LeaseTTL = 10 * time.Minute

const maxLease = 64 << 10

// LeaseSkew is the clock difference allowed between two hosts that share
// a store: a lease is honoured until its stated expiry, but never beyond
// now + LeaseTTL + LeaseSkew, the furthest an importer whose clock runs
// at most LeaseSkew ahead of this one's ever sets it. A lease that claims
// more (a forged one with an expiry in 2099, or one from a host whose
// clock is far ahead) is not honoured: the import takes it over and says
// whose it was. The worst a writer of lease.json can then do is rewrite
// it again and again; one stale write blocks imports at most
// LeaseTTL + LeaseSkew.
const LeaseSkew = 5 * time.Minute

// leaseFile is lease.json: who imports, since when, until when.
type leaseFile struct {
	Holder  string    `json:"holder"`
	Started time.Time `json:"started"`
	Expires time.Time `json:"expires"`
}

// ErrLeased: another import holds the store's lease.
var ErrLeased = errors.New("another import is running on this store")

// Lease is a held import lease: one import at a time per store. It is a
// convenience for operators (a clear refusal naming the holder); what
// keeps two imports from both winning is the index's conditional write.
type Lease struct {
	c      *Client
	mu     sync.Mutex
	etag   string
	lf     leaseFile
	stop   chan struct{}
	done   chan struct{}
	lost   error
	closed bool
	// Note, if not empty, says which lease this one took over without
	// honouring it (its expiry was beyond what LeaseSkew allows).
	Note string
}

// AcquireLease creates lease.json if absent (If-None-Match: *), or takes
// over an expired one (If-Match on its ETag); a live one is refused
// naming its holder and when it expires. The lease is renewed in the
// background until Release.
func AcquireLease(ctx context.Context, c *Client, holder string, ttl time.Duration) (*Lease, error) {
	now := time.Now().UTC().Truncate(time.Second)
	l := &Lease{c: c, lf: leaseFile{Holder: holder, Started: now, Expires: now.Add(ttl)}, stop: make(chan struct{}), done: make(chan struct{})}
	data, _ := json.Marshal(l.lf)
	etag, err := c.PutBytes(ctx, LeaseName, "", data)
	if errors.Is(err, ErrPrecondition) {
		old, o, rerr := c.ReadSmall(ctx, LeaseName, maxLease)
		if rerr != nil {
			return nil, rerr
		}
		var lf leaseFile
		if json.Unmarshal(old, &lf) == nil {
			now := time.Now()
			switch limit := now.Add(ttl + LeaseSkew); {
			case lf.Expires.After(limit):
				l.Note = fmt.Sprintf("store %s: took over the lease of %s: its expiry %s is further off than any import sets one (%s from now, with %s for clocks that differ), so it was not honoured",
					c.addr, printable(lf.Holder), lf.Expires.UTC().Format(time.RFC3339), ttl, LeaseSkew)
			case now.Before(lf.Expires):
				return nil, fmt.Errorf("store %s: %w: %s holds its lease (since %s, until %s unless renewed)\nhint: wait for that import to finish; if it was killed, its lease expires at %s and the next import cleans up after it; if you are sure it is not running, break the lease by deleting the object %s",
					c.addr, ErrLeased, printable(lf.Holder), lf.Started.Format(time.RFC3339), lf.Expires.Format(time.RFC3339), lf.Expires.Format(time.RFC3339), c.where(LeaseName))
			}
		}
		etag, err = c.PutBytes(ctx, LeaseName, o.ETag, data) // expired (or unreadable): take it over
		if errors.Is(err, ErrPrecondition) {
			return nil, fmt.Errorf("store %s: %w: another import took over the expired lease first\nhint: run again once it has finished", c.addr, ErrLeased)
		}
	}
	if err != nil {
		return nil, err
	}
	l.etag = etag
	go l.renew(ttl)
	return l, nil
}

func (l *Lease) renew(ttl time.Duration) {
	defer close(l.done)
	t := time.NewTicker(ttl / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		lf := l.lf
		lf.Expires = time.Now().UTC().Add(ttl).Truncate(time.Second)
		data, _ := json.Marshal(lf)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		etag, err := l.c.PutBytes(ctx, LeaseName, l.etag, data)
		cancel()
		if err == nil {
			l.etag, l.lf = etag, lf
		} else if errors.Is(err, ErrPrecondition) {
			l.lost = fmt.Errorf("store %s: this import's lease was taken over (it had expired)", l.c.addr)
		}
		l.mu.Unlock()
	}
}

// Lost says whether the lease was taken over by another importer.
func (l *Lease) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Held checks, with one request, that the lease in the bucket is still
// this one (not taken over after it expired, say while this process was
// stopped), and that its renewals have not failed.
func (l *Lease) Held(ctx context.Context) error {
	if err := l.Lost(); err != nil {
		return err
	}
	l.mu.Lock()
	etag := l.etag
	l.mu.Unlock()
	o, err := l.c.Head(ctx, LeaseName)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil || o.ETag != etag {
		return fmt.Errorf("store %s: this process's lease expired and was taken over or removed", l.c.addr)
	}
	return nil
}

// Release stops renewing and deletes the lease if it is still this one's.
func (l *Lease) Release() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if o, err := l.c.Head(ctx, LeaseName); err == nil && o.ETag == l.etag {
		l.c.Delete(ctx, LeaseName)
	}
}

// Staged is what Stage read: the index's ETag ("" for a store with no
// index yet) and the blobs it fetched.
type Staged struct {
	ETag    string
	Fetched map[string]bool // blob hex
}

// stageWorkers bounds the fetches Stage runs at once.
const stageWorkers = 8

// Stage makes dir (new, private) a directory store holding the bucket's
// index, import.hcl, its download counts, and the small blobs that reading the index as on
// disk needs (each provider version's SHA256SUMS and its signature, which
// the inventory and the import's key checks read), each verified against
// its name as it streams; 8 fetches at a time.
func Stage(ctx context.Context, c *Client, dir string) (*Staged, error) {
	st := &Staged{Fetched: map[string]bool{}}
	for _, d := range []string{filepath.Join(dir, filepath.FromSlash(BlobPrefix)), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	data, o, err := c.ReadSmall(ctx, IndexName, MaxIndex)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if err := os.WriteFile(filepath.Join(dir, IndexName), data, 0o644); err != nil {
			return nil, err
		}
		st.ETag = o.ETag
	}
	if data, _, err := c.ReadSmall(ctx, PolicyName, maxPolicy); err == nil {
		if err := os.WriteFile(filepath.Join(dir, PolicyName), data, 0o644); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if st.ETag == "" {
		return st, nil
	}
	if err := fetchUsage(ctx, c, dir); err != nil {
		return nil, err
	}
	s, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	var want []string
	for _, p := range s.Index().Catalog.Providers {
		for _, d := range []verify.Digest{p.Shasums, p.ShasumsSig} {
			if hex := d.Hex(); verify.IsHex64(hex) && !st.Fetched[hex] {
				st.Fetched[hex] = true
				want = append(want, hex)
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	errs := make(chan error, stageWorkers)
	var wg sync.WaitGroup
	for range stageWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for hex := range work {
				_, err := fetchBlob(ctx, c, hex, filepath.Join(dir, "tmp"), filepath.Join(dir, filepath.FromSlash(BlobPrefix), hex))
				if err != nil && !errors.Is(err, ErrNotFound) { // a missing one reads as missing, as on disk
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for _, hex := range want {
		select {
		case work <- hex:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return st, nil
}

// Publish makes an import staged in dir visible in the bucket: every new
// blob (already verified by the import) hashed again as it streams and
// written only if absent, then the index replaced by a conditional write
// on staged.ETag, the ETag read when the import began (If-None-Match: * for a
// new store). If another import replaced the index meanwhile, the write
// is refused and nothing of this import is visible: its blobs are objects
// no index refers to. lease, if not nil, must still be held. sender, if
// not nil, sent blobs while the import ran: they are not sent again.
func Publish(ctx context.Context, c *Client, dir string, staged *Staged, lease *Lease, sender *Sender) (*CopyResult, error) {
	etag := staged.ETag
	var sent map[string]bool
	if sender != nil {
		sent = sender.Finish()
	}
	ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(BlobPrefix)))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var hexes []string
	for _, e := range ents {
		if hex := e.Name(); verify.IsHex64(hex) && e.Type().IsRegular() && !staged.Fetched[hex] && !sent[hex] { // (a fetched one came from the bucket)
			hexes = append(hexes, hex)
		}
	}
	res, err := putBlobs(ctx, c, filepath.Join(dir, filepath.FromSlash(BlobPrefix)), hexes)
	if err != nil {
		return res, fmt.Errorf("%w\nthe store's index was not changed; run the import again", err)
	}
	data, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
	if err != nil {
		return res, err
	}
	if lease != nil {
		if err := lease.Held(ctx); err != nil {
			return res, fmt.Errorf("%w\nthe store's index was not changed; run the import again", err)
		}
	}
	if _, err := c.PutBytes(ctx, IndexName, etag, data); err != nil {
		if errors.Is(err, ErrPrecondition) {
			return res, fmt.Errorf("store %s: another writer replaced the index since this import began, so this import's index was not written\nthe store's index was not changed by this import; run it again (its blobs are kept and not sent twice)", c.addr)
		}
		return res, fmt.Errorf("writing the index: %w\nthe store's index was not changed; run the import again", err)
	}
	return res, nil
}

func printable(s string) string {
	out := []rune{}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		out = append(out, r)
		if len(out) >= 200 {
			break
		}
	}
	return string(out)
}
