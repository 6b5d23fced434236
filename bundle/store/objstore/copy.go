package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// The store's layout, in a directory and under a bucket's prefix alike.
const (
	IndexName  = "index.json"
	PolicyName = store.ImportConfigName
	BlobPrefix = "blobs/sha256/"
	LeaseName  = "lease.json"
)

// MaxIndex bounds the index read from a bucket (a catalog of some
// hundred thousand versions is well under it).
const MaxIndex = 256 << 20

// maxPolicy bounds import.hcl.
const maxPolicy = 1 << 20

// MaxBlob bounds one blob read from a bucket (a provider package is at
// most a few hundred MiB).
const MaxBlob = 8 << 30

// CopyResult says what a copy did.
type CopyResult struct {
	Blobs int
	Bytes int64
}

// HashingReader reads an object or a file whose name is its sha256, and
// fails at its end — before the last byte is handed on as a clean EOF —
// when the bytes do not match the name or size. Seek(0, io.SeekStart)
// starts the hash again (the SDK reads a body once to sign it and again
// to send it).
type HashingReader struct {
	r    io.Reader
	s    io.Seeker
	h    hash.Hash
	n    int64
	want string
	size int64 // -1: not known
	what string
}

// NewHashingReader checks r's bytes against want (a 64-hex sha256) and
// size (-1: any).
func NewHashingReader(r io.Reader, want string, size int64, what string) *HashingReader {
	s, _ := r.(io.Seeker)
	return &HashingReader{r: r, s: s, h: sha256.New(), want: want, size: size, what: what}
}

// ErrDigest: a blob's bytes do not match its name.
var ErrDigest = errors.New("the bytes do not match the blob's name (sha256)")

// Read checks the digest on the read that completes the declared size,
// not only at EOF: an HTTP client sends a body of known length without
// waiting for EOF, so a mismatch found only there raced the server's own
// refusal of the finished body (its error, not this one, was reported).
// The bytes of that last read are withheld, so the body is never complete.
func (v *HashingReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.size >= 0 && v.n > v.size {
		return n, fmt.Errorf("%s: %w: more than %d bytes", v.what, ErrDigest, v.size)
	}
	complete := n > 0 && v.size >= 0 && v.n == v.size
	if complete || err == io.EOF {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want || v.size >= 0 && v.n != v.size {
			if complete {
				n = 0 // withheld
			}
			return n, fmt.Errorf("%s: %w (%d bytes, sha256 %s)", v.what, ErrDigest, v.n, got[:12])
		}
	}
	return n, err
}

// Seek supports only a rewind to the start (and the SDK's length probe).
func (v *HashingReader) Seek(off int64, whence int) (int64, error) {
	if v.s == nil {
		return 0, errors.New("not seekable")
	}
	pos, err := v.s.Seek(off, whence)
	if err == nil && whence == io.SeekStart && off == 0 {
		v.h.Reset()
		v.n = 0
	}
	return pos, err
}

// ToBucket copies the store in dir to the empty prefix of c: every blob
// hashed as it streams (a blob whose bytes do not match its name stops
// the copy), each written only if absent, import.hcl, and the index
// last, so that the bucket is a store only once everything it refers to
// is there. The server's conditional writes are checked first. Refused:
// a directory that is not a store or lacks a blob its index refers to,
// and a prefix that holds objects already.
func ToBucket(ctx context.Context, dir string, c *Client) (*CopyResult, error) {
	st, err := openDirStore(dir)
	if err != nil {
		return nil, err
	}
	if err := c.CheckConditional(ctx); err != nil {
		return nil, err
	}
	objs, err := c.List(ctx, "", 1)
	held := ""
	switch {
	case errors.Is(err, ErrTooLarge):
		held = "objects"
	case err != nil:
		return nil, err
	case len(objs) > 0:
		held = objs[0].Name
	}
	if held != "" {
		return nil, fmt.Errorf("store %s: the prefix is not empty (it holds %s)\nhint: copy into a new prefix; a copy never merges into or overwrites a store", c.addr, held)
	}
	blobs, err := dirBlobs(dir, st)
	if err != nil {
		return nil, err
	}
	res, err := putBlobs(ctx, c, filepath.Join(dir, filepath.FromSlash(BlobPrefix)), blobs)
	if err != nil {
		return res, fmt.Errorf("%w\nthe bucket has no index yet, so it is not a store; copy again into a new prefix", err)
	}
	if data, err := readBounded(filepath.Join(dir, PolicyName), maxPolicy); err == nil {
		if _, err := c.PutBytes(ctx, PolicyName, "", data); err != nil {
			return res, err
		}
	} else if !os.IsNotExist(err) {
		return res, err
	}
	data, err := readBounded(filepath.Join(dir, IndexName), MaxIndex)
	if err != nil {
		return res, err
	}
	if _, err := c.PutBytes(ctx, IndexName, "", data); err != nil {
		return res, fmt.Errorf("writing the index: %w", err)
	}
	return res, nil
}

// FromBucket copies the store in c to dir, which must not exist or be
// empty: every blob streamed to a temporary file, hashed as it streams
// (one whose bytes do not match its name stops the copy), then renamed
// into place read-only; import.hcl; the index last. Refused: a prefix
// with no index, objects that are not the store's, a blob the index
// refers to that the bucket lacks. On a failure dir is removed again.
func FromBucket(ctx context.Context, c *Client, dir string) (res *CopyResult, err error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty\nhint: copy into a new directory; a copy never merges into a store", dir)
	} else if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	ixData, _, err := c.ReadSmall(ctx, IndexName, MaxIndex)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("store %s has no index: it is not an airgap store (or nothing was imported into it yet)", c.addr)
	}
	if err != nil {
		return nil, err
	}
	// Only the blobs are held; the first foreign name is kept to name it
	// (a prefix could hold a million names of 1,024 bytes).
	stranger := ""
	blobs, err := c.ListKept(ctx, "", MaxList, func(name string) bool {
		if !storeObject(name) {
			if stranger == "" {
				stranger = name
			}
			return false
		}
		hex, isBlob := strings.CutPrefix(name, BlobPrefix)
		return isBlob && verify.IsHex64(hex)
	})
	if err != nil {
		return nil, err
	}
	if stranger != "" {
		return nil, foreign(c, stranger)
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(BlobPrefix)), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	res = &CopyResult{}
	for _, o := range blobs {
		hex := strings.TrimPrefix(o.Name, BlobPrefix)
		n, err := fetchBlob(ctx, c, hex, filepath.Join(dir, "tmp"), filepath.Join(dir, filepath.FromSlash(BlobPrefix), hex))
		if err != nil {
			return nil, err
		}
		res.Blobs++
		res.Bytes += n
	}
	if data, _, err := c.ReadSmall(ctx, PolicyName, maxPolicy); err == nil {
		if err := os.WriteFile(filepath.Join(dir, PolicyName), data, 0o644); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, IndexName), ixData); err != nil {
		return nil, err
	}
	st, err := openDirStore(dir)
	if err != nil {
		return nil, err
	}
	if _, err := dirBlobs(dir, st); err != nil {
		return nil, err
	}
	return res, nil
}

// fetchBlob streams blob hex from c into a temporary file in tmp, hashed
// as it streams, and renames it to dst read-only.
func fetchBlob(ctx context.Context, c *Client, hex, tmp, dst string) (int64, error) {
	rc, o, err := c.Get(ctx, BlobPrefix+hex, MaxBlob)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	f, err := os.CreateTemp(tmp, "copy-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, NewHashingReader(rc, hex, o.Size, c.where(BlobPrefix+hex)))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(0o444)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("copying blob %s: %w", hex[:12], err)
	}
	return n, os.Rename(f.Name(), dst)
}

func openDirStore(dir string) (*store.Store, error) {
	if _, err := os.Stat(filepath.Join(dir, IndexName)); err != nil {
		return nil, fmt.Errorf("%s: %w: no %s\nhint: give the store's directory (the one 'airgap import --store' was given)", dir, store.ErrNoStore, IndexName)
	}
	return store.Open(dir)
}

// dirBlobs lists the blobs in dir's blobs/sha256 and checks that every
// blob the index refers to is among them.
func dirBlobs(dir string, st *store.Store) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(BlobPrefix)))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	have := map[string]bool{}
	var out []string
	for _, e := range ents {
		if verify.IsHex64(e.Name()) && e.Type().IsRegular() {
			have[e.Name()] = true
			out = append(out, e.Name())
		}
	}
	for d, role := range st.Index().Blobs() {
		if !have[d.Hex()] {
			return nil, fmt.Errorf("%s: %w: %s (%s), which its index refers to", dir, store.ErrBlobMissing, d.Short(), role)
		}
	}
	return out, nil
}

func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, max)
	}
	return data, err
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// storeObject reports whether name (under the prefix) is one airgap
// writes in a store.
func storeObject(name string) bool {
	if hex, isBlob := strings.CutPrefix(name, BlobPrefix); isBlob {
		return verify.IsHex64(hex)
	}
	switch name {
	case IndexName, PolicyName, LeaseName, SharedCAName, SharedURLKeysName, UsageName:
		return true
	}
	return strings.HasPrefix(name, "probe-")
}

func foreign(c *Client, name string) error {
	return fmt.Errorf("store %s holds an object that is not the store's: %q\nhint: a store's prefix holds only what airgap writes there; move the object away or give the store its own prefix\nthe store was not changed", c.addr, printable(name))
}

// CheckNoForeign refuses a prefix holding objects airgap does not write
// there (at most MaxList are listed): a new store must not be made over
// someone else's data.
func CheckNoForeign(ctx context.Context, c *Client) error {
	stranger := ""
	_, err := c.ListKept(ctx, "", MaxList, func(name string) bool {
		if !storeObject(name) && stranger == "" {
			stranger = name
		}
		return false // none held
	})
	if err != nil {
		return err
	}
	if stranger != "" {
		return foreign(c, stranger)
	}
	return nil
}

// putWorkers bounds the blobs written at once (each streams from its file:
// memory does not grow with them).
const putWorkers = 4

// putBlobs writes the blobs named hexes from dir to the bucket, each
// hashed as it streams and written only if absent (one the bucket has is
// left as it is: content-addressed, never overwritten), putWorkers at a
// time; the first error stops the rest. res counts the blobs written.
func putBlobs(ctx context.Context, c *Client, dir string, hexes []string) (*CopyResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &CopyResult{}
	var mu sync.Mutex
	var first error
	work := make(chan string)
	var wg sync.WaitGroup
	for range putWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for hex := range work {
				n, err := putBlobFile(ctx, c, dir, hex)
				mu.Lock()
				switch {
				case err != nil && first == nil:
					first = fmt.Errorf("writing blob %s: %w", hex[:12], err)
					cancel()
				case err == nil && n >= 0:
					res.Blobs++
					res.Bytes += n
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, hex := range hexes {
		select {
		case work <- hex:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return res, first
}

// putBlobFile writes one blob file if the bucket lacks it; n is its size,
// or -1 when the bucket had it.
func putBlobFile(ctx context.Context, c *Client, dir, hex string) (int64, error) {
	p := filepath.Join(dir, hex)
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", p)
	}
	_, err = c.PutBlob(ctx, hex, NewHashingReader(f, hex, fi.Size(), p), fi.Size())
	if errors.Is(err, ErrPrecondition) {
		return -1, nil
	}
	return fi.Size(), err
}
