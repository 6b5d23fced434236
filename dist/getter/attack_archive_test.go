package getter

// ATTACK TESTS (security review of the os.Root extraction, branch
// atk-archive). Each TestAttack* either proves an attack is refused, or
// FAILS to show a finding that is still open. Do not delete a failing one:
// fix the production code.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
)

// FINDING: names from the archive reach error messages (and so the
// terminal) with their control characters, through the %v of os.Root's
// *PathError (mkdir, create, symlink).
func TestAttackArchiveControlCharsInErrors(t *testing.T) {
	evil := "e\x1b[2J\x1b]0;owned\x07"
	for name, es := range map[string][]entry{
		"file under a file": {{Name: evil, Body: "x"}, {Name: evil + "/f", Body: "y"}},
		"link under a file": {{Name: evil, Body: "x"}, {Name: evil + "/l", Type: tar.TypeSymlink, Link: "x"}},
		"dir over a file":   {{Name: evil, Body: "x"}, {Name: evil + "/d", Type: tar.TypeDir}},
	} {
		for kind, data := range archives(t, es) {
			t.Run(name+"/"+kind, func(t *testing.T) {
				_, err := unpackIn(t, data, kind, defaultLimits)
				if err == nil {
					t.Fatal("extracted")
				}
				if strings.ContainsAny(err.Error(), "\x1b\x07") {
					t.Errorf("FINDING: the error carries raw control characters from the archive: %q", err.Error())
				}
			})
		}
	}
}

// FINDING: one entry may create up to MaxArchiveName/2 directories (its
// implicit parents), and extraction counts only entries, so 100,000
// entries make ~200 million directories (inodes) from a few MB of gzip.
// Measured here on a small scale and extrapolated to the limits.
func TestAttackArchiveImplicitDirectories(t *testing.T) {
	const perEntry = 2000 // "a/" * 2000 + tail stays under MaxArchiveName
	const entries = 40
	deep := strings.Repeat("a/", perEntry-1)
	var es []entry
	for i := range entries {
		es = append(es, entry{Name: fmt.Sprintf("%d/%s", i, deep), Type: tar.TypeDir})
	}
	data := registrytest.TarGz(t, es)
	start := time.Now()
	root, err := unpackIn(t, data, "tar.gz", defaultLimits)
	el := time.Since(start)
	if err != nil {
		t.Fatalf("refused: %v (good, if it names a depth or directory limit)", err)
	}
	var dirs int
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs++
		}
		return nil
	})
	perByte := float64(dirs) / float64(len(data))
	full := float64(dirs) / entries * MaxArchiveEntries
	t.Logf("%d entries, %d bytes of tar.gz -> %d directories in %v (%.0f dirs per archive byte); at %d entries: %.0f directories, ~%.0f s",
		entries, len(data), dirs, el, perByte, MaxArchiveEntries, full, el.Seconds()/entries*MaxArchiveEntries)
	os.RemoveAll(root)
	if full > 10*MaxArchiveEntries {
		t.Errorf("FINDING: an archive within every limit creates %.0f directories (the doc says one inode per entry)", full)
	}
}

// FINDING: time. Every file entry walks its whole directory path through
// os.Root (MkdirAll, then OpenFile), so files deep in one directory cost
// time quadratic in the depth, with no new directories: measured on a
// small scale, extrapolated to MaxArchiveEntries.
func TestAttackArchiveDeepFilesTime(t *testing.T) {
	const n = 200
	dir := strings.Repeat("a/", 2000)
	var es []entry
	for i := range n {
		es = append(es, entry{Name: fmt.Sprintf("%s%d", dir, i), Body: "x"})
	}
	data := registrytest.TarGz(t, es)
	arch := filepath.Join(t.TempDir(), "a.tar.gz")
	os.WriteFile(arch, data, 0o644)
	root := filepath.Join(t.TempDir(), "root")
	start := time.Now()
	if err := extract(arch, "tar.gz", root); err != nil {
		t.Fatalf("refused: %v (good, if it names a depth limit)", err)
	}
	el := time.Since(start)
	full := el.Seconds() / n * MaxArchiveEntries
	t.Logf("%d files at depth 2000 (%d bytes of tar.gz, %.0f bytes each): %v; at %d entries (~%.1f MB): ~%.0f s",
		n, len(data), float64(len(data))/n, el, MaxArchiveEntries, float64(len(data))/n*MaxArchiveEntries/1e6, full)
	os.RemoveAll(root)
	if full > 600 {
		t.Errorf("FINDING: an archive within every limit takes ~%.0f s to unpack", full)
	}
}

// FINDING: a zip's whole central directory is parsed into memory before the
// entry limit is checked, and module downloads have no size limit, so
// memory grows with the archive: measured per million entries.
func TestAttackZipCentralDirectoryMemory(t *testing.T) {
	const n = 1_000_000
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%x", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	zw.Close()
	arch := filepath.Join(t.TempDir(), "z.zip")
	os.WriteFile(arch, b.Bytes(), 0o644)
	size := b.Len()
	b = bytes.Buffer{}
	peak := measurePeak(func() {
		err := extract(arch, "zip", filepath.Join(t.TempDir(), "root"))
		if !errors.Is(err, ErrArchiveLimit) {
			t.Errorf("error %v, want %v", err, ErrArchiveLimit)
		}
	})
	t.Logf("zip of %d entries (%d MB) -> peak heap %d MB before the entry limit refused it", n, size>>20, peak>>20)
	if peak > 64<<20 {
		t.Errorf("FINDING: refusing an oversized zip costs %d MB of memory (grows with the archive; downloads are unbounded)", peak>>20)
	}
}

// Refused (good): a hard link to a symlink entry (links come last), a hard
// link to a directory, a directory then a link of the same name, a
// link whose target ends in a slash, links through the root itself,
// names that clean to the root.
func TestAttackArchiveRefusedShapes(t *testing.T) {
	for name, es := range map[string][]entry{
		"hard link to a symlink":  {{Name: "f", Body: "x"}, {Name: "s", Type: tar.TypeSymlink, Link: "f"}, {Name: "h", Type: tar.TypeLink, Link: "s"}},
		"hard link to a dir":      {{Name: "d", Type: tar.TypeDir}, {Name: "h", Type: tar.TypeLink, Link: "d"}},
		"hard link to the root":   {{Name: "h", Type: tar.TypeLink, Link: "./"}},
		"dir then link":           {{Name: "d", Type: tar.TypeDir}, {Name: "d", Type: tar.TypeSymlink, Link: "f"}, {Name: "f", Body: "x"}},
		"link then dir under it":  {{Name: "f", Body: "x"}, {Name: "l", Type: tar.TypeSymlink, Link: "."}, {Name: "l/l/l/d", Type: tar.TypeDir}},
		"link target dir slash":   {{Name: "f", Body: "x"}, {Name: "l", Type: tar.TypeSymlink, Link: "f/"}},
		"link to root dotdot":     {{Name: "d/f", Body: "x"}, {Name: "l", Type: tar.TypeSymlink, Link: "d/../../root/d/f"}},
		"file naming the root":    {{Name: ".", Body: "x"}},
		"link naming the root":    {{Name: ".", Type: tar.TypeSymlink, Link: "f"}},
		"link loop":               {{Name: "a", Type: tar.TypeSymlink, Link: "b"}, {Name: "b", Type: tar.TypeSymlink, Link: "a"}},
		"nine-link chain to file": nineChain(),
		"backslash dotdot link":   {{Name: "l", Type: tar.TypeSymlink, Link: `..\..\bystander`}},
	} {
		for kind, data := range archives(t, es) {
			t.Run(name+"/"+kind, func(t *testing.T) {
				if _, err := unpackIn(t, data, kind, defaultLimits); err == nil {
					t.Fatal("extracted")
				} else if !errors.Is(err, ErrUnsafeArchive) {
					t.Logf("refused, but not as unsafe: %v", err)
				}
			})
		}
	}
}

func nineChain() []entry {
	es := []entry{{Name: "f", Body: "x"}, {Name: "l0", Type: tar.TypeSymlink, Link: "f"}}
	for i := 1; i < 10; i++ {
		es = append(es, entry{Name: fmt.Sprintf("l%d", i), Type: tar.TypeSymlink, Link: fmt.Sprintf("l%d", i-1)})
	}
	return es
}

// Refused (good): tar oddities — sparse, PAX path overrides to "..",
// GNU long names and long links, NUL in names, size lies, devices.
func TestAttackTarOddities(t *testing.T) {
	hdr := func(h *tar.Header, body string) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
		tw.Close()
		return b.Bytes()
	}
	cases := map[string][]byte{
		"pax path dotdot":  hdr(&tar.Header{Name: "../../pwn\u00e9d", Typeflag: tar.TypeReg, Format: tar.FormatPAX}, "x"),
		"gnu longname":     hdr(&tar.Header{Name: strings.Repeat("d/", 60) + "../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../pwned", Typeflag: tar.TypeReg, Format: tar.FormatGNU}, "x"),
		"gnu longlink abs": hdr(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/" + strings.Repeat("x/", 80), Format: tar.FormatGNU}, ""),
		"char device":      hdr(&tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Format: tar.FormatPAX}, ""),
		"fifo":             hdr(&tar.Header{Name: "p", Typeflag: tar.TypeFifo, Format: tar.FormatPAX}, ""),
		"gnu sparse":       hdr(&tar.Header{Name: "s", Typeflag: tar.TypeGNUSparse, Size: 0, Format: tar.FormatGNU}, ""),
		"too-long name":    hdr(&tar.Header{Name: strings.Repeat("a", MaxArchiveName+1), Typeflag: tar.TypeReg, Format: tar.FormatPAX}, "x"),
	}
	// A header whose size lies (says 100, holds 1, then EOF).
	lie := hdr(&tar.Header{Name: "lie", Typeflag: tar.TypeReg, Size: 100, Format: tar.FormatPAX}, strings.Repeat("x", 100))
	cases["size lie"] = lie[:1024+1]
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := unpackIn(t, data, "tar", defaultLimits); err == nil {
				t.Fatal("extracted")
			} else {
				t.Logf("refused: %v", err)
			}
		})
	}
}

// FINDING: a registry's module location "git::file:///path" or
// "git::/path" makes export clone a repository of the exporting machine
// (any readable one whose path the attacker can guess) into the bundle.
func TestAttackGitLocalRepository(t *testing.T) {
	secret := t.TempDir()
	gitIn(t, secret, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(secret, "id_rsa"), []byte("PRIVATE KEY OF THE EXPORTING LAPTOP"), 0o600)
	gitIn(t, secret, "add", "-A")
	gitIn(t, secret, "commit", "-q", "-m", "x")
	for _, loc := range []string{"git::file://" + secret, "git::" + secret} {
		t.Run(loc, func(t *testing.T) {
			src, err := Parse(loc)
			if err != nil {
				t.Logf("refused at parse: %v", err)
				return
			}
			work := t.TempDir()
			res, err := Fetch(context.Background(), src, work, nil)
			if err != nil {
				t.Logf("refused: %v", err)
				return
			}
			b, _ := os.ReadFile(res.Archive)
			r, _ := gzipReader(b)
			all, _ := io.ReadAll(r)
			if bytes.Contains(all, []byte("PRIVATE KEY")) {
				t.Errorf("FINDING: %s cloned a local repository into the module archive", loc)
			}
		})
	}
}

// Refused (good): a submodule whose URL is a local path on the exporting
// machine (git >= 2.38.1 refuses file transport for submodules).
func TestAttackGitSubmoduleLocalPath(t *testing.T) {
	secret := t.TempDir()
	gitIn(t, secret, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(secret, "loot"), []byte("LOOT"), 0o600)
	gitIn(t, secret, "add", "-A")
	gitIn(t, secret, "commit", "-q", "-m", "x")
	top := t.TempDir()
	gitIn(t, top, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(top, "main.tf"), []byte("# m\n"), 0o644)
	gitIn(t, top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", secret, "sub")
	gitIn(t, top, "commit", "-q", "-am", "x")
	src, err := Parse("git::https://example.invalid/x.git")
	if err != nil {
		t.Fatal(err)
	}
	src.URL = top // the top-level clone is not what is tested here
	res, err := Fetch(context.Background(), src, t.TempDir(), nil)
	if err == nil {
		b, _ := os.ReadFile(res.Archive)
		r, _ := gzipReader(b)
		all, _ := io.ReadAll(r)
		if bytes.Contains(all, []byte("LOOT")) {
			t.Fatal("a submodule with a local URL was cloned into the module")
		}
		return
	}
	t.Logf("refused: %v", err)
}

// Refused (good): "//subdir" values that try to leave the root or go
// through a symlink; "//*" when the single top-level entry is a link.
func TestAttackSubdirEscapes(t *testing.T) {
	data := registrytest.TarGz(t, []entry{{Name: "m/main.tf", Body: "# m\n"}, {Name: "top.tf", Type: tar.TypeSymlink, Link: "m/main.tf"}})
	in := registrytest.New(t)
	u := in.AddRawArchive(t, "m.tar.gz", data)
	for _, sub := range []string{"../..", "../../../etc", "/etc", "m/../../..", "top.tf", "%2e%2e"} {
		t.Run(sub, func(t *testing.T) {
			src, err := Parse(u + "//" + sub)
			if err != nil {
				t.Logf("refused at parse: %v", err)
				return
			}
			work := t.TempDir()
			res, err := Fetch(context.Background(), src, work, downloader(in))
			if err != nil {
				t.Logf("refused: %v", err)
				return
			}
			full, _ := filepath.Abs(filepath.Join(res.Root, res.Subdir))
			if rel, err := filepath.Rel(res.Root, full); err != nil || !filepath.IsLocal(rel) && rel != "." {
				t.Fatalf("subdir %q resolves to %s, outside %s", sub, full, res.Root)
			}
		})
	}
}

func downloader(in *registrytest.Internet) DownloadFunc {
	return func(ctx context.Context, u, p string) error {
		req, _ := httpNewRequest(ctx, u)
		resp, err := (&http.Client{Transport: in.Transport()}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(f, resp.Body)
		return err
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func httpNewRequest(ctx context.Context, u string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, "GET", u, nil)
}

// measurePeak runs f while sampling the heap in use; it returns the peak
// growth over the heap before f.
func measurePeak(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
					peak.Store(m.HeapInuse - base)
				}
			}
		}
	}()
	f()
	close(done)
	return peak.Load()
}

// FINDING: a git "bomb" (each tree lists the same subtree ten times; a few
// KB of objects) is checked out in full before any limit applies:
// MaxArchiveEntries is only checked by Normalize, after git has written
// every file. Fan-out 10, depth 5 here (111,110 entries); depth 9 would be
// a billion files.
func TestAttackGitBomb(t *testing.T) {
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	out := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(b))
	}
	obj, kind, mode := out("# x\n", "hash-object", "-w", "--stdin"), "blob", "100644"
	for range 5 {
		var tree strings.Builder
		for i := range 10 {
			fmt.Fprintf(&tree, "%s %s %s\tf%d\n", mode, kind, obj, i)
		}
		obj, kind, mode = out(tree.String(), "mktree"), "tree", "040000"
	}
	commit := out("", "commit-tree", obj, "-m", "bomb")
	out("", "update-ref", "refs/heads/main", commit)
	src, err := Parse("git::https://example.invalid/bomb.git")
	if err != nil {
		t.Fatal(err)
	}
	src.URL = repo // stands for a repository served over https
	work := t.TempDir()
	start := time.Now()
	_, err = Fetch(context.Background(), src, work, nil)
	el := time.Since(start)
	var files int
	filepath.WalkDir(filepath.Join(work, "src"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	t.Logf("git bomb: %v after %v; %d files were checked out", err, el, files)
	if !errors.Is(err, ErrArchiveLimit) {
		t.Errorf("error %v, want %v", err, ErrArchiveLimit)
	}
	if files > MaxArchiveEntries/2 {
		t.Errorf("FINDING: git wrote %d files before the entry limit applied (nothing bounds a checkout while it happens)", files)
	}
}

// Decompression bombs stay within MaxArchiveBytes (documented), but cost
// time and disk: a 284-byte tar.bz2 of 256 MiB of zeros, unpacked and
// normalized, extrapolated to the 4 GiB limit. FAILS if the whole would
// take more than 10 minutes.
func TestAttackBzip2BombTime(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zeros"), make([]byte, 256<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "tar cf - zeros | bzip2 -9 > z.tar.bz2 && rm zeros")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	fi, _ := os.Stat(filepath.Join(dir, "z.tar.bz2"))
	root := filepath.Join(dir, "root")
	start := time.Now()
	if err := extract(filepath.Join(dir, "z.tar.bz2"), "tar.bz2", root); err != nil {
		t.Fatal(err)
	}
	unpack := time.Since(start)
	start = time.Now()
	if err := normalize(root, io.Discard, defaultLimits); err != nil {
		t.Fatal(err)
	}
	norm := time.Since(start)
	scale := float64(MaxArchiveBytes) / (256 << 20)
	total := (unpack + norm).Seconds() * scale
	t.Logf("%d-byte tar.bz2 -> 256 MiB: unpack %v, normalize %v; at %d GiB: ~%.0f s and %d GiB of disk",
		fi.Size(), unpack, norm, MaxArchiveBytes>>30, total, MaxArchiveBytes>>30)
	if total > 600 {
		t.Errorf("FINDING: a %d-byte archive within the limits costs ~%.0f s", fi.Size(), total)
	}
}
