package store

import (
	"context"
	"fmt"
	"io"
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
}

// Remote is where a replica's blobs come from when its directory lacks
// them: Fetch writes blob d, verified against its digest as it streams,
// to dst (a temporary path in the store's tmp directory, renamed into
// place by the caller); Stream opens it for one sequential read that
// fails at its end if the bytes do not match d, and says its size.
type Remote interface {
	Fetch(d verify.Digest, dst string) error
	Stream(ctx context.Context, d verify.Digest) (io.ReadCloser, int64, error)
	Size(ctx context.Context, d verify.Digest) (int64, error)
}

// SetRemote makes s a replica whose missing blobs come from r. Call it
// before s is shared.
func (s *Store) SetRemote(r Remote) { s.remote = r }

// StreamBlob opens blob d from the remote when the directory lacks it;
// ok is false (and nothing opened) for a directory store or a blob the
// directory has, which OpenBlob opens.
func (s *Store) StreamBlob(ctx context.Context, d verify.Digest) (rc io.ReadCloser, size int64, ok bool, err error) {
	if s.remote == nil || fileExists(BlobPath(s.root, d)) {
		return nil, 0, false, nil
	}
	rc, size, err = s.remote.Stream(ctx, d)
	return rc, size, true, err
}

type snapshot struct {
	ix    *Index
	ident fileIdent
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
	s.cur.Store(&snapshot{ix: ix, ident: id})
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
	return size, true, err
}

// fetch brings blob d from the remote into the directory (verified as it
// streams, renamed into place read-only) and opens it.
func (s *Store) fetch(d verify.Digest) (*os.File, error) { return fetchInto(s.root, s.remote, d) }

// fetchInto brings blob d from remote into the store directory root
// (verified as it streams, renamed into place read-only) and opens it.
func fetchInto(root string, remote Remote, d verify.Digest) (*os.File, error) {
	if !verify.IsHex64(d.Hex()) {
		return nil, fmt.Errorf("%w: %s", ErrBlobMissing, d.Short())
	}
	tmp, err := os.CreateTemp(tmpPath(root), "fetch-")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := remote.Fetch(d, tmp.Name()); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), BlobPath(root, d)); err != nil {
		return nil, err
	}
	return os.Open(BlobPath(root, d))
}
