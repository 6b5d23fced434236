package vendoring

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/tfconfig"
)

// Attacks by a hostile module author on Vendor (the module and every
// package it calls are untrusted): the packages are served by a stand-in
// fetcher that normalizes a tree of files, as getter.Fetch does.

// writeTree writes name -> content under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// packages serves packages by URL (without subdir); unknown URLs fail.
// It counts fetches.
type packages struct {
	t       *testing.T
	trees   map[string]map[string]string
	fetches int
}

func (p *packages) fetch(ctx context.Context, src *getter.Source) (*getter.Result, func(), error) {
	p.fetches++
	files, ok := p.trees[src.URL]
	if !ok {
		return nil, nil, errors.New("fetching " + src.URL + ": 404")
	}
	dir := p.t.TempDir()
	writeTree(p.t, filepath.Join(dir, "t"), files)
	out := filepath.Join(dir, "p.tar.gz")
	if err := getter.NormalizeToFile(ctx, filepath.Join(dir, "t"), out); err != nil {
		return nil, nil, err
	}
	return &getter.Result{Archive: out}, nil, nil
}

func vendorTree(t *testing.T, root map[string]string, pk *packages, allow bool) (string, *Result, error) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, root)
	pk.t = t
	res, err := Vendor(context.Background(), dir, "", getter.NewBudget(), Options{Fetch: pk.fetch, Allow: allow})
	return dir, res, err
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two subdirectories of one package both call a shared local module that
// calls a remote one (terraform-aws-modules style): the shared file is
// rewritten once, recorded once, and the export does not fail on reading
// its own rewrite back as a call that leaves the package.
func TestVendorSharedLocalModuleInPackage(t *testing.T) {
	pk := &packages{trees: map[string]map[string]string{
		"https://h.example/p.git": {
			"a/main.tf":      "module \"c\" {\n  source = \"../common\"\n}\n",
			"b/main.tf":      "module \"c\" {\n  source = \"../common\"\n}\n",
			"common/main.tf": "module \"q\" {\n  source = \"git::https://h.example/q.git\"\n}\n",
		},
		"https://h.example/q.git": {"main.tf": "output \"x\" {\n  value = 1\n}\n"},
	}}
	dir, res, err := vendorTree(t, map[string]string{"main.tf": "module \"a\" {\n  source = \"git::https://h.example/p.git//a\"\n}\n\nmodule \"b\" {\n  source = \"git::https://h.example/p.git//b\"\n}\n"}, pk, false)
	if err != nil {
		t.Fatalf("vendoring a package whose two subdirectories share a local module: %v", err)
	}
	n := 0
	for _, c := range res.Calls {
		if strings.HasSuffix(c.File, "common/main.tf") {
			n++
			if !strings.HasPrefix(c.Path, "../../") {
				t.Errorf("shared call rewritten to %q", c.Path)
			}
		}
	}
	if n != 1 || len(res.Calls) != 3 {
		t.Errorf("records: %+v", res.Calls)
	}
	var pdir string
	for _, c := range res.Calls {
		if c.Module == "a" {
			pdir = path.Dir(strings.TrimPrefix(c.Path, "./"))
		}
	}
	if got := readFile(t, dir, pdir+"/common/main.tf"); !strings.Contains(got, "source = \"../../") || strings.Count(got, "source") != 1 {
		t.Errorf("shared file:\n%s", got)
	}
}

// A module with thousands of calls to distinct sources that all fail
// (a dead or slow host each) makes at most MaxPackages fetches.
func TestVendorFailingFetchesBounded(t *testing.T) {
	var b strings.Builder
	for i := range 3 * MaxPackages {
		b.WriteString("module \"m" + itoa(i) + "\" {\n  source = \"git::https://h.example/dead" + itoa(i) + ".git\"\n}\n")
	}
	pk := &packages{trees: map[string]map[string]string{}}
	_, _, err := vendorTree(t, map[string]string{"main.tf": b.String()}, pk, true)
	if pk.fetches > MaxPackages {
		t.Fatalf("%d fetches for one module (bound %d): %v", pk.fetches, MaxPackages, err)
	}
	if err == nil {
		t.Fatalf("no error after %d failed fetches", pk.fetches)
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

// A subdirectory named like a template: terraform reads a .tf.json source
// literally, OpenTofu as a template (checked with tofu 1.11: a source
// "./m%{if true}x%{endif}" installs ./mx), so the rewrite would send tofu
// to another directory than the one vendored and reviewed. Refused, as
// is a .tf.json source containing ${ or %{.
func TestVendorTemplateSubdirRefused(t *testing.T) {
	pk := &packages{trees: map[string]map[string]string{
		"https://h.example/p.git": {
			"%{if true}..%{endif}/x/main.tf": "output \"o\" {\n  value = 1\n}\n",
			"x/main.tf":                      "output \"o\" {\n  value = 2\n}\n",
		},
	}}
	for name, root := range map[string]map[string]string{
		"subdir in .tf.json": {"main.tf.json": `{"module": {"a": {"source": "git::https://h.example/p.git//%{if true}..%{endif}/x"}}}`},
		"subdir in .tf":      {"main.tf": "module \"a\" {\n  source = \"git::https://h.example/p.git//%%{if true}..%%{endif}/x\"\n}\n"},
		"ref in .tf.json":    {"main.tf.json": `{"module": {"a": {"source": "git::https://h.example/p.git//x?ref=${x}"}}}`},
	} {
		dir, _, err := vendorTree(t, root, pk, false)
		if !errors.Is(err, ErrUnvendorable) || !strings.Contains(err.Error(), "OpenTofu") {
			t.Errorf("%s: %v", name, err)
		}
		for n, c := range root {
			if got := readFile(t, dir, n); got != c {
				t.Errorf("%s: rewritten to %q", name, got)
			}
		}
	}
}

// .AIRGAP is .airgap on macOS and Windows: its files would land in the
// vendored copy there. Refused like .airgap, before anything is fetched.
func TestVendorReservedFolderAnyCase(t *testing.T) {
	for _, name := range []string{".AIRGAP", ".AirGap"} {
		pk := &packages{trees: map[string]map[string]string{"https://h.example/p.git": {"main.tf": "\n"}}}
		_, _, err := vendorTree(t, map[string]string{
			"main.tf":                    "module \"a\" {\n  source = \"git::https://h.example/p.git\"\n}\n",
			name + "/modules/x/extra.tf": "\n",
		}, pk, false)
		if !errors.Is(err, ErrReserved) || pk.fetches != 0 || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v (%d fetches)", name, err, pk.fetches)
		}
	}
}

// A package with many subdirectories, each called once and each calling
// one shared local module: the shared module is parsed once, not once per
// call, and all configuration read is bounded (MaxConfigBytes). Before,
// each visit re-read it: MaxCalls visits of a 64 MiB local module
// (41 s and GiBs each to parse) kept an export busy for hours.
func TestVendorSharedLocalModuleReadOnce(t *testing.T) {
	const n = 40
	files := map[string]string{"common/big.tf": strings.Repeat("locals {\n  a = [1, 2, 3]\n}\n", 4000)}
	var root strings.Builder
	for i := range n {
		files["d"+itoa(i)+"/main.tf"] = "module \"c\" {\n  source = \"../common\"\n}\n"
		root.WriteString("module \"d" + itoa(i) + "\" {\n  source = \"git::https://h.example/p.git//d" + itoa(i) + "\"\n}\n")
	}
	pk := &packages{trees: map[string]map[string]string{"https://h.example/p.git": files}}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": root.String()})
	pk.t = t
	res, err := Vendor(context.Background(), dir, "", getter.NewBudget(), Options{Fetch: pk.fetch})
	if err != nil || len(res.Calls) != n {
		t.Fatalf("%v %d", err, len(res.Calls))
	}
	// The same, one directory over the bound: refused.
	big := map[string]string{}
	for i := range MaxConfigBytes/tfconfig.MaxFileSize + 1 {
		big["d"+itoa(i)+"/main.tf"] = "# " + strings.Repeat("x", tfconfig.MaxFileSize-10) + "\n"
	}
	pk2 := &packages{trees: map[string]map[string]string{"https://h.example/big.git": big}}
	var calls strings.Builder
	for i := range len(big) {
		calls.WriteString("module \"d" + itoa(i) + "\" {\n  source = \"git::https://h.example/big.git//d" + itoa(i) + "\"\n}\n")
	}
	if _, _, err := vendorTree(t, map[string]string{"main.tf": calls.String()}, pk2, false); err == nil || !strings.Contains(err.Error(), "bytes of configuration") {
		t.Fatalf("more than MaxConfigBytes of configuration: %v", err)
	}
}

// getter.Parse lets escapes and bidi overrides through in a //subdir;
// they would be recorded in the manifest and printed by inventory.
func TestVendorControlCharsInSubdirRefused(t *testing.T) {
	pk := &packages{trees: map[string]map[string]string{"https://h.example/p.git": {"x/main.tf": "\n"}}}
	for _, sub := range []string{`\u001b[2Jx`, `\u202ex`} {
		_, _, err := vendorTree(t, map[string]string{"main.tf": "module \"a\" {\n  source = \"git::https://h.example/p.git//" + sub + "\"\n}\n"}, pk, false)
		if !errors.Is(err, ErrUnvendorable) || !strings.Contains(err.Error(), "control or format") || strings.ContainsAny(err.Error(), "\x1b\u202e") {
			t.Errorf("%s: %v", sub, err)
		}
	}
}

// OpenTofu reads main.tofu instead of main.tf: a call written only there
// would be neither vendored nor recorded, and tofu would fetch it offline
// (or use a path into .airgap that terraform and reviewers never see).
func TestVendorTofuFilesListed(t *testing.T) {
	pk := &packages{trees: map[string]map[string]string{"https://h.example/p.git": {"main.tf": "\n"}}}
	root := map[string]string{
		"main.tf":   "module \"a\" {\n  source = \"git::https://h.example/p.git\"\n}\n",
		"main.tofu": "module \"a\" {\n  source = \"git::https://evil.example/p.git\"\n}\n",
	}
	if _, _, err := vendorTree(t, root, pk, false); !errors.Is(err, ErrUnvendorable) || !strings.Contains(err.Error(), "main.tofu: OpenTofu-only") {
		t.Fatalf("a module with main.tofu: %v", err)
	}
	if _, res, err := vendorTree(t, root, pk, true); err != nil || len(res.Warnings) != 1 || len(res.Calls) != 1 {
		t.Fatalf("with Allow: %v %+v", err, res)
	}
}

// A cycle (p calls q calls p) and a diamond (1,000 calls of one package
// from many places) fetch each package once and unpack it once.
func TestVendorCycleAndDiamondFetchOnce(t *testing.T) {
	var fan strings.Builder
	for i := range 500 {
		fan.WriteString("module \"q" + itoa(i) + "\" {\n  source = \"git::https://h.example/q.git\"\n}\n")
	}
	pk := &packages{trees: map[string]map[string]string{
		"https://h.example/p.git": {"main.tf": fan.String(), "x/main.tf": fan.String()},
		"https://h.example/q.git": {"main.tf": "module \"p\" {\n  source = \"git::https://h.example/p.git\"\n}\nmodule \"x\" {\n  source = \"git::https://h.example/p.git//x\"\n}\n"},
	}}
	dir, res, err := vendorTree(t, map[string]string{"main.tf": "module \"p\" {\n  source = \"git::https://h.example/p.git\"\n}\n"}, pk, false)
	if err != nil || pk.fetches != 2 || len(res.Calls) != 1003 {
		t.Fatalf("%v: %d fetches, %d calls", err, pk.fetches, len(res.Calls))
	}
	ents, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(Dir)))
	if len(ents) != 2 {
		t.Fatalf("%d packages vendored", len(ents))
	}
}

// A module name with an escape (an HCL label may hold one; terraform
// refuses it) is never recorded: import would refuse the record.
func TestVendorModuleNameNotIdentifier(t *testing.T) {
	pk := &packages{trees: map[string]map[string]string{"https://h.example/p.git": {"main.tf": "\n"}}}
	_, _, err := vendorTree(t, map[string]string{"main.tf": "module \"a\\u001b[2J\" {\n  source = \"git::https://h.example/p.git\"\n}\n"}, pk, false)
	if !errors.Is(err, ErrUnvendorable) || !strings.Contains(err.Error(), "not a valid identifier") || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("%v", err)
	}
}

// A vendored package's own local calls stay inside it: "../<digest>" into
// a sibling vendored package, or up out of the archive, is refused (the
// client refuses such a path when it fetches the package online, too).
func TestVendorLocalCallsStayInPackage(t *testing.T) {
	q := map[string]string{"main.tf": "output \"o\" {\n  value = 1\n}\n"}
	pk := &packages{trees: map[string]map[string]string{"https://h.example/q.git": q}}
	_, res, err := vendorTree(t, map[string]string{"main.tf": "module \"q\" {\n  source = \"git::https://h.example/q.git\"\n}\n"}, pk, false)
	if err != nil {
		t.Fatal(err)
	}
	qdir := path.Base(res.Calls[0].Path)
	for _, up := range []string{"../" + qdir, "../../../x", "./a/../../" + qdir} {
		pk := &packages{trees: map[string]map[string]string{
			"https://h.example/q.git": q,
			"https://h.example/p.git": {"main.tf": "module \"up\" {\n  source = \"" + up + "\"\n}\n", "a/main.tf": "\n"},
		}}
		_, _, err := vendorTree(t, map[string]string{"main.tf": "module \"q\" {\n  source = \"git::https://h.example/q.git\"\n}\nmodule \"p\" {\n  source = \"git::https://h.example/p.git\"\n}\n"}, pk, true)
		if err == nil || !strings.Contains(err.Error(), "outside the project or module package") {
			t.Errorf("%s: %v", up, err)
		}
	}
}

// The module's subdirectory (from the registry) must be inside the tree.
func TestVendorSubdirOutsideTree(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"t/main.tf": "\n", "secret/main.tf": "module \"x\" {\n  source = \"git::https://h.example/x.git\"\n}\n"})
	pk := &packages{t: t}
	_, err := Vendor(context.Background(), filepath.Join(dir, "t"), "../secret", getter.NewBudget(), Options{Fetch: pk.fetch})
	if err == nil || !strings.Contains(err.Error(), "outside") || pk.fetches != 0 {
		t.Fatalf("%v (%d fetches)", err, pk.fetches)
	}
}
