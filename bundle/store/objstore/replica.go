package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// PollInterval is how often a replica asks for the index's ETag (one HEAD
// request); a new index is served within about two intervals.
const PollInterval = time.Second

// Replica serves a store in a bucket from a private local directory: the
// index is copied there whenever its ETag changes (the directory store's
// reload then swaps the catalog whole), and blobs come from the bucket as
// they are asked for — streamed through and hashed as they stream (an
// object whose bytes do not match its name is cut off before its last
// bytes, logged and counted), or fetched, verified, into the directory
// for the readers that need a file. It implements store.Remote.
type Replica struct {
	c    *Client
	dir  string
	log  *slog.Logger
	etag string
	// Redirect: answer downloads with a presigned URL (RedirectURL).
	Redirect bool
	// Mismatches counts objects whose bytes did not match their names.
	Mismatches atomic.Int64
	fetched    sync.Map // blob hex → true, for FetchedBlobs
}

// FetchedBlobs are the blobs Fetch copied from the bucket (hex), which a
// store staged from it need not write back.
func (r *Replica) FetchedBlobs() []string {
	var out []string
	r.fetched.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	return out
}

// StartReplica makes the private directory (mode 0700, removed by
// cleanup) that 'airgap serve' serves for the store at addr, copies the
// index into it, and polls the index's ETag every PollInterval until ctx
// ends. A store with no index yet serves an empty catalog.
func StartReplica(ctx context.Context, addr string, log *slog.Logger) (dir string, rep *Replica, cleanup func(), err error) {
	a, err := Parse(addr)
	if err != nil {
		return "", nil, nil, err
	}
	c, err := Open(ctx, a)
	if err != nil {
		return "", nil, nil, err
	}
	dir, err = os.MkdirTemp("", "airgap-replica-")
	if err != nil {
		return "", nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	for _, d := range []string{filepath.Join(dir, filepath.FromSlash(BlobPrefix)), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			cleanup()
			return "", nil, nil, err
		}
	}
	rep = &Replica{c: c, dir: dir, log: log}
	if err := rep.sync(ctx); err != nil {
		cleanup()
		return "", nil, nil, err
	}
	go func() {
		t := time.NewTicker(PollInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := rep.sync(ctx); err != nil && ctx.Err() == nil {
				log.Error("polling the store's index in the bucket; still serving the previous catalog", "err", err)
			}
		}
	}()
	return dir, rep, cleanup, nil
}

// SharedCAName is the object that holds the replicas' shared local CA
// (its certificate and key, one PEM text): the first replica to start
// creates it if absent, the others use it, so a client that trusts it
// trusts every replica.
const SharedCAName = "tls/local-ca.pem"

// SharedURLKeysName is the object that holds the replicas' shared keys
// for signed download URLs (with an access file), created as the CA is,
// so that a URL one replica signs downloads from every replica.
const SharedURLKeysName = "tls/url-keys.json"

// Client is the replica's client of the bucket.
func (r *Replica) Client() *Client { return r.c }

// NewRemote is a store.Remote over the bucket for a store staged in dir
// (a one-off reader such as 'airgap docs'): blobs fetched or streamed as a
// replica's are, mismatches logged to log.
func NewRemote(c *Client, log *slog.Logger) *Replica { return &Replica{c: c, log: log} }

// sync copies the index into the directory if its ETag changed.
func (r *Replica) sync(ctx context.Context) error {
	o, err := r.c.Head(ctx, IndexName)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.ETag == r.etag {
		return nil
	}
	rc, got, err := r.c.GetIfMatch(ctx, IndexName, o.ETag, MaxIndex)
	if errors.Is(err, ErrPrecondition) {
		return nil // replaced again meanwhile: the next poll reads it
	}
	if err != nil {
		return err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(r.dir, IndexName), data); err != nil {
		return err
	}
	r.etag = got.ETag
	return nil
}

// Fetch writes blob d from the bucket to dst, hashed as it streams; an
// object that is not want bytes long (replaced since its size was read)
// is refused before anything is written.
func (r *Replica) Fetch(d verify.Digest, dst string, want int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rc, size, err := r.Stream(ctx, d)
	if err != nil {
		return err
	}
	defer rc.Close()
	if size != want {
		return fmt.Errorf("blob %s: %d bytes in the bucket, %d a moment before; not fetched", d.Short(), size, want)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, rc)
	if err == nil && n != size {
		err = fmt.Errorf("blob %s: %d bytes, want %d", d.Short(), n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		r.fetched.Store(d.Hex(), true)
	}
	return err
}

// Stream opens blob d in the bucket for one read, hashed as it streams.
func (r *Replica) Stream(ctx context.Context, d verify.Digest) (io.ReadCloser, int64, error) {
	hex := d.Hex()
	if !verify.IsHex64(hex) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, d.Short())
	}
	rc, o, err := r.c.Get(ctx, BlobPrefix+hex, MaxBlob)
	if errors.Is(err, ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %s: %v", store.ErrBlobMissing, d.Short(), err)
	}
	if err != nil {
		return nil, 0, err
	}
	return &checkedBody{HashingReader: NewHashingReader(rc, hex, o.Size, r.c.where(BlobPrefix+hex)), c: rc, r: r, d: d}, o.Size, nil
}

// RedirectTTL is how long a presigned URL of a redirect stays valid.
const RedirectTTL = 5 * time.Minute

// RedirectURL is a presigned URL of blob d for method (GET or HEAD),
// valid RedirectTTL; ok is false unless the replica redirects.
func (r *Replica) RedirectURL(ctx context.Context, method string, d verify.Digest) (string, bool, error) {
	if !r.Redirect || !verify.IsHex64(d.Hex()) {
		return "", false, nil
	}
	u, err := r.c.Presign(ctx, method, BlobPrefix+d.Hex(), RedirectTTL)
	return u, true, err
}

// Size says blob d's size in the bucket (one HEAD request).
func (r *Replica) Size(ctx context.Context, d verify.Digest) (int64, error) {
	if !verify.IsHex64(d.Hex()) {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, d.Short())
	}
	o, err := r.c.Head(ctx, BlobPrefix+d.Hex())
	if errors.Is(err, ErrNotFound) {
		return 0, fmt.Errorf("%w: %s: %v", store.ErrBlobMissing, d.Short(), err)
	}
	return o.Size, err
}

// Mismatch logs and counts an object found not to be blob d by other
// means than its digest (its size is not the one the index records).
func (r *Replica) Mismatch(d verify.Digest, err error) {
	count := r.Mismatches.Add(1)
	r.log.Error("an object in the bucket does not match its name; cut off, not served whole", "blob", string(d), "err", err, "mismatches", count)
}

type checkedBody struct {
	*HashingReader
	c      io.Closer
	r      *Replica
	d      verify.Digest
	logged bool
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.HashingReader.Read(p)
	if errors.Is(err, ErrDigest) && !b.logged {
		b.logged = true
		count := b.r.Mismatches.Add(1)
		b.r.log.Error("an object in the bucket does not match its name; cut off, not served whole", "blob", string(b.d), "err", err, "mismatches", count)
	}
	return n, err
}

func (b *checkedBody) Close() error { return b.c.Close() }
