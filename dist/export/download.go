package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/verify"
)

// The download cache's partial/ directory holds provider packages being
// downloaded and the prefixes kept for resuming them:
//
//	partial/<hex>            parked: the prefix of an interrupted download of
//	                         sha256:<hex>, claimed by the next download of it
//	partial/<hex>.<rand>.part private to one running download
//
// A download claims the parked prefix by renaming it to its private name
// (rename is atomic: one claimant wins, the others start afresh), so no two
// downloads, in this process or another sharing the cache, ever write or
// rename one file. Within a process, concurrent requests for one digest share
// one download (singleflight). A prefix is kept only while it can still
// become the file: one over the size limit, or a complete file with another
// digest, is removed. A resumed download that completes to the wrong digest
// is fetched once more from byte 0 before the export fails: the prefix, not
// the server, may be what was wrong.

// abandonedAfter: a private partial untouched for this long belongs to a
// killed export; the next export parks it for resuming.
const abandonedAfter = time.Hour

// fetchPackage returns the cached file for d (see cachedPackage),
// downloading it from u first if needed. Concurrent calls for one digest
// share one download (what
// names the package in the log line of the one that downloads it; against
// names what d comes from, for a mismatch: "the signed SHA256SUMS").
func (e *exporter) fetchPackage(ctx context.Context, d verify.Digest, u, filename, what, against string) (string, int64, error) {
	if path, size, ok := e.cachedPackage(d); ok {
		e.mu.Lock()
		e.res.Cached++
		e.mu.Unlock()
		return path, size, nil
	}
	type fetched struct {
		path string
		size int64
	}
	v, err, _ := e.flight.Do(string(d), func() (any, error) {
		if path, size, ok := e.cachedPackage(d); ok {
			return fetched{path, size}, nil
		}
		path, size, err := e.download(ctx, d, u, filename, what, against)
		return fetched{path, size}, err
	})
	if err != nil {
		return "", 0, err
	}
	f := v.(fetched)
	return f.path, f.size, nil
}

// download fetches u into a private partial file (resuming a parked prefix
// of d if there is one), checks its digest and admits it into the cache.
func (e *exporter) download(ctx context.Context, d verify.Digest, u, filename, what, against string) (string, int64, error) {
	dir := filepath.Join(e.opt.CacheDir, "partial")
	parked := filepath.Join(dir, d.Hex())
	f, err := os.CreateTemp(dir, d.Hex()+".*.part")
	if err != nil {
		return "", 0, fmt.Errorf("download cache: %w", err)
	}
	private := f.Name()
	f.Close()
	resumed := false
	if err := os.Rename(parked, private); err == nil {
		if fi, err := os.Stat(private); err == nil && fi.Size() > e.opt.MaxPackageSize {
			os.Truncate(private, 0) // cannot be a prefix of a file within the limit
		} else if err == nil && fi.Size() > 0 {
			resumed = true
		}
	}
	got, n, err := e.opt.Client.DownloadResumable(ctx, u, private, e.opt.MaxPackageSize)
	if err == nil && got != d && resumed {
		// The parked prefix came from other bytes (another build served
		// under this digest's URL, or a corrupted cache): fetch the whole
		// file once more from byte 0 before calling the download altered.
		e.opt.Log("notice: %s: the resumed download does not match %s; downloading it again from the start", what, against)
		if err = os.Truncate(private, 0); err == nil {
			got, n, err = e.opt.Client.DownloadResumable(ctx, u, private, e.opt.MaxPackageSize)
		}
	}
	if err != nil {
		if errors.Is(err, registry.ErrTooLarge) {
			os.Remove(private)
			return "", 0, fmt.Errorf("%w\nhint: if the package really is this large, raise the limit with --max-package-size; nothing was kept", err)
		}
		park(private, parked)
		return "", 0, err
	}
	if got != d {
		os.Remove(private)
		return "", 0, fmt.Errorf("%w: %s does not match %s (got %s, want %s)\nhint: the download was altered or the server is serving a different build; nothing was written",
			verify.ErrDigestMismatch, filename, against, got, d)
	}
	path, err := e.admit(private, d)
	if err != nil {
		return "", 0, err
	}
	e.mu.Lock()
	e.res.Bytes += n
	e.mu.Unlock()
	e.opt.Log("fetched %s (%s)", what, human(n))
	return path, n, nil
}

// park keeps a non-empty private partial under the digest's parked name for a
// later run to resume; an empty one is removed.
func park(private, parked string) {
	if fi, err := os.Stat(private); err == nil && fi.Size() > 0 {
		if os.Rename(private, parked) == nil {
			return
		}
	}
	os.Remove(private)
}

// tidyPartials parks the private partials of killed exports (not modified
// since before) so that their downloads resume, and removes parked partials
// of packages the cache already holds.
func tidyPartials(cacheDir string, before time.Time) {
	dir := filepath.Join(cacheDir, "partial")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		name := ent.Name()
		hex, _, private := strings.Cut(name, ".")
		if !verify.IsHex64(hex) || (private && !strings.HasSuffix(name, ".part")) {
			continue
		}
		fi, err := ent.Info()
		if err != nil || !fi.Mode().IsRegular() || (private && !fi.ModTime().Before(before)) {
			continue
		}
		if _, err := os.Stat(filepath.Join(cacheDir, "blobs", "sha256", hex)); err == nil {
			os.Remove(filepath.Join(dir, name))
		} else if private {
			park(filepath.Join(dir, name), filepath.Join(dir, hex))
		}
	}
}
