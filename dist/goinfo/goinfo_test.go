package goinfo_test

import (
	"archive/zip"
	"bytes"
	"debug/buildinfo"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
)

// prog is a small program with one dependency, built in a module of its own
// from the module cache (airgap's own golang.org/x/mod).
const prog = `package main

import (
	"fmt"

	"golang.org/x/mod/semver"
)

func main() { fmt.Println(semver.IsValid("v1.2.3")) }
`

// goModRequire returns the require line and go.sum lines of golang.org/x/mod
// as airgap's go.mod pins it, so the program builds offline.
func goModRequire(t *testing.T) (require string, sums []byte) {
	t.Helper()
	root := filepath.Join("..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "golang.org/x/mod" {
			require = f[0] + " " + f[1]
		}
	}
	gosum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	for _, l := range strings.Split(string(gosum), "\n") {
		if strings.HasPrefix(l, "golang.org/x/mod ") {
			sums = append(sums, l+"\n"...)
		}
	}
	if require == "" {
		t.Fatal("golang.org/x/mod is not in go.mod")
	}
	return require, sums
}

type variant struct {
	name, goos, goarch string
	flags              []string
	git                bool
}

// buildVariants builds prog in every way the scanner must read.
func buildVariants(t *testing.T) map[string]string {
	t.Helper()
	require, sums := goModRequire(t)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/prog\n\ngo 1.24\n\nrequire "+require+"\n"), 0o644)
	os.WriteFile(filepath.Join(src, "go.sum"), sums, 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(prog), 0o644)
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+src)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "prog")
	out := t.TempDir()
	bins := map[string]string{}
	for _, v := range []variant{
		{name: "plain", flags: []string{"-buildvcs=false"}},
		{name: "trimpath", flags: []string{"-buildvcs=false", "-trimpath"}},
		{name: "vcs", flags: []string{"-buildvcs=true"}, git: true},
		{name: "stripped", flags: []string{"-buildvcs=false", "-ldflags=-s -w"}},
		{name: "darwin", goos: "darwin", goarch: "arm64", flags: []string{"-buildvcs=false", "-trimpath"}},
		{name: "windows", goos: "windows", goarch: "amd64", flags: []string{"-buildvcs=false", "-trimpath"}},
		{name: "386", goos: "linux", goarch: "386", flags: []string{"-buildvcs=false"}},
	} {
		bin := filepath.Join(out, v.name)
		cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, v.flags...), ".")...)
		cmd.Dir = src
		env := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "CGO_ENABLED=0"}
		if v.goos != "" {
			env = append(env, "GOOS="+v.goos, "GOARCH="+v.goarch)
		}
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build (%s): %v\n%s", v.name, err, b)
		}
		bins[v.name] = bin
	}
	return bins
}

// scan writes data to a Scanner in chunks of random sizes (so headers fall
// across writes) and returns the encoded result.
func scan(data []byte, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	s := &goinfo.Scanner{}
	for len(data) > 0 {
		n := min(len(data), 1+r.IntN(70000))
		if r.IntN(4) == 0 {
			n = min(len(data), 1+r.IntN(20))
		}
		s.Write(data[:n])
		data = data[n:]
	}
	return goinfo.Encode(s.Result())
}

// The stream scan reads what debug/buildinfo reads, from real binaries of
// every kind a provider ships (ELF, Mach-O, PE, 32-bit; VCS-stamped,
// trimmed, stripped), however the bytes are chunked.
func TestScannerMatchesDebugBuildinfo(t *testing.T) {
	bins := buildVariants(t)
	for name, bin := range bins {
		want, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatalf("%s: debug/buildinfo: %v", name, err)
		}
		data, _ := os.ReadFile(bin)
		wantDoc := goinfo.Encode(goinfo.FromBuildInfo(want))
		for seed := range uint64(3) {
			if got := scan(data, seed); !bytes.Equal(got, wantDoc) {
				t.Errorf("%s (chunking %d):\n got %s\nwant %s", name, seed, got, wantDoc)
			}
		}
		info, _ := goinfo.Decode(wantDoc)
		if info == nil || info.Main == nil || info.Main.Path != "example.com/prog" || len(info.Deps) != 1 || info.Deps[0].Path != "golang.org/x/mod" || info.Deps[0].Sum == "" {
			t.Errorf("%s: the build information lacks the main module or its dependency: %s", name, wantDoc)
		}
		if !strings.HasPrefix(info.GoVersion, "go1.") {
			t.Errorf("%s: go version %q", name, info.GoVersion)
		}
	}
	vcs, _ := goinfo.Decode(scan(mustRead(t, bins["vcs"]), 7))
	if !hasSetting(vcs, "vcs.revision") || !hasSetting(vcs, "vcs.modified") {
		t.Errorf("a -buildvcs binary: no vcs settings: %+v", vcs.Settings)
	}
	trim, _ := goinfo.Decode(scan(mustRead(t, bins["trimpath"]), 7))
	if !hasSetting(trim, "-trimpath") || hasSetting(trim, "vcs.revision") {
		t.Errorf("a -trimpath -buildvcs=false binary: settings %+v", trim.Settings)
	}
	win, _ := goinfo.Decode(scan(mustRead(t, bins["windows"]), 7))
	if !hasSetting(win, "GOOS") || win.Settings[0].Key == "" {
		t.Errorf("windows binary settings %+v", win.Settings)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hasSetting(info *goinfo.Info, key string) bool {
	if info == nil {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == key {
			return true
		}
	}
	return false
}

// A binary that is not Go (the test machine's own /bin/sh or git) has no
// build information: recorded, not an error.
func TestScannerNotGo(t *testing.T) {
	for _, p := range []string{"/bin/sh", "/usr/bin/git"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if got := scan(b, 1); !bytes.Equal(got, goinfo.Encode(&goinfo.Info{None: goinfo.NoneNotGo})) {
			t.Errorf("%s: %s", p, got)
		}
	}
	if got := scan([]byte("#!/bin/sh\necho hi\n"), 1); !strings.Contains(string(got), goinfo.NoneNotGo) {
		t.Errorf("a script: %s", got)
	}
}

// header builds a build-information header as Go ≥ 1.18 writes it: magic,
// pointer size, flags, padding to 32 bytes, then the varint-prefixed
// version and module strings.
func header(vers, mod string, flags byte) []byte {
	b := append([]byte{}, "\xff Go buildinf:"...)
	b = append(b, 8, flags)
	b = append(b, make([]byte, 16)...)
	b = binary.AppendUvarint(b, uint64(len(vers)))
	b = append(b, vers...)
	b = binary.AppendUvarint(b, uint64(len(mod)))
	return append(b, mod...)
}

const sentinel = "0w\xaf\x0c\x92t\b\x02A\xe1\xc1\a\xe6\xd6\x18\xe6"

func modinfo(lines string) string { return sentinel + lines + "\n" + sentinel[:16] }

// at places b at an offset of pad bytes into a stream of filler.
func at(pad int, b ...[]byte) []byte {
	out := bytes.Repeat([]byte{0xff, 'G', 'o'}, pad)[:pad]
	for _, x := range b {
		out = append(out, x...)
	}
	return append(out, bytes.Repeat([]byte{0}, 64)...)
}

// Hostile and odd streams: each is recorded as what it is, the same
// however it is chunked, in bounded memory.
func TestScannerHostile(t *testing.T) {
	good := header("go1.22.5", modinfo("path\texample.com/p\nmod\texample.com/p\tv1.0.0\t\ndep\tgolang.org/x/mod\tv0.1.0\th1:abc="), 2)
	want := func(data []byte) string {
		t.Helper()
		got := string(scan(data, 1))
		for seed := uint64(2); seed < 6; seed++ {
			if again := string(scan(data, seed)); again != got {
				t.Fatalf("chunking changed the result:\n%s\n%s", got, again)
			}
		}
		return got
	}
	if got := want(at(64, good)); !strings.Contains(got, `"go_version":"go1.22.5"`) || !strings.Contains(got, "golang.org/x/mod") {
		t.Errorf("a plain header: %s", got)
	}
	// Unaligned: not a header (debug/buildinfo does not read it either).
	if got := want(at(65, good)); !strings.Contains(got, goinfo.NoneNotGo) {
		t.Errorf("an unaligned header was read: %s", got)
	}
	// A fake header (bad pointer size, then a bad version) before the real
	// one, even overlapping it: refused, the search goes on.
	fake := header("go1.0", "", 2)
	fake[14] = 3
	fake2 := header("\x1b[31mgo", "", 2)
	if got := want(at(32, fake[:16], fake2[:32], make([]byte, 16), good)); !strings.Contains(got, `"go_version":"go1.22.5"`) {
		t.Errorf("fake headers hid the real one: %s", got)
	}
	// Before Go 1.18: pointers, not read.
	if got := want(at(0, header("go1.16", "", 0))); !strings.Contains(got, goinfo.NonePre118) {
		t.Errorf("a pre-1.18 header: %s", got)
	}
	// A module string over the limit: not collected.
	big := header("go1.22.5", "", 2)
	big = append(big[:len(big)-1], binary.AppendUvarint(nil, goinfo.MaxModInfo+1)...)
	if got := want(at(0, big)); !strings.Contains(got, goinfo.NoneTooLarge) {
		t.Errorf("an oversized module string: %s", got)
	}
	// The stream ends inside the module string.
	trunc := header("go1.22.5", modinfo("path\tx"), 2)
	if got := string(scan(trunc[:len(trunc)-5], 1)); !strings.Contains(got, goinfo.NoneMalformed) {
		t.Errorf("a truncated module string: %s", got)
	}
	// Control characters in a module path.
	esc := header("go1.22.5", modinfo("path\texample.com/p\nmod\texample.com/\x1b[2Jp\tv1.0.0\t"), 2)
	if got := want(at(0, esc)); !strings.Contains(got, goinfo.NoneBounds) {
		t.Errorf("an unprintable module path: %s", got)
	}
	// Too many modules.
	var many strings.Builder
	many.WriteString("path\tx\nmod\tx\t(devel)\t")
	for i := range goinfo.MaxModules + 1 {
		fmt.Fprintf(&many, "\ndep\texample.com/m%d\tv1.0.0\th1:x=", i)
	}
	if got := want(at(0, header("go1.22.5", modinfo(many.String()), 2))); !strings.Contains(got, goinfo.NoneBounds) {
		t.Errorf("too many modules: %.200s", got)
	}
	// Aligned fake headers everywhere: the search stops, in linear time.
	var flood []byte
	for range goinfo.MaxCandidates + 10 {
		flood = append(flood, fake[:16]...)
		flood = append(flood, make([]byte, 16)...)
	}
	if got := want(append(flood, good...)); !strings.Contains(got, goinfo.NoneTooMany) {
		t.Errorf("a flood of fake headers: %s", got)
	}
}

// ScanZip's h1 is dist.H1's, and it finds the plugin's build information
// in a real package zip (deflated, with a LICENSE beside it).
func TestScanZip(t *testing.T) {
	self, err := os.Executable() // the test binary: a real Go binary
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zp := filepath.Join(dir, "p.zip")
	f, _ := os.Create(zp)
	zw := zip.NewWriter(f)
	for _, e := range []struct{ name, src string }{{"LICENSE", ""}, {"terraform-provider-x_v1.0.0", self}} {
		w, _ := zw.Create(e.name)
		if e.src == "" {
			w.Write([]byte("license text\n"))
			continue
		}
		b, _ := os.ReadFile(e.src)
		w.Write(b)
	}
	zw.Close()
	f.Close()
	h1, info, err := goinfo.ScanZip(zp)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := dist.H1(zp); h1 != want {
		t.Errorf("h1 %s, dist.H1 says %s", h1, want)
	}
	if info.None != "" || info.File != "terraform-provider-x_v1.0.0" || info.GoVersion != runtime.Version() || info.Path == "" {
		t.Errorf("build information of the test binary: %+v", info)
	}
	// No plugin in the package.
	zp2 := filepath.Join(dir, "q.zip")
	f, _ = os.Create(zp2)
	zw = zip.NewWriter(f)
	w, _ := zw.Create("README")
	w.Write([]byte("x"))
	zw.Close()
	f.Close()
	if _, info, err := goinfo.ScanZip(zp2); err != nil || info.None != goinfo.NoneNoPlugin {
		t.Errorf("a package without a plugin: %+v %v", info, err)
	}
}

// Decode takes only the canonical form.
func TestDecodeCanonical(t *testing.T) {
	doc := goinfo.Encode(&goinfo.Info{GoVersion: "go1.22.5", Path: "x", Deps: []goinfo.Module{{Path: "a", Version: "v1.0.0"}}})
	if _, err := goinfo.Decode(doc); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		strings.Replace(string(doc), `{"format":1,`, `{ "format":1,`, 1),
		strings.Replace(string(doc), `"format":1`, `"format":2`, 1),
		strings.Replace(string(doc), `"path":"x"`, `"path":"x","extra":1`, 1),
		"null\n",
	} {
		if _, err := goinfo.Decode([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// FuzzScanner: any bytes, any chunking: no panic, the same result.
func FuzzScanner(f *testing.F) {
	f.Add(header("go1.22.5", modinfo("path\tx\nmod\tx\tv1.0.0\t"), 2), uint64(1))
	f.Add(at(16, header("go1.16", "", 0)), uint64(2))
	f.Add([]byte("\xff Go buildinf:\x08\x02"), uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		a, b := scan(data, seed), scan(data, seed+1)
		if !bytes.Equal(a, b) {
			t.Fatalf("chunking changed the result: %s vs %s", a, b)
		}
		if _, err := goinfo.Decode(a); err != nil {
			t.Fatalf("the result does not decode: %v", err)
		}
	})
}

// ShortPlugin is a plugin file whose build-information header announces a
// module string of MaxModInfo bytes and ends one byte short of it: a
// Scanner must hold the whole announced string until the file ends.
func shortPlugin() []byte {
	b := header("go1.22.5", "", 2)
	b = b[:len(b)-1] // the zero length
	b = binary.AppendUvarint(b, goinfo.MaxModInfo)
	return append(b, make([]byte, goinfo.MaxModInfo-1)...)
}

// TestScanZipManyPlugins: a package of many plugin files that each stop
// one byte short of the module string they announce. ScanZip held one
// Scanner per plugin until the package ended (1.6-1.8 GiB for 256); now
// it scans one at a time and reuses the Scanner: what it allocates for
// 48 such plugins is one MaxModInfo buffer and its growth, and it picks the
// first plugin, by name, with build information (the test binary, named
// last). A plugin of aligned fake headers before it ends its own search
// (MaxCandidates) without ending the next plugin's: the bound on refused
// headers is per plugin, as the Scanner is reset.
func TestScanZipManyPlugins(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	zp := filepath.Join(t.TempDir(), "many.zip")
	f, _ := os.Create(zp)
	zw := zip.NewWriter(f)
	short := shortPlugin()
	for i := range 48 {
		w, _ := zw.Create(fmt.Sprintf("terraform-provider-x_%03d", i))
		w.Write(short)
	}
	fake := header("go1.0", "", 2)
	fake[14] = 3 // a pointer size Go never writes: refused
	w, _ := zw.Create("terraform-provider-y")
	for range goinfo.MaxCandidates + 10 {
		w.Write(fake[:16])
		w.Write(make([]byte, 16))
	}
	w, _ = zw.Create("terraform-provider-z")
	b, _ := os.ReadFile(self)
	w.Write(b)
	zw.Close()
	f.Close()
	b = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, info, err := goinfo.ScanZip(zp)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if info.None != "" || info.File != "terraform-provider-z" {
		t.Errorf("picked %s (%s), want the build information of terraform-provider-z", info.File, info.None)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*goinfo.MaxModInfo {
		t.Errorf("scanning 48 short plugins allocated %d MiB; one Scanner's bound is %d MiB", alloc>>20, goinfo.MaxModInfo>>20)
	}

	// Only short plugins and the flood: why the first has none.
	zp2 := filepath.Join(t.TempDir(), "short.zip")
	f, _ = os.Create(zp2)
	zw = zip.NewWriter(f)
	for _, n := range []string{"terraform-provider-b", "terraform-provider-a"} {
		w, _ := zw.Create(n)
		w.Write(short)
	}
	w, _ = zw.Create("terraform-provider-0")
	for range goinfo.MaxCandidates + 10 {
		w.Write(fake[:16])
		w.Write(make([]byte, 16))
	}
	zw.Close()
	f.Close()
	if _, info, err := goinfo.ScanZip(zp2); err != nil || info.File != "terraform-provider-0" || info.None != goinfo.NoneTooMany {
		t.Errorf("two short plugins and a flood: %+v %v", info, err)
	}
}
