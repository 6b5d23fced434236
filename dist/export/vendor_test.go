package export_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/dist/vendoring"
	"github.com/airgap/airgap/verify"
)

func vendorWorld(t *testing.T) *registrytest.Internet {
	in := registrytest.World(t)
	in.AddVendorModules(t)
	gitEnv(t, in)
	return in
}

func exportModule(t *testing.T, in *registrytest.Internet, module string, edit func(*export.Request)) (*export.Result, error) {
	t.Helper()
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nmodule \""+module+"\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(req)
	}
	return export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
}

func moduleVersion(t *testing.T, res *export.Result, name string) dist.ModuleVersion {
	t.Helper()
	for _, m := range res.Manifest.Catalog.Modules {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("module %s not exported", name)
	return dist.ModuleVersion{}
}

// tarFiles reads a module archive into name -> content.
func tarFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[strings.TrimPrefix(h.Name, "./")] = string(b)
	}
}

func TestExportVendors(t *testing.T) {
	in := vendorWorld(t)
	res, err := exportModule(t, in, "example/wrap/aws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %v", res.Warnings)
	}
	wrap := moduleVersion(t, res, "wrap")
	// The registry call inside the vendored shorthand module is followed.
	moduleVersion(t, res, "subnet")
	files := tarFiles(t, res.Files[wrap.Archive])
	byFile := map[string]dist.VendoredCall{}
	digests := map[verify.Digest]bool{}
	for _, c := range wrap.Vendored {
		t.Logf("%s:%d %s %q -> %s (%s)", c.File, c.Line, c.Module, c.Source, c.Path, c.Digest.Short())
		byFile[c.File+" "+c.Module] = c
		digests[c.Digest] = true
	}
	if len(wrap.Vendored) != 4 || len(digests) != 3 {
		t.Fatalf("want 4 rewrites of 3 packages (the leaf archive vendored once), got %+v", wrap.Vendored)
	}
	net := byFile["main.tf net"]
	if net.Line != 4 || net.Source != "git::https://github.com/example/net.git//sub?ref=v1" || net.Commit == "" ||
		net.Path != "./.airgap/modules/"+net.Digest.Hex()+"/sub" {
		t.Errorf("net rewrite: %+v", net)
	}
	// Golden: only the source values changed.
	app := byFile["main.tf app"]
	want := strings.Replace(registrytest.VendorWrapMain, `"git::https://github.com/example/net.git//sub?ref=v1"`, `"`+net.Path+`"`, 1)
	want = strings.Replace(want, `"github.com/example/shorthand//app"`, `"`+app.Path+`"`, 1)
	if files["main.tf"] != want {
		t.Errorf("main.tf in the archive:\n%s\nwant:\n%s", files["main.tf"], want)
	}
	direct := byFile["calls.tf.json direct"]
	if wantJSON := strings.Replace(registrytest.VendorWrapJSON, `"https://archives.example.com/leaf-1.0.0.tar.gz"`, `"`+direct.Path+`"`, 1); files["calls.tf.json"] != wantJSON {
		t.Errorf("calls.tf.json in the archive:\n%s\nwant:\n%s", files["calls.tf.json"], wantJSON)
	}
	// The nested call inside the vendored package points at the one copy
	// of the leaf, relative to its own directory, inside the archive.
	lib := "/.airgap/modules/" + app.Digest.Hex() + "/lib/main.tf"
	leaf := byFile[lib[1:]+" leaf"]
	if leaf.Digest != direct.Digest || leaf.Path != "../../"+direct.Digest.Hex() {
		t.Errorf("nested rewrite: %+v (direct %+v)", leaf, direct)
	}
	if !strings.Contains(files[lib[1:]], `source = "`+leaf.Path+`"`) || !strings.Contains(files[".airgap/modules/"+app.Digest.Hex()+"/app/main.tf"], `source = "../lib"`) {
		t.Errorf("vendored lib/main.tf:\n%s", files[lib[1:]])
	}
	if files[".airgap/modules/"+direct.Digest.Hex()+"/main.tf"] == "" || files[".airgap/modules/"+net.Digest.Hex()+"/README.md"] != "net\n" {
		t.Errorf("vendored packages missing or incomplete: %v", keys(files))
	}

	// Deterministic: another cache, the same bytes.
	again, err := exportModule(t, in, "example/wrap/aws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w2 := moduleVersion(t, again, "wrap"); w2.Archive != wrap.Archive || w2.Zip != wrap.Zip {
		t.Errorf("a second export made another archive: %s/%s vs %s/%s", w2.Archive, w2.Zip, wrap.Archive, wrap.Zip)
	}

	// --no-vendor: the archive as published, today's warnings.
	plain, err := exportModule(t, in, "example/wrap/aws", func(r *export.Request) { r.NoVendor = true })
	if err != nil {
		t.Fatal(err)
	}
	if pw := moduleVersion(t, plain, "wrap"); pw.Vendored != nil || pw.Archive == wrap.Archive || len(plain.Warnings) != 3 {
		t.Errorf("--no-vendor: %+v, warnings %v", pw, plain.Warnings)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestExportVendorRefuses(t *testing.T) {
	in := vendorWorld(t)
	_, err := exportModule(t, in, "example/bad/aws", nil)
	if err == nil {
		t.Fatal("export vendored sources that cannot be vendored")
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{`main.tf:4: module "bucket"`, "s3:: sources cannot be fetched", `main.tf:8: module "computed": the source is not a literal string but an expression ("git::https://github.com/example/${var.where}.git")`,
		`main.tf:12: module "gone": fetching git::https://github.com/example/does-not-exist.git`, "hint:", "--allow-unvendored"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q", want)
		}
	}
	res, err := exportModule(t, in, "example/bad/aws", func(r *export.Request) { r.AllowUnvendored = true })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 3 || !strings.Contains(res.Warnings[0], "main.tf:4") || moduleVersion(t, res, "bad").Vendored != nil {
		t.Errorf("--allow-unvendored: warnings %v", res.Warnings)
	}
	// A cycle ends at the package already vendored.
	res, err = exportModule(t, in, "example/cycle/aws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := moduleVersion(t, res, "cycle").Vendored; len(v) != 3 {
		t.Errorf("cycle: %+v", v)
	}
}

// Bounds: a chain of nested sources deeper than MaxDepth, and a module
// calling more than MaxPackages packages, are refused with a hint.
func TestExportVendorBounds(t *testing.T) {
	in := vendorWorld(t)
	next := ""
	for i := vendoring.MaxDepth + 1; i >= 0; i-- {
		body := "output \"x\" {\n  value = 1\n}\n"
		if next != "" {
			body = "module \"next\" {\n  source = \"" + next + "\"\n}\n"
		}
		next = in.AddArchive(t, fmt.Sprintf("chain-%d.tar.gz", i), map[string]string{"main.tf": body})
	}
	in.AddModule("registry.terraform.io", "example", "chain", "aws", "1.0.0", next)
	var many strings.Builder
	for i := 0; i <= vendoring.MaxPackages; i++ {
		u := in.AddArchive(t, fmt.Sprintf("many-%d.tar.gz", i), map[string]string{"main.tf": fmt.Sprintf("output \"x\" {\n  value = %d\n}\n", i)})
		fmt.Fprintf(&many, "module \"m%d\" {\n  source = %q\n}\n", i, u)
	}
	in.AddModule("registry.terraform.io", "example", "many", "aws", "1.0.0", in.AddArchive(t, "many.tar.gz", map[string]string{"main.tf": many.String()}))
	for mod, want := range map[string]string{"example/chain/aws": "more than 8 levels", "example/many/aws": "more than 64 packages"} {
		_, err := exportModule(t, in, mod, nil)
		if err == nil || !errors.Is(err, vendoring.ErrTooDeep) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "hint:") {
			t.Errorf("%s: %v", mod, err)
		}
	}
}
