package store

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/zipdir"
	"github.com/airgap/airgap/verify"
)

// MirrorDir writes a filesystem_mirror tree of the store's providers, the
// layout 'terraform providers mirror' writes and Terraform and OpenTofu read
// from a provider_installation { filesystem_mirror { path = … } } block (or
// -plugin-dir), for sites without a server: CI runner images, laptops.
//
//	packed:   HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip
//	unpacked: HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/<the zip's files>
//
// Packed files are hard links to the store's blobs where the file system
// allows (the same inode: read-only, 0444, and they keep their bytes if the
// store later drops the blob), copies otherwise (checked against the blob's
// digest while copying). Unpacked trees are extracted through os.Root: the
// zips were verified at import, but their shape is still the publisher's
// (or a mirror's) choice, so every entry must be a plain relative name
// (no "..", no absolute path, no backslash, no control character, at most
// 16 levels), a regular file or a directory (links and devices are
// refused), listed once, within the consistency check's bounds
// (check.MaxZipEntries, MaxZipDirectory, MaxZipUnpacked, MaxZipRatio);
// files get 0755 if the zip marks them executable, else 0644. The
// directory's h1 (dirhash.HashDir, what Terraform computes for an unpacked
// package) is compared with the package's h1 (that of its zip); a package
// whose zip holds directory entries hashes differently unpacked, and is
// reported (a lock file made through a registry would not match it there:
// use the packed layout for it).
//
// Lock files: Terraform (1.11) and OpenTofu (1.11) installing from a
// filesystem mirror check the package against the lock file's hashes (zh:
// or h1: for a packed zip, h1: for an unpacked directory) and, for a new
// lock, record only the h1: of the platform they installed, in both layouts
// (measured by TestMirrorDirOffline). A reference lock made through a
// registry (h1: plus every platform's zh:) is used unchanged in both
// layouts; to add other platforms' hashes to a lock made from the mirror,
// run 'terraform providers lock -fs-mirror=PATH -platform=…'.
//
// Atomic: the tree is built in a temporary directory next to Out
// (.NAME.airgap-mirror-*) and then takes Out's place in one rename (on
// Linux an exchange with the old tree, which is then removed; elsewhere the
// old tree is first renamed aside): Out is never a half tree, and a failed
// or killed run leaves Out as it was (the next run removes temporary trees
// untouched for an hour). Out may be absent, an empty directory, or a tree
// an earlier MirrorDir wrote (it holds the marker file markerName);
// anything else is refused, so a typo cannot replace a directory of
// something else. Out must not be a symbolic link.
func MirrorDir(root string, opt MirrorDirOptions) (*MirrorDirResult, error) {
	out, layout, err := mirrorArgs(opt)
	if err != nil {
		return nil, err
	}
	st, err := Open(root)
	if err != nil {
		return nil, err
	}
	return mirrorDir(st, out, layout, opt)
}

// MirrorDirStore is MirrorDir of a store already open: a store in object
// storage (a staged index with a Remote) streams each packed zip from the
// bucket, hashed as it is copied, and fetches each zip it unpacks,
// verified, into its private directory, removed once unpacked.
func MirrorDirStore(st *Store, opt MirrorDirOptions) (*MirrorDirResult, error) {
	out, layout, err := mirrorArgs(opt)
	if err != nil {
		return nil, err
	}
	return mirrorDir(st, out, layout, opt)
}

// mirrorArgs checks opt's layout and destination.
func mirrorArgs(opt MirrorDirOptions) (out, layout string, err error) {
	layout = opt.Layout
	if layout == "" {
		layout = "packed"
	}
	if layout != "packed" && layout != "unpacked" {
		return "", "", fmt.Errorf("%w: --layout %q: want packed or unpacked", ErrMirrorDir, layout)
	}
	if out, err = filepath.Abs(opt.Out); err != nil {
		return "", "", err
	}
	if err := checkMirrorOut(out); err != nil {
		return "", "", err
	}
	return out, layout, nil
}

func mirrorDir(st *Store, out, layout string, opt MirrorDirOptions) (*MirrorDirResult, error) {
	sel, err := selectMirror(st.Catalog(), opt)
	if err != nil {
		return nil, err
	}
	tidyMirrorTemps(out, time.Now().Add(-time.Hour))
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".airgap-mirror-")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMirrorDir, err)
	}
	res := &MirrorDirResult{Out: out, Layout: layout, Providers: []string{}, Notes: []string{}}
	if err := writeMirror(st, tmp, layout, sel, res); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := swapMirror(tmp, out); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("%w: putting the tree in place at %s: %v (%s is as it was)", ErrMirrorDir, out, err, out)
	}
	res.Config = fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", out)
	return res, nil
}

// MirrorDirOptions say what MirrorDir writes.
type MirrorDirOptions struct {
	Out       string
	Layout    string   // "packed" (default) or "unpacked"
	Platforms []string // os_arch; none: every platform the store has
	// Providers are [HOST/]NAMESPACE/TYPE[@VERSION]; none: every provider.
	Providers []string
}

// MirrorDirResult is what MirrorDir wrote ('airgap mirror-dir --json').
type MirrorDirResult struct {
	Out       string   `json:"out"`
	Layout    string   `json:"layout"`
	Providers []string `json:"providers"` // "ADDRESS VERSION" written
	Packages  int      `json:"packages"`
	Linked    int      `json:"linked"` // packed zips hard-linked to the store
	Copied    int      `json:"copied"` // packed zips copied (no hard link possible)
	Bytes     int64    `json:"bytes"`  // bytes copied or extracted (links cost none)
	// Config is the provider_installation block that uses the tree.
	Config string   `json:"provider_installation"`
	Notes  []string `json:"notes"`
}

// markerName is the file at the top of a tree MirrorDir wrote; a later run
// may replace a directory only if it has it. Terraform and OpenTofu skip
// files at that level of a mirror.
const markerName = ".airgap-mirror-dir.json"

// ErrMirrorDir: the mirror tree cannot be written as asked.
var ErrMirrorDir = errors.New("mirror-dir")

// linkFile is os.Link; tests make it fail (as it does across file systems).
var linkFile = os.Link

// maxUnpackedDepth bounds the directory levels of an unpacked package.
const maxUnpackedDepth = 16

type marker struct {
	Format    int      `json:"format"`
	Layout    string   `json:"layout"`
	Providers []string `json:"providers"`
}

// checkMirrorOut refuses an Out that MirrorDir must not replace.
func checkMirrorOut(out string) error {
	fi, err := os.Lstat(out)
	if errors.Is(err, os.ErrNotExist) {
		if pfi, err := os.Stat(filepath.Dir(out)); err != nil || !pfi.IsDir() {
			return fmt.Errorf("%w: --out %s: the directory %s does not exist\nhint: create it first; nothing was written", ErrMirrorDir, out, filepath.Dir(out))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: --out %s: %v", ErrMirrorDir, out, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%w: --out %s is not a directory (or is a symbolic link)\nhint: give a new path, an empty directory or a tree an earlier 'airgap mirror-dir' wrote; nothing was written", ErrMirrorDir, out)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("%w: --out %s: %v", ErrMirrorDir, out, err)
	}
	if len(ents) == 0 {
		return nil
	}
	var m marker
	if err := readMarker(filepath.Join(out, markerName), &m); err != nil || m.Format != 1 {
		return fmt.Errorf("%w: --out %s is not empty and is not a tree 'airgap mirror-dir' wrote (no %s in it), so it is not replaced\nhint: give a new path or an empty directory; nothing was written", ErrMirrorDir, out, markerName)
	}
	return nil
}

// markerJSON bounds a marker file: 1 MiB, nested at most 8 deep.
var markerJSON = dist.JSONLimit{MaxBytes: 1 << 20, MaxDepth: 8}

// readMarker reads a marker file (a regular file, within markerJSON:
// anyone who can write into the tree can plant one).
func readMarker(path string, m *marker) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return markerJSON.Decode(f, m)
}

// mirrorPackage is one package to write.
type mirrorPackage struct {
	p  *dist.ProviderVersion
	pk dist.Package
}

// selectMirror picks the packages opt asks for.
func selectMirror(cat *dist.Catalog, opt MirrorDirOptions) ([]mirrorPackage, error) {
	type filter struct {
		addr, version string
		used          bool
	}
	var filters []*filter
	for _, a := range opt.Providers {
		addr, ver, _ := strings.Cut(a, "@")
		p, err := dist.ParseProviderSource(addr)
		if err != nil || (ver != "" && !dist.ValidVersion(ver)) {
			return nil, fmt.Errorf("%w: %q: want [HOST/]NAMESPACE/TYPE[@VERSION], e.g. hashicorp/aws or hashicorp/aws@5.61.0", ErrMirrorDir, dist.Printable(a))
		}
		filters = append(filters, &filter{addr: p.String(), version: ver})
	}
	plats := map[string]bool{}
	for _, p := range opt.Platforms {
		if err := dist.CheckPlatform(p); err != nil {
			return nil, fmt.Errorf("%w: --platform: %v", ErrMirrorDir, err)
		}
		plats[p] = true
	}
	var sel []mirrorPackage
	for i := range cat.Providers {
		p := &cat.Providers[i]
		want := len(filters) == 0
		for _, f := range filters {
			if f.addr == p.Addr() && (f.version == "" || dist.CompareVersions(f.version, p.Version) == 0) {
				want, f.used = true, true
			}
		}
		if !want {
			continue
		}
		// Its names become paths: they must be what an import lets in.
		if err := (&dist.Catalog{Providers: []dist.ProviderVersion{*p}}).Validate(nil); err != nil {
			return nil, fmt.Errorf("%w: the store's index: %v\nhint: the index was changed by hand or damaged; nothing was written", ErrMirrorDir, err)
		}
		for _, pk := range p.Packages {
			if pk.Filename != dist.ProviderPackageName(p.Type, p.Version, pk.OS, pk.Arch) {
				return nil, fmt.Errorf("%w: the store's index lists %s for %s %s; nothing was written", ErrMirrorDir, dist.Printable(pk.Filename), p, pk.Platform())
			}
		}
		for _, pk := range p.Packages {
			if len(plats) == 0 || plats[pk.Platform()] {
				sel = append(sel, mirrorPackage{p, pk})
			}
		}
	}
	for _, f := range filters {
		if !f.used {
			v := ""
			if f.version != "" {
				v = "@" + f.version
			}
			return nil, fmt.Errorf("%w: the store has no provider %s%s\nhint: 'airgap inventory --store DIR' lists what it has; nothing was written", ErrMirrorDir, f.addr, v)
		}
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("%w: no package of the store matches (platforms: %s)\nhint: 'airgap inventory --store DIR' lists the providers and platforms it has; nothing was written", ErrMirrorDir, strings.Join(opt.Platforms, ", "))
	}
	return sel, nil
}

// writeMirror writes every selected package and the marker under tmp.
func writeMirror(st *Store, tmp, layout string, sel []mirrorPackage, res *MirrorDirResult) error {
	r, err := os.OpenRoot(tmp)
	if err != nil {
		return err
	}
	defer r.Close()
	seen := map[string]bool{}
	for _, s := range sel {
		p, pk := s.p, s.pk
		dir := path.Join(p.Host, p.Namespace, p.Type)
		var err error
		if layout == "packed" {
			err = linkOrCopy(st, r, tmp, dir, pk, res)
		} else {
			err = unpack(st, r, tmp, path.Join(dir, p.Version, pk.Platform()), pk, res)
		}
		if err != nil {
			return fmt.Errorf("%w: provider %s %s: %w\nnothing was written at the destination", ErrMirrorDir, p, pk.Platform(), err)
		}
		res.Packages++
		if !seen[p.String()] {
			seen[p.String()] = true
			res.Providers = append(res.Providers, p.String())
			if p.MirrorHashesOnly {
				res.Notes = append(res.Notes, fmt.Sprintf("provider %s carries a network mirror's hashes only (no publisher signature; from %s)", p, p.Mirror))
			}
		}
	}
	sort.Strings(res.Providers)
	data, err := json.MarshalIndent(marker{Format: 1, Layout: layout, Providers: res.Providers}, "", "  ")
	if err != nil {
		return err
	}
	if err := r.WriteFile(markerName, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return syncDir(tmp)
}

// linkOrCopy puts the package's zip at dir/<filename> under r: a hard link
// to the store's blob, or a copy checked against its digest.
func linkOrCopy(st *Store, r *os.Root, tmp, dir string, pk dist.Package, res *MirrorDirResult) error {
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := path.Join(dir, pk.Filename)
	blob := BlobPath(st.Root(), pk.Digest)
	src, _, remote, err := st.StreamBlob(context.Background(), pk.Digest)
	if err != nil {
		return err
	}
	if !remote {
		if fi, err := os.Lstat(blob); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s", ErrBlobMissing, pk.Digest.Short())
		}
		// os.Link's new name is resolved against tmp, which MirrorDir made:
		// name is built from catalog names that Validate checked, with no "..".
		if err := linkFile(blob, filepath.Join(tmp, filepath.FromSlash(name))); err == nil {
			res.Linked++
			return nil
		}
		if src, err = st.OpenBlob(pk.Digest); err != nil {
			return err
		}
	}
	defer src.Close()
	f, err := r.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	d, n, err := verify.CopyDigest(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && d != pk.Digest {
		err = fmt.Errorf("%w: the store's blob %s has sha256 %s\nhint: the store is damaged; import the bundle again to repair it", verify.ErrDigestMismatch, pk.Digest.Short(), d.Hex())
	}
	if err != nil {
		return err
	}
	res.Copied++
	res.Bytes += n
	return nil
}

// unpack extracts the package's zip into dir under r (see MirrorDir for
// the rules) and compares the directory's h1 with the package's.
func unpack(st *Store, r *os.Root, tmp, dir string, pk dist.Package, res *MirrorDirResult) error {
	blob := BlobPath(st.Root(), pk.Digest)
	if st.remote != nil && !fileExists(blob) { // fetched from the bucket, verified; removed once unpacked
		defer os.Remove(blob)
	}
	f, err := st.OpenBlob(pk.Digest) // a missing blob is ErrBlobMissing
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := zipdir.Check(f, fi.Size(), check.MaxZipEntries, check.MaxZipDirectory); err != nil {
		return fmt.Errorf("its zip: %w", err)
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return fmt.Errorf("its zip: %w", err)
	}
	var total uint64
	for _, zf := range zr.File {
		total += zf.UncompressedSize64
	}
	if limit := max(uint64(fi.Size())*check.MaxZipRatio, check.MinZipUnpackedLimit); total > check.MaxZipUnpacked || total > limit {
		return fmt.Errorf("its zip unpacks to %d bytes, over the limits (%d bytes, or %d× its size)", total, uint64(check.MaxZipUnpacked), check.MaxZipRatio)
	}
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dirs := false
	for _, zf := range zr.File {
		isDir, err := extractEntry(r, dir, zf, res)
		if err != nil {
			return fmt.Errorf("its zip entry %q: %w", dist.Printable(zf.Name), err)
		}
		dirs = dirs || isDir
	}
	h1, err := dirhash.HashDir(filepath.Join(tmp, filepath.FromSlash(dir)), "", dirhash.Hash1)
	if err != nil {
		return err
	}
	if h1 != pk.H1 {
		why := ""
		if dirs {
			why = " (its zip lists directories, which the zip's h1 counts and a directory's does not)"
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s: unpacked, it hashes to %s, not to its zip's %s%s; a lock file made through a registry will not match it in this layout: use --layout packed for it", pk.Filename, h1, pk.H1, why))
	}
	return nil
}

// extractEntry writes one zip entry under dir; it reports whether the
// entry was a directory.
func extractEntry(r *os.Root, dir string, zf *zip.File, res *MirrorDirResult) (bool, error) {
	name := zf.Name
	clean := path.Clean(strings.TrimSuffix(name, "/"))
	switch {
	case name == "" || strings.ContainsRune(name, '\\') || dist.Printable(name) != name || strings.HasPrefix(name, "/"):
		return false, errors.New("not a plain relative name")
	case !filepath.IsLocal(filepath.FromSlash(clean)) || clean != strings.TrimSuffix(name, "/"):
		return false, errors.New("not a plain relative name (\"..\", \".\" or a doubled slash)")
	case strings.Count(clean, "/") >= maxUnpackedDepth:
		return false, fmt.Errorf("more than %d levels deep", maxUnpackedDepth)
	}
	target := path.Join(dir, clean)
	mode := zf.Mode()
	switch {
	case mode.IsDir():
		return true, r.MkdirAll(target, 0o755)
	case !mode.IsRegular():
		return false, fmt.Errorf("a %s, not a regular file (a provider package holds files only)", mode.Type())
	}
	if err := r.MkdirAll(path.Dir(target), 0o755); err != nil {
		return false, err
	}
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	out, err := r.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return false, err // listed twice, or a directory of that name
	}
	in, err := zf.Open()
	if err == nil {
		var n int64
		// archive/zip refuses more bytes than the entry declares; the
		// declared sizes were bounded above.
		n, err = io.Copy(out, in)
		in.Close()
		res.Bytes += n
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return false, err
}

// tidyMirrorTemps removes temporary trees of earlier runs for out that no
// one has touched since before.
func tidyMirrorTemps(out string, before time.Time) {
	ents, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		return
	}
	prefix := "." + filepath.Base(out) + ".airgap-mirror-"
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) {
			os.RemoveAll(filepath.Join(filepath.Dir(out), e.Name()))
		}
	}
}
