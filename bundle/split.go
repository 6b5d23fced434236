package bundle

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// A split set carries one bundle on media with a file size limit:
//
//	BUNDLE.000   the signed parts index (a tar of parts.json and parts.json.sig)
//	BUNDLE.001…  consecutive byte ranges of the bundle (cat BUNDLE.0?? minus
//	             .000 gives the bundle back)
//
// The index names the bundle (its manifest digest), its size and sha256, and
// every part's name, size and sha256, and is signed by the same kind of key
// as the bundle, so a missing, truncated, corrupt or foreign part is named
// before anything is imported.

// ErrParts: a split set is incomplete or damaged.
var ErrParts = errors.New("split bundle")

// PartsIndex is parts.json.
type PartsIndex struct {
	Format int           `json:"format"`
	Bundle verify.Digest `json:"bundle"` // manifest digest
	Size   int64         `json:"size"`   // the whole bundle
	Digest verify.Digest `json:"digest"` // sha256 of the whole bundle
	Parts  []Part        `json:"parts"`
}

// Part is one volume.
type Part struct {
	Name   string        `json:"name"`
	Size   int64         `json:"size"`
	Digest verify.Digest `json:"digest"`
}

var partRe = regexp.MustCompile(`^(.*)\.([0-9]{3})$`)

// SetPrefix returns the bundle name of a split set part path
// ("x.bundle.002" → "x.bundle") and whether path looks like a part.
func SetPrefix(path string) (string, bool) {
	m := partRe.FindStringSubmatch(path)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// IsSplitSet reports whether path names a part of a split set: NAME.NNN
// with NAME.000 (the index) or NAME.001 beside it. OpenSet then says which
// part, the index included, is missing.
func IsSplitSet(path string) bool {
	prefix, ok := SetPrefix(path)
	if !ok {
		return false
	}
	for _, sib := range []string{".000", ".001"} {
		if _, err := os.Stat(prefix + sib); err == nil {
			return true
		}
	}
	return false
}

// Preset sizes for --split.
var presets = map[string]int64{
	"fat32":  4<<30 - 1,
	"dvd":    4_700_000_000,
	"dvd-dl": 8_500_000_000,
	"bd":     25_000_000_000,
	"cd":     700 << 20,
}

// ParseSize reads "4GiB", "700MB", "123456" or a preset (fat32, dvd, dvd-dl, bd, cd).
func ParseSize(s string) (int64, error) {
	if n, ok := presets[strings.ToLower(s)]; ok {
		return n, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("invalid size %q (e.g. 4GiB, 700MB, fat32, dvd)", s)
	}
	n := int64(f * float64(mult))
	if n < 1<<20 {
		return 0, fmt.Errorf("size %q is below 1 MiB", s)
	}
	return n, nil
}

// ReadManifestDigest returns the manifest digest of a bundle stream without
// checking its signature (import and verify check it).
func ReadManifestDigest(r io.Reader) (verify.Digest, error) {
	br, err := openStream(r)
	if err != nil {
		return "", err
	}
	defer br.Close()
	data, err := br.readSmall(ManifestName, MaxManifestSize)
	if err != nil {
		return "", err
	}
	return verify.DigestBytes(data), nil
}

// SplitFile splits the bundle at path into parts of at most size bytes,
// written as path.001…, and the index path.000 signed by signer. Parts are
// written through temporary files; on failure none is left.
func SplitFile(path string, size int64, signer *openpgp.Entity, at time.Time) (*PartsIndex, error) {
	return SplitFileCounting(path, size, signer, at, io.Discard)
}

// SplitFileCounting is SplitFile that also copies the bundle's bytes to
// count as it reads them (a progress.Counter, for a progress line).
func SplitFileCounting(path string, size int64, signer *openpgp.Entity, at time.Time, count io.Writer) (*PartsIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	id, err := ReadManifestDigest(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ix := &PartsIndex{Format: 1, Bundle: id}
	whole := verify.NewDigester()
	var written []string
	ok := false
	defer func() {
		if !ok {
			for _, p := range written {
				os.Remove(p)
			}
		}
	}()
	src := io.TeeReader(f, io.MultiWriter(whole, count))
	for i := 1; ; i++ {
		if i > 999 {
			return nil, fmt.Errorf("more than 999 parts: choose a larger --split size")
		}
		name := fmt.Sprintf("%s.%03d", filepath.Base(path), i)
		tmp := filepath.Join(filepath.Dir(path), "."+name+".partial")
		out, err := os.Create(tmp)
		if err != nil {
			return nil, err
		}
		written = append(written, tmp)
		d, n, err := verify.CopyDigest(out, io.LimitReader(src, size))
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			os.Remove(tmp)
			written = written[:len(written)-1]
			break
		}
		ix.Parts = append(ix.Parts, Part{Name: name, Size: n, Digest: d})
		if n < size {
			break
		}
	}
	ix.Size, ix.Digest = whole.Size(), whole.Digest()
	data, err := json.MarshalIndent(ix, "", " ")
	if err != nil {
		return nil, err
	}
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, signer, bytes.NewReader(data), at); err != nil {
		return nil, err
	}
	var idx bytes.Buffer
	tw := tar.NewWriter(&idx)
	mt := at
	if mt.IsZero() {
		mt = time.Unix(0, 0)
	}
	for _, e := range []struct {
		name string
		b    []byte
	}{{"parts.json", data}, {"parts.json.sig", sig.Bytes()}} {
		tw.WriteHeader(&tar.Header{Name: e.name, Size: int64(len(e.b)), Mode: 0o444, ModTime: mt, Typeflag: tar.TypeReg})
		tw.Write(e.b)
	}
	tw.Close()
	idxTmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".000.partial")
	if err := os.WriteFile(idxTmp, idx.Bytes(), 0o644); err != nil {
		return nil, err
	}
	written = append(written, idxTmp)
	for _, p := range ix.Parts {
		if err := os.Rename(filepath.Join(filepath.Dir(path), "."+p.Name+".partial"), filepath.Join(filepath.Dir(path), p.Name)); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(idxTmp, path+".000"); err != nil {
		return nil, err
	}
	ok = true
	return ix, nil
}

// partsJSON bounds a split set's parts.json (2 MiB, read from the index's
// tar) once its signature checked: nested at most 8 deep (it nests 3).
var partsJSON = dist.JSONLimit{MaxBytes: 2 << 20, MaxDepth: 8}

// readPartsIndex reads and checks the signed index of a split set.
func readPartsIndex(indexPath string, keyring openpgp.EntityList) (*PartsIndex, verify.Signer, error) {
	f, err := os.Open(indexPath)
	if err != nil {
		return nil, verify.Signer{}, fmt.Errorf("%w: the index %s is missing: %v\nhint: copy every part, including .000", ErrParts, filepath.Base(indexPath), err)
	}
	defer f.Close()
	tr := tar.NewReader(io.LimitReader(f, 4<<20))
	var data, sig []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, verify.Signer{}, fmt.Errorf("%w: the index %s is unreadable: %v", ErrParts, filepath.Base(indexPath), err)
		}
		b, err := io.ReadAll(io.LimitReader(tr, 2<<20))
		if err != nil {
			return nil, verify.Signer{}, fmt.Errorf("%w: the index %s is truncated", ErrParts, filepath.Base(indexPath))
		}
		switch h.Name {
		case "parts.json":
			data = b
		case "parts.json.sig":
			sig = b
		default:
			return nil, verify.Signer{}, fmt.Errorf("%w: unexpected entry %q in the index", ErrParts, h.Name)
		}
	}
	if data == nil {
		return nil, verify.Signer{}, fmt.Errorf("%w: %s is not a parts index", ErrParts, filepath.Base(indexPath))
	}
	signer, err := verify.CheckDetached(keyring, bytes.NewReader(data), sig)
	if err != nil {
		return nil, verify.Signer{}, fmt.Errorf("%w: the index %s: %w", ErrParts, filepath.Base(indexPath), err)
	}
	var ix PartsIndex
	if err := partsJSON.Unmarshal(data, &ix); err != nil {
		return nil, verify.Signer{}, fmt.Errorf("%w: the index: %v", ErrParts, err)
	}
	for _, p := range ix.Parts {
		if strings.ContainsAny(p.Name, "/\\") || p.Size < 0 {
			return nil, verify.Signer{}, fmt.Errorf("%w: the index names an invalid part %q", ErrParts, p.Name)
		}
	}
	return &ix, signer, nil
}

// checkParts checks every part of the set against the index, reading each
// once, and names the first part that is missing, truncated, too long or
// corrupt. It changes nothing.
func checkParts(dir string, ix *PartsIndex) error {
	var problems []string
	for i, p := range ix.Parts {
		path := filepath.Join(dir, p.Name)
		f, err := os.Open(path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("part %d of %d (%s) is missing", i+1, len(ix.Parts), p.Name))
			continue
		}
		d, n, err := verify.CopyDigest(io.Discard, f)
		f.Close()
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("part %d (%s) is unreadable: %v", i+1, p.Name, err))
		case n < p.Size:
			problems = append(problems, fmt.Sprintf("part %d (%s) is truncated: %d of %d bytes", i+1, p.Name, n, p.Size))
		case n > p.Size:
			problems = append(problems, fmt.Sprintf("part %d (%s) is %d bytes, %d longer than the index says", i+1, p.Name, n, n-p.Size))
		case d != p.Digest:
			problems = append(problems, fmt.Sprintf("part %d (%s) is corrupt or from another bundle (sha256 %s, want %s)", i+1, p.Name, d.Short(), p.Digest.Short()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s\nhint: copy the named part(s) again from the original media; nothing was imported", ErrParts, strings.Join(problems, "; "))
	}
	return nil
}

// OpenSet checks a split set (given any of its parts) and returns a reader of
// the whole bundle. Parts are checked before the reader is returned; the
// reader checks the whole-bundle digest at its end.
func OpenSet(path string, keyring openpgp.EntityList) (io.ReadCloser, *PartsIndex, error) {
	prefix, ok := SetPrefix(path)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not a part (NAME.000, NAME.001, …)", ErrParts, path)
	}
	ix, _, err := readPartsIndex(prefix+".000", keyring)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Dir(path)
	if err := checkParts(dir, ix); err != nil {
		return nil, nil, err
	}
	var files []*os.File
	var readers []io.Reader
	for _, p := range ix.Parts {
		f, err := os.Open(filepath.Join(dir, p.Name))
		if err != nil {
			for _, g := range files {
				g.Close()
			}
			return nil, nil, err
		}
		files = append(files, f)
		readers = append(readers, f)
	}
	return &setReader{r: io.MultiReader(readers...), files: files, d: verify.NewDigester(), want: ix.Digest, size: ix.Size}, ix, nil
}

type setReader struct {
	r     io.Reader
	files []*os.File
	d     *verify.Digester
	want  verify.Digest
	size  int64
}

func (s *setReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.d.Write(p[:n])
	if err == io.EOF {
		if cerr := s.d.Check(s.want, s.size); cerr != nil {
			return n, fmt.Errorf("%w: the joined parts: %w", ErrParts, cerr)
		}
	}
	return n, err
}

func (s *setReader) Close() error {
	for _, f := range s.files {
		f.Close()
	}
	return nil
}
