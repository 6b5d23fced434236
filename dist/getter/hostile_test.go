package getter

// Hostile module sources: regression tests from the security review of the
// os.Root extraction (issue 11). Each attacks the getter the way a registry
// or a module publisher could, and asserts it is refused, bounded, or
// harmless.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
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
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/airgap/airgap/dist/registrytest"
)

// Names with control characters are refused outright (they would reach the
// bundle and every terminal that lists the module), and errors from os.Root
// carry the errno only, never the path (which holds the archive's names and
// the extraction directory).
func TestHostileArchiveControlCharsAndPaths(t *testing.T) {
	evil := "e\x1b[2J\x1b]0;owned\x07"
	for name, tc := range map[string]struct {
		es   []entry
		want string
	}{
		"file name":         {[]entry{{Name: evil, Body: "x"}}, `has control characters`},
		"dir name":          {[]entry{{Name: evil + "/", Type: tar.TypeDir}}, `has control characters`},
		"link target":       {[]entry{{Name: "f", Body: "x"}, {Name: "l", Type: tar.TypeSymlink, Link: "f" + evil}}, `unprintable target`},
		"bidi override":     {[]entry{{Name: "main\u202etf.exe", Body: "x"}}, `has control characters`},
		"invalid utf-8":     {[]entry{{Name: "a\xff", Body: "x"}}, `invalid UTF-8`},
		"file under a file": {[]entry{{Name: "x", Body: "x"}, {Name: "x/f", Body: "y"}}, `directory "x": file exists`},
		"link under a file": {[]entry{{Name: "x", Body: "x"}, {Name: "x/l", Type: tar.TypeSymlink, Link: "x"}}, `directory "x": file exists`},
		"dir over a file":   {[]entry{{Name: "x", Body: "x"}, {Name: "x/d", Type: tar.TypeDir}}, `not a directory`},
	} {
		for kind, data := range archives(t, tc.es) {
			t.Run(name+"/"+kind, func(t *testing.T) {
				root, err := unpackIn(t, data, kind, defaultLimits)
				if err == nil {
					t.Fatal("extracted")
				}
				msg := err.Error()
				if strings.ContainsAny(msg, "\x1b\x07\u202e") || !utf8.ValidString(msg) {
					t.Errorf("the error carries raw control characters: %q", msg)
				}
				if strings.Contains(msg, root) || strings.Contains(msg, filepath.Dir(root)) {
					t.Errorf("the error carries the extraction path: %q", msg)
				}
				if !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(msg, tc.want) {
					t.Errorf("error %q, want %v and %q", msg, ErrUnsafeArchive, tc.want)
				}
			})
		}
	}
}

// Every directory an archive makes counts against the entry limit,
// implicit parents included, and names are at most MaxArchiveDepth
// components deep: one entry can create at most MaxArchiveDepth-1
// directories, and an archive at most MaxArchiveEntries inodes in all.
func TestHostileArchiveImplicitDirectories(t *testing.T) {
	// 2,000 levels in one entry (the review's attack): refused at once.
	deep := registrytest.TarGz(t, []entry{{Name: strings.Repeat("a/", 2000) + "f", Body: "x"}})
	if _, err := unpackIn(t, deep, "tar.gz", defaultLimits); !errors.Is(err, ErrArchiveLimit) || !strings.Contains(err.Error(), "directories deep") {
		t.Fatalf("2,000 levels: %v, want a depth limit", err)
	}
	// At the depth limit, entries in distinct trees: each makes 63
	// directories, and those count.
	const n = 20
	dir := strings.Repeat("a/", MaxArchiveDepth-1)
	var es []entry
	for i := range n {
		es = append(es, entry{Name: fmt.Sprintf("%d/%sf", i, dir[2:]), Body: "x"})
	}
	inodes := n * MaxArchiveDepth // 63 directories + 1 file each
	for kind, data := range archives(t, es) {
		t.Run(kind, func(t *testing.T) {
			lim := limits{entries: inodes, links: 10, bytes: 1 << 20}
			root, err := unpackIn(t, data, kind, lim)
			if err != nil {
				t.Fatalf("within the limit (%d inodes): %v", inodes, err)
			}
			var made int
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && p != root {
					made++
				}
				return nil
			})
			if made != inodes {
				t.Fatalf("%d inodes made, want %d", made, inodes)
			}
			lim.entries--
			if _, err := unpackIn(t, data, kind, lim); !errors.Is(err, ErrArchiveLimit) {
				t.Fatalf("one inode over the limit: %v, want %v", err, ErrArchiveLimit)
			}
		})
	}
	// Explicit directory entries are not counted twice.
	es = []entry{{Name: "d/", Type: tar.TypeDir}, {Name: "d/e/", Type: tar.TypeDir}, {Name: "d/e/f", Body: "x"}}
	if _, err := unpackIn(t, registrytest.Tar(t, es), "tar", limits{entries: 3, links: 1, bytes: 10}); err != nil {
		t.Fatalf("3 explicit entries under a limit of 3: %v", err)
	}
}

// Time: files at the depth limit cost a bounded os.Root walk each; measured
// on a small scale and extrapolated to MaxArchiveEntries (all of them at
// depth 63 is the worst case).
func TestHostileArchiveDeepFilesTime(t *testing.T) {
	const n = 2000
	dir := strings.Repeat("a/", MaxArchiveDepth-1)
	var es []entry
	for i := range n {
		es = append(es, entry{Name: fmt.Sprintf("%s%d", dir, i), Body: "x"})
	}
	data := registrytest.TarGz(t, es)
	arch := filepath.Join(t.TempDir(), "a.tar.gz")
	os.WriteFile(arch, data, 0o644)
	root := filepath.Join(t.TempDir(), "root")
	// CPU time, not wall time: the cost of the work, the same on a machine
	// running other tests at once (where wall time doubled and more).
	start, cpu0 := time.Now(), cpuTime()
	if err := extract(context.Background(), arch, "tar.gz", root); err != nil {
		t.Fatal(err)
	}
	el, cpu := time.Since(start), cpuTime()-cpu0
	full := cpu.Seconds() / n * MaxArchiveEntries
	t.Logf("%d files at depth %d: %v CPU (%v wall); at %d entries: ~%.0f s of CPU", n, MaxArchiveDepth, cpu, el, MaxArchiveEntries, full)
	if full > 300 {
		t.Errorf("an archive within every limit takes ~%.0f s of CPU to unpack", full)
	}
}

// A cancelled context stops extraction and normalization at the next entry,
// and a failed extraction leaves nothing.
func TestHostileArchiveCancel(t *testing.T) {
	var es []entry
	for i := range 200 {
		es = append(es, entry{Name: fmt.Sprintf("f%d", i), Body: "x"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	arch := filepath.Join(t.TempDir(), "a.tar.gz")
	os.WriteFile(arch, registrytest.TarGz(t, es), 0o644)
	root := filepath.Join(t.TempDir(), "root")
	if err := extract(ctx, arch, "tar.gz", root); !errors.Is(err, context.Canceled) {
		t.Fatalf("extract: %v, want %v", err, context.Canceled)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("the cancelled extraction left %s", root)
	}
	if err := extract(context.Background(), arch, "tar.gz", root); err != nil {
		t.Fatal(err)
	}
	if err := Normalize(ctx, root, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("normalize: %v, want %v", err, context.Canceled)
	}
}

// A zip's entry count is read from its end record (zip64 too), and its
// central directory headers are counted in a fixed buffer, before
// archive/zip parses the directory into memory; a record count that lies
// (archive/zip compares it modulo 65536) is caught by the count.
func TestHostileZipCentralDirectory(t *testing.T) {
	const n = 150_000 // over MaxArchiveEntries; more than 65,535 makes a zip64 end record
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
		err := extract(context.Background(), arch, "zip", filepath.Join(t.TempDir(), "root"))
		if !errors.Is(err, ErrArchiveLimit) {
			t.Errorf("error %v, want %v", err, ErrArchiveLimit)
		}
	})
	t.Logf("zip of %d entries (%d MB) -> peak heap %d KB before the entry limit refused it", n, size>>20, peak>>10)
	if peak > 8<<20 {
		t.Errorf("refusing an oversized zip costs %d MB of memory", peak>>20)
	}

	// 65,537 entries, the end record says 1: the count of headers refuses it.
	b.Reset()
	zw = zip.NewWriter(&b)
	for i := range 65537 {
		zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%x", i), Method: zip.Store})
	}
	zw.Close()
	data := b.Bytes()
	// Rewrite the zip64 end record's counts to 1 and drop the zip64
	// records, leaving a plain end record that says 1.
	end := bytes.LastIndex(data, []byte{'P', 'K', 5, 6})
	loc := bytes.LastIndex(data[:end], []byte{'P', 'K', 6, 7})
	e64 := bytes.LastIndex(data[:loc], []byte{'P', 'K', 6, 6})
	dirSize := binary.LittleEndian.Uint64(data[e64+40:])
	dirOff := binary.LittleEndian.Uint64(data[e64+48:])
	lying := append(append([]byte{}, data[:e64]...), data[end:]...)
	eo := len(lying) - (len(data) - end)
	binary.LittleEndian.PutUint16(lying[eo+8:], 1)
	binary.LittleEndian.PutUint16(lying[eo+10:], 1)
	binary.LittleEndian.PutUint32(lying[eo+12:], uint32(dirSize))
	binary.LittleEndian.PutUint32(lying[eo+16:], uint32(dirOff))
	if _, err := unpackIn(t, lying, "zip", limits{entries: 1000, links: 10, bytes: 1 << 20}); !errors.Is(err, ErrArchiveLimit) {
		t.Fatalf("lying record count: %v, want %v", err, ErrArchiveLimit)
	}
	// Data before the archive (archive/zip would shift every offset): refused.
	ok := registrytest.Zip(t, []entry{{Name: "main.tf", Body: "# m\n"}})
	if _, err := unpackIn(t, append([]byte("MZ prefix"), ok...), "zip", defaultLimits); !errors.Is(err, ErrUnsafeArchive) {
		t.Fatalf("prefixed zip: %v, want %v", err, ErrUnsafeArchive)
	}
	if _, err := unpackIn(t, ok, "zip", defaultLimits); err != nil {
		t.Fatalf("a plain zip: %v", err)
	}
}

// Refused: a hard link to a symlink entry (links come last), a hard
// link to a directory, a directory then a link of the same name, a
// link whose target ends in a slash, links through the root itself,
// names that clean to the root.
func TestHostileArchiveRefusedShapes(t *testing.T) {
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

// Refused: tar oddities — sparse, PAX path overrides to "..",
// GNU long names and long links, NUL in names, size lies, devices.
func TestHostileTarOddities(t *testing.T) {
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

// A registry's module location "git::file:///path" or "git::/path" would
// make export clone a repository of the exporting machine into the bundle:
// refused by Parse, and by git itself (protocol.allow) should a local URL
// ever reach it.
func TestHostileGitLocalRepository(t *testing.T) {
	secret := t.TempDir()
	gitIn(t, secret, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(secret, "id_rsa"), []byte("PRIVATE KEY OF THE EXPORTING LAPTOP"), 0o600)
	gitIn(t, secret, "add", "-A")
	gitIn(t, secret, "commit", "-q", "-m", "x")
	for _, loc := range []string{"git::file://" + secret, "git::" + secret, "git::file://localhost" + secret,
		"git::http://github.com/a/b.git", "git::git://github.com/a/b.git", "git::ext::sh -c id", "git::ssh://-oProxyCommand=id/x",
		"git@-oProxyCommand=id:x", "git::https://github.com/a/b.git?ref=--upload-pack=id"} {
		t.Run(loc, func(t *testing.T) {
			if _, err := Parse(loc); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Parse: %v, want %v", err, ErrUnsupported)
			}
		})
	}
	for _, u := range []string{"file://" + secret, secret} {
		t.Run("git refuses "+u, func(t *testing.T) {
			_, err := fetch(context.Background(), &Source{Kind: "git", URL: u, Raw: u}, t.TempDir(), nil)
			if err == nil || !strings.Contains(err.Error(), "not allowed") {
				t.Fatalf("Fetch of a local repository: %v, want git's refusal", err)
			}
		})
	}
}

// gitHost serves bare repositories over https (the stand-in github.com) and
// points this process's git at it.
func gitHost(t *testing.T) *registrytest.Internet {
	in := registrytest.New(t)
	for _, kv := range in.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return in
}

// bareRepo makes a bare repository github.com/<name>.git from a work tree
// built by build (run in the work tree).
func bareRepo(t *testing.T, in *registrytest.Internet, name string, build func(work string)) string {
	work := filepath.Join(t.TempDir(), "work")
	os.MkdirAll(work, 0o755)
	gitIn(t, work, "init", "-q", "-b", "main")
	build(work)
	bare := filepath.Join(in.GitRoot, name+".git")
	gitIn(t, work, "clone", "-q", "--bare", work, bare)
	return "https://github.com/" + name + ".git"
}

func gitOut(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(b))
}

// addSubmodule records a gitlink at path to commit, with url in .gitmodules.
func addSubmodule(t *testing.T, work, path, url, commit string) {
	os.WriteFile(filepath.Join(work, ".gitmodules"), []byte(fmt.Sprintf("[submodule %q]\n\tpath = %s\n\turl = %s\n", path, path, url)), 0o644)
	gitIn(t, work, "add", ".gitmodules")
	gitIn(t, work, "update-index", "--add", "--cacheinfo", "160000,"+commit+","+path)
}

// Submodules are fetched over https with a relative URL, at their pinned
// commit; a submodule whose URL is a local path on the exporting machine
// is refused (by airgap, before git is asked).
func TestHostileGitSubmodules(t *testing.T) {
	in := gitHost(t)
	var subCommit string
	bareRepo(t, in, "example/sub", func(w string) {
		os.WriteFile(filepath.Join(w, "sub.tf"), []byte("# sub\n"), 0o644)
		gitIn(t, w, "add", "-A")
		gitIn(t, w, "commit", "-q", "-m", "x")
		subCommit = gitOut(t, w, "", "rev-parse", "HEAD")
	})
	good := bareRepo(t, in, "example/top", func(w string) {
		os.WriteFile(filepath.Join(w, "main.tf"), []byte("# top\n"), 0o644)
		gitIn(t, w, "add", "-A")
		addSubmodule(t, w, "modules/sub", "../sub.git", subCommit)
		gitIn(t, w, "commit", "-q", "-m", "x")
	})
	src, err := Parse("git::" + good)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fetch(context.Background(), src, t.TempDir(), nil)
	if err != nil {
		t.Fatalf("a submodule over https: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(res.Root, "modules", "sub", "sub.tf")); err != nil || string(b) != "# sub\n" {
		t.Fatalf("submodule not checked out: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(res.Root, "modules", "sub", ".git")); !os.IsNotExist(err) {
		t.Fatalf("the submodule's .git is kept")
	}

	secret := t.TempDir()
	gitIn(t, secret, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(secret, "loot"), []byte("LOOT"), 0o600)
	gitIn(t, secret, "add", "-A")
	gitIn(t, secret, "commit", "-q", "-m", "x")
	for name, u := range map[string]string{"path": secret, "file": "file://" + secret, "ext": "ext::sh -c id"} {
		t.Run(name, func(t *testing.T) {
			bad := bareRepo(t, in, "evil/top-"+name, func(w string) {
				os.WriteFile(filepath.Join(w, "main.tf"), []byte("# m\n"), 0o644)
				gitIn(t, w, "add", "-A")
				addSubmodule(t, w, "sub", u, gitOut(t, secret, "", "rev-parse", "HEAD"))
				gitIn(t, w, "commit", "-q", "-m", "x")
			})
			src, _ := Parse("git::" + bad)
			_, err := fetch(context.Background(), src, t.TempDir(), nil)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("a submodule at %s: %v, want %v", u, err, ErrUnsupported)
			}
		})
	}
}

// Refused: "//subdir" values that try to leave the root or go
// through a symlink; "//*" when the single top-level entry is a link.
func TestHostileSubdirEscapes(t *testing.T) {
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
			res, err := fetch(context.Background(), src, work, downloader(in))
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

// A git "bomb" (each tree lists the same subtree ten times; a few KB of
// objects): the tree of the commit is checked against the limits before
// checkout, so nothing is checked out. Fan-out 10, depth 5 here (111,110
// entries); depth 9 would be a billion files. Also a deep tree and a name
// with control characters, refused the same way.
func TestHostileGitTrees(t *testing.T) {
	in := gitHost(t)
	tree := func(w string, fanout, depth int, name string) {
		obj, kind, mode := gitOut(t, w, "# x\n", "hash-object", "-w", "--stdin"), "blob", "100644"
		for range depth {
			var b strings.Builder
			for i := range fanout {
				fmt.Fprintf(&b, "%s %s %s\t%s%d\n", mode, kind, obj, name, i)
			}
			obj, kind, mode = gitOut(t, w, b.String(), "mktree"), "tree", "040000"
		}
		commit := gitOut(t, w, "", "commit-tree", obj, "-m", "bomb")
		gitOut(t, w, "", "update-ref", "refs/heads/main", commit)
	}
	for name, tc := range map[string]struct {
		fanout, depth int
		name          string
		want          error
	}{
		"bomb":          {10, 5, "f", ErrArchiveLimit},
		"deep":          {1, MaxArchiveDepth + 1, "d", ErrArchiveLimit},
		"control chars": {1, 1, "\x1b]0;owned\x07", ErrUnsafeArchive},
	} {
		t.Run(name, func(t *testing.T) {
			u := bareRepo(t, in, "evil/"+strings.ReplaceAll(name, " ", "-"), func(w string) { tree(w, tc.fanout, tc.depth, tc.name) })
			src, err := Parse("git::" + u)
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			start := time.Now()
			_, err = fetch(context.Background(), src, work, nil)
			var files int
			filepath.WalkDir(filepath.Join(work, "src"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && !strings.Contains(p, ".git") {
					files++
				}
				return nil
			})
			t.Logf("%v after %v; %d files checked out", err, time.Since(start), files)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\x1b\x07") {
				t.Errorf("raw control characters in %q", err.Error())
			}
			if files > 0 {
				t.Errorf("git checked out %d files before the limits applied", files)
			}
		})
	}
}

// A repository larger than the clone limit: git is stopped and the fetch
// fails as too large.
func TestHostileGitCloneSize(t *testing.T) {
	in := gitHost(t)
	u := bareRepo(t, in, "evil/big", func(w string) {
		junk := make([]byte, 3<<20)
		rand.Read(junk)
		os.WriteFile(filepath.Join(w, "junk"), junk, 0o644)
		gitIn(t, w, "add", "-A")
		gitIn(t, w, "commit", "-q", "-m", "x")
	})
	defer func(old int64) { gitRepoLimit = old }(gitRepoLimit)
	gitRepoLimit = 1 << 20
	src, _ := Parse("git::" + u)
	if _, err := fetch(context.Background(), src, t.TempDir(), nil); !errors.Is(err, ErrArchiveLimit) {
		t.Fatalf("error %v, want %v", err, ErrArchiveLimit)
	}
}

// Decompression bombs stay within MaxArchiveBytes (documented), but cost
// time and disk: a tar.bz2 of 64 MiB of zeros, unpacked and normalized,
// extrapolated to the limit. Fails if the whole would take more than 5
// minutes.
func TestHostileBzip2BombTime(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zeros"), make([]byte, 64<<20), 0o644); err != nil {
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
	if err := extract(context.Background(), filepath.Join(dir, "z.tar.bz2"), "tar.bz2", root); err != nil {
		t.Fatal(err)
	}
	unpack := time.Since(start)
	start = time.Now()
	if err := normalize(context.Background(), root, io.Discard, defaultLimits); err != nil {
		t.Fatal(err)
	}
	norm := time.Since(start)
	scale := float64(MaxArchiveBytes) / (64 << 20)
	total := (unpack + norm).Seconds() * scale
	t.Logf("%d-byte tar.bz2 -> 64 MiB: unpack %v, normalize %v; at %d GiB: ~%.0f s and %d GiB of disk",
		fi.Size(), unpack, norm, MaxArchiveBytes>>30, total, MaxArchiveBytes>>30)
	if total > 300 {
		t.Errorf("a %d-byte archive within the limits costs ~%.0f s", fi.Size(), total)
	}
}

// A ?ref= naming a commit no branch or tag advertises makes airgap ask
// for it with "git fetch origin <commit>" after the clone: that fetch runs
// under the same size watch as the clone (it used not to, and an 8 MiB
// blob arrived under a 1 MiB limit).
func TestHostileGitUnadvertisedCommitSize(t *testing.T) {
	in := gitHost(t)
	u := bareRepo(t, in, "evil/hidden", func(w string) {
		os.WriteFile(filepath.Join(w, "main.tf"), []byte("# small\n"), 0o644)
		gitIn(t, w, "add", "-A")
		gitIn(t, w, "commit", "-q", "-m", "x")
	})
	bare := filepath.Join(in.GitRoot, "evil/hidden.git")
	hidden := hiddenCommit(t, bare, 8<<20)
	defer func(old int64) { gitRepoLimit = old }(gitRepoLimit)
	gitRepoLimit = 1 << 20
	src, err := Parse("git::" + u + "?ref=" + hidden)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	_, err = fetch(context.Background(), src, work, nil)
	if !errors.Is(err, ErrArchiveLimit) || !strings.Contains(err.Error(), "git fetch") {
		t.Fatalf("error %v, want %v naming git fetch", err, ErrArchiveLimit)
	}
}

// hiddenCommit writes, into the bare repository, a commit with one random
// file of size bytes that no ref reaches, lets upload-pack serve it, and
// returns its hash.
func hiddenCommit(t *testing.T, bare string, size int) string {
	t.Helper()
	junk := make([]byte, size)
	rand.Read(junk)
	f := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(f, junk, 0o644)
	blob := gitOut(t, bare, "", "hash-object", "-w", f)
	tree := gitOut(t, bare, "100644 blob "+blob+"\tjunk.tf\n", "mktree")
	commit := gitOut(t, bare, "", "commit-tree", tree, "-m", "hidden")
	gitIn(t, bare, "config", "uploadpack.allowAnySHA1InWant", "true")
	return commit
}

// A repository's .gitattributes asks for CRLF line ends and UTF-32 on
// checkout: airgap's checkout ignores them and writes each blob's bytes as
// they are (which the tree check counted), and ignores the user's global
// attributes file too.
func TestHostileGitAttributes(t *testing.T) {
	in := gitHost(t)
	body := strings.Repeat("# a line of configuration\n", 4096)
	u := bareRepo(t, in, "evil/attrs", func(w string) {
		os.WriteFile(filepath.Join(w, "main.tf"), []byte(body), 0o644)
		os.WriteFile(filepath.Join(w, "x.json"), []byte("{\"$Id$\": 1}\n"), 0o644)
		gitIn(t, w, "add", "-A") // the blobs as they are, before the attributes exist
		os.WriteFile(filepath.Join(w, ".gitattributes"), []byte("*.tf text eol=crlf working-tree-encoding=UTF-32LE\n*.json filter=evil ident\n"), 0o644)
		gitIn(t, w, "add", ".gitattributes")
		gitIn(t, w, "commit", "-q", "-m", "x")
	})
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\tautocrlf = true\n\tattributesFile = "+filepath.Join(home, "attrs")+"\n[filter \"evil\"]\n\tsmudge = sed s/1/666/\n"), 0o644)
	os.WriteFile(filepath.Join(home, "attrs"), []byte("* eol=crlf\n"), 0o644)
	t.Setenv("HOME", home)
	src, _ := Parse("git::" + u)
	res, err := fetch(context.Background(), src, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"main.tf": body, "x.json": "{\"$Id$\": 1}\n"} {
		got, err := os.ReadFile(filepath.Join(res.Root, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %d bytes written for a %d-byte blob (%q…)", name, len(got), len(want), got[:min(len(got), 16)])
		}
	}
}

// A repository of a few KB whose pack holds a delta describing a 2 GiB
// blob: git resolves deltas while it clones, before any tree check, and
// used to allocate the whole blob (2 GiB of resident memory for one
// object; three at once, or a larger one, would exhaust the exporting
// machine). GIT_ALLOC_LIMIT stops git at MaxGitAllocation, quickly, and
// the fetch fails as too large.
func TestHostileGitDeltaBomb(t *testing.T) {
	in := gitHost(t)
	u := in.AddDeltaBomb(t, "evil/bomb", 2<<30)
	src, err := Parse("git::" + u)
	if err != nil {
		t.Fatal(err)
	}
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	_, err = fetch(context.Background(), src, t.TempDir(), nil)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	if !errors.Is(err, ErrArchiveLimit) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes to unpack", MaxGitAllocation)) {
		t.Errorf("error %v, want %v saying an object is too large to unpack", err, ErrArchiveLimit)
	}
	// Maxrss of the children: the largest git process this test waited
	// for (the stand-in's own git processes pack without resolving it).
	if grew := after.Maxrss; grew > 256<<10 {
		t.Errorf("a git process of the fetch reached %d MiB of resident memory", grew>>10)
	}
}

// git gets the environment without airgap's own secrets (the signing
// key's passphrase): it runs the user's git configuration (credential
// helpers, ssh and its ProxyCommand) for repositories module authors name.
func TestGitEnvHasNoSecrets(t *testing.T) {
	t.Setenv("AIRGAP_PASSPHRASE", "s3cret")
	t.Setenv("AIRGAP_REGISTRY_PASSWORD", "s3cret")
	for _, kv := range gitEnv() {
		if strings.Contains(kv, "s3cret") {
			t.Errorf("git's environment holds %s", kv)
		}
	}
}
