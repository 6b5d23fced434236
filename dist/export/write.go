package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// WriteOptions say how WriteBundle writes a finished export.
type WriteOptions struct {
	Out         string
	Key         *openpgp.Entity
	Tool        string // recorded in the manifest, e.g. "airgap 1.2.3"
	Compression bundle.Compression
	ModTime     time.Time  // zero: now; SOURCE_DATE_EPOCH for reproducible bundles
	Delta       *DeltaBase // make a delta against what the offline side has (ReadDeltaBase)
	SplitSize   int64      // > 0: split into volumes and remove the whole file
	// AcceptKeys are fingerprints (verify.ParseFingerprint form) the
	// bundle declares as approved new publisher keys, for every namespace
	// whose providers each signs ('--accept-new-publisher-key').
	AcceptKeys []string
	Log        func(format string, a ...any)
	// Offline (--have) flags keys the offline store will not take
	// without an approval.
	Offline *Offline
}

// WriteBundle writes res as a signed bundle (a delta if asked) through a
// temporary file, so no partial bundle is ever left, splits it if asked, and
// completes sum. It returns the parts index when it split.
func WriteBundle(res *Result, sum *Summary, opt WriteOptions) (*bundle.PartsIndex, error) {
	m := res.Manifest
	m.Tool = opt.Tool
	if !opt.ModTime.IsZero() {
		m.Created = &opt.ModTime
	}
	keys, signAt, decls, err := signatures(m, res.Files, opt.ModTime, time.Now(), opt.AcceptKeys)
	if err != nil {
		return nil, err
	}
	m.PublisherKeys, sum.PublisherKeys = decls, keys
	for _, w := range opt.Offline.keyWarnings(keys) {
		opt.Log("warning: %s", dist.Printable(w))
		sum.Warnings = append(sum.Warnings, w)
	}
	if err := res.addSBOM(); err != nil {
		return nil, err
	}
	if base := opt.Delta; base != nil {
		sum.Omitted, sum.Delta = base.Apply(m), base.Desc
		opt.Log("delta against %s: %d of %d blobs are already on the offline side and are not carried", base.Desc, sum.Omitted, len(m.Blobs))
	}
	err = bundle.CreateAtomic(opt.Out, func(f *os.File) error {
		bw, err := bundle.NewWriter(f, m, opt.Key, bundle.WriterOptions{Compression: opt.Compression, ModTime: opt.ModTime, SignTime: signAt})
		if err != nil {
			return err
		}
		if err := res.writeBlobs(bw); err != nil {
			return err
		}
		return bw.Close()
	})
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(opt.Out)
	if err != nil {
		return nil, err
	}
	sum.Out, sum.Size, sum.SBOM = opt.Out, fi.Size(), string(m.SBOM)
	sum.Blobs, sum.BlobBytes = m.Totals()
	if opt.SplitSize <= 0 {
		return nil, nil
	}
	ix, err := bundle.SplitFile(opt.Out, opt.SplitSize, opt.Key, opt.ModTime)
	if err != nil {
		return nil, fmt.Errorf("splitting %s: %w (the whole bundle is kept)", opt.Out, err)
	}
	return ix, os.Remove(opt.Out)
}

// ErrDamagedCache: a file of the download cache did not hash to its
// name while it was copied into the bundle (a crash cut it short, the
// disk or someone changed it). WriteBundle removed it, and what the cache
// kept from it, and wrote nothing; the export run again with
// Options.RecheckCache fetches it again.
var ErrDamagedCache = errors.New("a file of the download cache does not match its digest")

// writeBlobs writes every carried blob from its file. Each is hashed as it
// is copied (bundle.Writer.WriteBlob), against the digest the manifest
// names: the one check of a cached package's bytes in a warm export (see
// exporter.cachedPackage). A cache file that fails it is removed.
func (res *Result) writeBlobs(bw *bundle.Writer) error {
	cached := filepath.Join(res.cacheDir, "blobs", "sha256") + string(filepath.Separator)
	for _, b := range bw.Remaining() {
		path, ok := res.Files[b.Digest]
		if !ok {
			return fmt.Errorf("blob %s (%s): no file given for it", b.Digest.Short(), b.Role)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = bw.WriteBlob(b.Digest, f)
		f.Close()
		if err == nil {
			continue
		}
		if res.cacheDir != "" && strings.HasPrefix(path, cached) &&
			(errors.Is(err, verify.ErrDigestMismatch) || errors.Is(err, verify.ErrSizeMismatch)) {
			os.Remove(path)
			os.Remove(scanPathIn(res.cacheDir, b.Digest))
			return fmt.Errorf("%w: %s (removed): %w", ErrDamagedCache, path, err)
		}
		return err
	}
	return nil
}

// addSBOM writes the SBOM of the finished manifest (check.BuildSBOM, from
// the build information read while each package was hashed) into the
// cache and lists it in the manifest. It must come after the tool and
// creation time are set: the SBOM records them.
func (res *Result) addSBOM() error {
	m := res.Manifest
	b, err := check.BuildSBOM(m, func(pk dist.Package) (*goinfo.Info, bool) {
		i, ok := res.BuildInfo[pk.Digest]
		return i, ok
	})
	if err != nil {
		return err
	}
	d := verify.DigestBytes(b)
	// Written afresh over whatever the cache holds under d (an entry a
	// crash cut short: see exporter.cached), through a temporary file of
	// this export's own (another export may write the same SBOM now).
	path := filepath.Join(res.cacheDir, "blobs", "sha256", d.Hex())
	tmp := tmpPath(res.cacheDir)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		os.Chmod(tmp, 0o444)
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if m.SBOM != "" {
		return errors.New("the manifest already has an SBOM")
	}
	m.SBOM, m.SBOMGenerator = d, sbom.Generator
	m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: int64(len(b)), Role: dist.RoleSBOM})
	res.Files[d] = path
	m.Normalize()
	return nil
}

// CacheDir is dir, or the user cache dir's airgap folder when dir is "".
func CacheDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache dir (%v)\nhint: pass --cache DIR", err)
	}
	return filepath.Join(d, "airgap"), nil
}
