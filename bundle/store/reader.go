package store

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/verify"
)

// Store is a read-only view of a store directory. Its Index is a snapshot
// that Reload replaces when index.json changes; callers must treat a
// snapshot as immutable. Safe for concurrent use.
type Store struct {
	root string
	cur  atomic.Pointer[snapshot]
	mu   sync.Mutex // serializes Reload
	// remote, if set, holds the blobs this directory lacks (a replica of
	// a store in object storage); a directory store has none.
	remote Remote
	// cache bounds the disk the blobs fetched from remote take.
	cache blobCache
	// fetching is the fetches from remote in flight, by blob: a request
	// for a blob another is fetching waits for that fetch and opens its
	// file, so a client asking for ranges of one blob over many
	// connections at once costs one fetch (one blob's disk, one read of
	// the bucket), not one per connection.
	fmu      sync.Mutex
	fetching map[verify.Digest]*fetchCall
}

// fetchCall is one fetch in flight (Store.fetching).
type fetchCall struct {
	done   chan struct{} // closed when path and err are set
	path   string        // the file to open: the blob's, or a temporary one
	err    error
	opened sync.WaitGroup // waiters yet to open a temporary path
}

// DefaultCacheMax is how much disk a replica gives by default to the
// blobs it fetches as files (SetRemote).
const DefaultCacheMax = 1 << 30

// blobCache accounts for the blobs a replica fetched into its directory
// (the readers that need a file: range requests, docs pages, SBOMs) and
// keeps them within max bytes, least recently opened out first. A fetch
// reserves its blob's size before it starts, so the files and the fetches
// in flight together stay within max. Evicting unlinks the file: a reader
// that has it open reads on undisturbed (the space returns when it closes
// it), and the next open fetches it again. A blob that cannot fit (larger
// than max, or the rest reserved by fetches in flight) is fetched to a
// temporary file that is unlinked as soon as it is opened. Requests for
// a blob being fetched wait for that fetch (Store.fetching), so requests
// sent at once cost one copy. Worst case on disk: max, plus the blobs
// being read after they were evicted or were too large to keep: one copy
// per fetch whose reader is still reading (bounded by the connections
// serve admits, each reading slowly after its own fetch).
type blobCache struct {
	mu    sync.Mutex
	max   int64
	used  int64 // kept files and reservations
	tick  int64
	files map[verify.Digest]*cached
}

type cached struct {
	size, last int64
}

// touch marks d as just opened.
func (c *blobCache) touch(d verify.Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.files[d]; e != nil {
		c.tick++
		e.last = c.tick
	}
}

// reserve makes room for size bytes, evicting the least recently opened
// files of root; false when they cannot fit.
func (c *blobCache) reserve(root string, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.max {
		return false
	}
	for c.used+size > c.max {
		var oldest verify.Digest
		var o *cached
		for d, e := range c.files {
			if o == nil || e.last < o.last {
				oldest, o = d, e
			}
		}
		if o == nil {
			return false // the rest is reserved by fetches in flight
		}
		os.Remove(BlobPath(root, oldest))
		delete(c.files, oldest)
		c.used -= o.size
	}
	c.used += size
	return true
}

// release gives back a reservation that was not kept.
func (c *blobCache) release(size int64) {
	c.mu.Lock()
	c.used -= size
	c.mu.Unlock()
}

// keep records a reserved blob as placed.
func (c *blobCache) keep(d verify.Digest, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files[d] != nil { // a concurrent fetch of it placed it first (the same bytes)
		c.used -= size
	} else {
		c.files[d] = &cached{size: size}
	}
	c.tick++
	c.files[d].last = c.tick
}

// Remote is where a replica's blobs come from when its directory lacks
// them: Fetch writes blob d, verified against its digest as it streams,
// to dst (a temporary path in the store's tmp directory, renamed into
// place by the caller), refusing before it writes a byte an object that
// is not size bytes long (what Size said, and the cache reserved); Stream
// opens it for one sequential read that fails at its end if the bytes do
// not match d, and says its size.
type Remote interface {
	Fetch(d verify.Digest, dst string, size int64) error
	Stream(ctx context.Context, d verify.Digest) (io.ReadCloser, int64, error)
	Size(ctx context.Context, d verify.Digest) (int64, error)
}

// SetRemote makes s a replica whose missing blobs come from r, keeping
// at most cacheMax bytes of them as files in its directory (blobCache; 0:
// DefaultCacheMax). Call it before s is shared.
func (s *Store) SetRemote(r Remote, cacheMax int64) {
	if cacheMax <= 0 {
		cacheMax = DefaultCacheMax
	}
	s.remote = r
	s.cache = blobCache{max: cacheMax, files: map[verify.Digest]*cached{}}
}

// StreamBlob opens blob d from the remote when the directory lacks it;
// ok is false (and nothing opened) for a directory store or a blob the
// directory has, which OpenBlob opens.
func (s *Store) StreamBlob(ctx context.Context, d verify.Digest) (rc io.ReadCloser, size int64, ok bool, err error) {
	if s.remote == nil || fileExists(BlobPath(s.root, d)) {
		return nil, 0, false, nil
	}
	rc, size, err = s.remote.Stream(ctx, d)
	if err == nil {
		if err = s.checkSize(d, size); err != nil {
			rc.Close()
			rc = nil
		}
	}
	return rc, size, true, err
}

type snapshot struct {
	ix    *Index
	ident fileIdent
	// sizes are the blob sizes the index records (provider packages,
	// module archives and zips): a replica refuses an object of another
	// size before it reads a byte of it.
	sizes map[verify.Digest]int64
}

// blobSizes are the sizes ix records of its blobs.
func blobSizes(ix *Index) map[verify.Digest]int64 {
	m := map[verify.Digest]int64{}
	for _, pv := range ix.Catalog.Providers {
		for _, p := range pv.Packages {
			if p.Size > 0 {
				m[p.Digest] = p.Size
			}
		}
	}
	for _, mv := range ix.Catalog.Modules {
		if mv.Size > 0 {
			m[mv.Archive] = mv.Size
		}
		if mv.Zip != "" && mv.ZipSize > 0 {
			m[mv.Zip] = mv.ZipSize
		}
	}
	return m
}

// checkSize refuses a remote blob whose size is not the one the index
// records: an object replaced in the bucket (up to MaxBlob, 8 GiB) would
// otherwise be read whole, onto the replica's disk for a fetch, before
// its digest failed.
func (s *Store) checkSize(d verify.Digest, size int64) error {
	cur := s.cur.Load()
	if cur == nil { // (a verb's scratch store: fetchInto)
		return nil
	}
	if want, ok := cur.sizes[d]; ok && size != want {
		err := fmt.Errorf("blob %s: %d bytes in the object store, the index records %d: it was replaced there; not read", d.Short(), size, want)
		if m, ok := s.remote.(interface{ Mismatch(verify.Digest, error) }); ok {
			m.Mismatch(d, err) // logged and counted as a digest mismatch is
		}
		return err
	}
	return nil
}

type fileIdent struct {
	ino   uint64
	size  int64
	mtime time.Time
}

func identOf(fi os.FileInfo) fileIdent {
	return fileIdent{ino: osfile.Inode(fi), size: fi.Size(), mtime: fi.ModTime()}
}

// Open opens the store at root for reading. A store with no index yet (no
// bundle imported) opens with an empty catalog.
func Open(root string) (*Store, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w\nhint: create it with 'airgap import --keyring site.pub.asc --store %s BUNDLE' (the keyring holds the exporting site's public key)", root, err, root)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("store %s: not a directory", root)
	}
	s := &Store{root: root}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Root is the store directory.
func (s *Store) Root() string { return s.root }

// Index returns the current snapshot of the index.
func (s *Store) Index() *Index { return s.cur.Load().ix }

// Reload re-reads index.json if it changed since the last read and reports
// whether it did.
func (s *Store) Reload() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var id fileIdent
	fi, err := os.Stat(indexPath(s.root))
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return false, err
	default:
		id = identOf(fi)
	}
	if old := s.cur.Load(); old != nil && old.ident == id {
		return false, nil
	}
	ix, err := readIndex(s.root)
	if err != nil {
		return false, err
	}
	s.cur.Store(&snapshot{ix: ix, ident: id, sizes: blobSizes(ix)})
	return true, nil
}

// Watch calls Reload every interval until ctx ends, and onChange (if not
// nil) after each change or error.
func (s *Store) Watch(ctx context.Context, interval time.Duration, onChange func(*Index, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			changed, err := s.Reload()
			if onChange != nil && (changed || err != nil) {
				onChange(s.Index(), err)
			}
		}
	}
}

// OpenBlob opens a blob for reading.
func (s *Store) OpenBlob(d verify.Digest) (*os.File, error) {
	f, err := os.Open(BlobPath(s.root, d))
	if err == nil && s.remote != nil {
		s.cache.touch(d)
	}
	if os.IsNotExist(err) && s.remote != nil {
		if f, err = s.fetch(d); err != nil {
			return nil, err
		}
	}
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%w: %s", ErrBlobMissing, d.Short())
	}
	return f, err
}

// Catalog returns the current catalog snapshot (read-only).
func (s *Store) Catalog() *dist.Catalog { return &s.Index().Catalog }

// RedirectBlob is a URL to send a client to for blob d (a presigned URL
// of the object) when the remote redirects; ok is false otherwise.
func (s *Store) RedirectBlob(ctx context.Context, method string, d verify.Digest) (url string, ok bool, err error) {
	r, isR := s.remote.(interface {
		RedirectURL(ctx context.Context, method string, d verify.Digest) (string, bool, error)
	})
	if s.remote == nil || !isR {
		return "", false, nil
	}
	return r.RedirectURL(ctx, method, d)
}

// StatBlob says the size of blob d in the remote when the directory lacks
// it, without reading it; ok as for StreamBlob.
func (s *Store) StatBlob(ctx context.Context, d verify.Digest) (size int64, ok bool, err error) {
	if s.remote == nil || fileExists(BlobPath(s.root, d)) {
		return 0, false, nil
	}
	size, err = s.remote.Size(ctx, d)
	if err == nil {
		err = s.checkSize(d, size)
	}
	return size, true, err
}

// fetch brings blob d from the remote into the directory (verified as it
// streams, renamed into place read-only, within the cache's bound) and
// opens it; one that does not fit is opened from its temporary file,
// already unlinked. Concurrent fetches of one blob are one: the others
// wait for it and open what it placed.
func (s *Store) fetch(d verify.Digest) (*os.File, error) {
	if !verify.IsHex64(d.Hex()) {
		return nil, fmt.Errorf("%w: %s", ErrBlobMissing, d.Short())
	}
	s.fmu.Lock()
	if c := s.fetching[d]; c != nil {
		c.opened.Add(1)
		s.fmu.Unlock()
		<-c.done
		defer c.opened.Done()
		if c.err != nil {
			return nil, c.err
		}
		f, err := os.Open(c.path)
		if os.IsNotExist(err) && c.path == BlobPath(s.root, d) {
			return s.fetch(d) // evicted since: fetched again
		}
		return f, err
	}
	c := &fetchCall{done: make(chan struct{})}
	if s.fetching == nil {
		s.fetching = map[verify.Digest]*fetchCall{}
	}
	s.fetching[d] = c
	s.fmu.Unlock()
	path, err := s.fetchOnce(d)
	s.fmu.Lock()
	delete(s.fetching, d) // later requests start their own
	s.fmu.Unlock()
	c.path, c.err = path, err
	close(c.done)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if path != BlobPath(s.root, d) {
		c.opened.Wait() // every waiter has it open: now unlinked
		os.Remove(path)
	}
	return f, err
}

// fetchOnce is fetch's fetch: it returns the path of the blob placed in
// the directory, or of a temporary file holding it (one that does not
// fit the cache), which the caller removes.
func (s *Store) fetchOnce(d verify.Digest) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	size, err := s.remote.Size(ctx, d)
	cancel()
	if err == nil {
		err = s.checkSize(d, size)
	}
	if err != nil {
		return "", err
	}
	kept := s.cache.reserve(s.root, size)
	tmp, err := os.CreateTemp(tmpPath(s.root), "fetch-")
	if err != nil {
		if kept {
			s.cache.release(size)
		}
		return "", err
	}
	tmp.Close()
	err = s.remote.Fetch(d, tmp.Name(), size)
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil && !kept {
		return tmp.Name(), nil // the caller unlinks it once opened
	}
	if err == nil {
		err = os.Rename(tmp.Name(), BlobPath(s.root, d))
	}
	if err != nil {
		os.Remove(tmp.Name())
		if kept {
			s.cache.release(size)
		}
		return "", err
	}
	s.cache.keep(d, size)
	return BlobPath(s.root, d), nil
}

// fetchInto brings blob d from remote into the directory root of a verb's
// own scratch store (verified as it streams, renamed into place read-only)
// and opens it. No cache bound applies: the scratch directory holds what
// the verb reads and goes when it ends.
func fetchInto(root string, remote Remote, d verify.Digest) (*os.File, error) {
	s := &Store{root: root, remote: remote, cache: blobCache{max: math.MaxInt64, files: map[verify.Digest]*cached{}}}
	return s.fetch(d)
}
