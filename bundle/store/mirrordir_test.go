package store

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter/archivetest"
	"github.com/airgap/airgap/verify"
)

// mirrorStore writes a store whose catalog has one provider version with
// one linux_amd64 package: the given zip bytes.
func mirrorStore(t *testing.T, zip []byte) (string, dist.Package) {
	t.Helper()
	root := t.TempDir()
	if _, _, err := ensureLayout(root); err != nil {
		t.Fatal(err)
	}
	d := verify.DigestBytes(zip)
	bundletest.WriteFile(t, BlobPath(root, d), zip)
	h1, _ := dist.H1(BlobPath(root, d))
	if h1 == "" {
		h1 = "h1:" + strings.Repeat("A", 43) + "="
	}
	pk := dist.Package{OS: "linux", Arch: "amd64", Filename: "terraform-provider-x_1.0.0_linux_amd64.zip", Digest: d, Size: int64(len(zip)), H1: h1}
	ix := &Index{Format: IndexFormat, Imports: []ImportEntry{}, Catalog: dist.Catalog{Modules: []dist.ModuleVersion{}, Providers: []dist.ProviderVersion{{
		Host: "registry.terraform.io", Namespace: "h", Type: "x", Version: "1.0.0", ShasumsName: "terraform-provider-x_1.0.0_SHA256SUMS",
		Shasums: d, ShasumsSig: d, Packages: []dist.Package{pk},
	}}}}
	if err := WriteIndex(root, ix); err != nil {
		t.Fatal(err)
	}
	return root, pk
}

// TestMirrorDirHostileZips: the unpacked layout extracts nothing outside
// the package's directory and refuses every entry that is not a plain
// relative file or directory; a refusal leaves no tree and no temporary
// directory.
func TestMirrorDirHostileZips(t *testing.T) {
	good := archivetest.Zip(t, []archivetest.Entry{{Name: "terraform-provider-x_v1.0.0", Body: "#!/bin/sh\n"}, {Name: "LICENSE", Body: "MIT"}})
	root, _ := mirrorStore(t, good)
	out := filepath.Join(t.TempDir(), "m")
	res, err := MirrorDir(root, MirrorDirOptions{Out: out, Layout: "unpacked"})
	if err != nil || res.Packages != 1 || len(res.Notes) != 0 {
		t.Fatalf("a plain zip: %+v %v", res, err)
	}
	for name, entries := range map[string][]archivetest.Entry{
		"dot-dot":   {{Name: "../escape", Body: "x"}},
		"absolute":  {{Name: "/etc/escape", Body: "x"}},
		"backslash": {{Name: `..\escape`, Body: "x"}},
		"symlink":   {{Name: "link", Type: tar.TypeSymlink, Link: "/etc/passwd"}},
		"twice":     {{Name: "a", Body: "1"}, {Name: "a", Body: "2"}},
		"control":   {{Name: "a\x1b[2J", Body: "x"}},
		"deep":      {{Name: strings.Repeat("d/", 20) + "f", Body: "x"}},
		"dot":       {{Name: "./a", Body: "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			root, _ := mirrorStore(t, archivetest.Zip(t, entries))
			parent := t.TempDir()
			out := filepath.Join(parent, "m")
			_, err := MirrorDir(root, MirrorDirOptions{Out: out, Layout: "unpacked"})
			if !errors.Is(err, ErrMirrorDir) || !strings.Contains(err.Error(), "its zip entry") {
				t.Errorf("err = %v", err)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(parent), "escape")); err == nil {
				t.Error("an entry escaped")
			}
		})
	}
	// A zip with directory entries hashes differently unpacked: said so.
	withDir := archivetest.Zip(t, []archivetest.Entry{{Name: "docs", Type: tar.TypeDir}, {Name: "docs/x", Body: "x"}})
	root, _ = mirrorStore(t, withDir)
	res, err = MirrorDir(root, MirrorDirOptions{Out: filepath.Join(t.TempDir(), "m"), Layout: "unpacked"})
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "lists directories") {
		t.Errorf("directory entries: %+v %v", res, err)
	}
}

// TestMirrorDirCopiesAndReplaces: without hard links (another file system)
// the zips are copied and checked against their digests — a damaged blob
// fails and leaves the previous tree in place; an earlier tree is replaced
// whole; anything else at the destination is refused.
func TestMirrorDirCopiesAndReplaces(t *testing.T) {
	zip := archivetest.Zip(t, []archivetest.Entry{{Name: "terraform-provider-x_v1.0.0", Body: "#!/bin/sh\n"}})
	root, pk := mirrorStore(t, zip)
	linkFile = func(string, string) error { return errors.New("cross-device link") }
	defer func() { linkFile = os.Link }()
	out := filepath.Join(t.TempDir(), "m")
	res, err := MirrorDir(root, MirrorDirOptions{Out: out})
	if err != nil || res.Copied != 1 || res.Linked != 0 || res.Bytes != int64(len(zip)) {
		t.Fatalf("%+v %v", res, err)
	}
	zipPath := filepath.Join(out, "registry.terraform.io", "h", "x", pk.Filename)
	before := bundletest.Snapshot(t, out)
	// Damage the blob: the copy notices, and the old tree stays.
	blob := BlobPath(root, pk.Digest)
	os.Chmod(blob, 0o644)
	os.WriteFile(blob, append([]byte("junk"), zip...), 0o644)
	if _, err := MirrorDir(root, MirrorDirOptions{Out: out}); !errors.Is(err, verify.ErrDigestMismatch) {
		t.Errorf("a damaged blob: %v", err)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, out))
	os.WriteFile(blob, zip, 0o444)
	// An earlier tree is replaced: a file planted in it goes.
	os.WriteFile(filepath.Join(out, "planted"), []byte("x"), 0o644)
	if _, err := MirrorDir(root, MirrorDirOptions{Out: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "planted")); err == nil {
		t.Error("the old tree's files survived")
	}
	if _, err := os.Stat(zipPath); err != nil {
		t.Error(err)
	}
	// An index changed by hand cannot turn a name into a path elsewhere.
	ix, err := readIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	ix.Catalog.Providers[0].Packages[0].Filename = "../../../escape.zip"
	WriteIndex(root, ix)
	if _, err := MirrorDir(root, MirrorDirOptions{Out: filepath.Join(t.TempDir(), "m2")}); err == nil || !strings.Contains(err.Error(), "the store's index") {
		t.Errorf("a hostile file name in the index: %v", err)
	}
	// A symlink at the destination is refused.
	ln := filepath.Join(t.TempDir(), "ln")
	os.Symlink(out, ln)
	if _, err := MirrorDir(root, MirrorDirOptions{Out: ln}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a symlinked destination: %v", err)
	}
	if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".m.airgap-mirror-*")); len(ents) > 0 {
		t.Errorf("temporary trees left: %v", ents)
	}
}
