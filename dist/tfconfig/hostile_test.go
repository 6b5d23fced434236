package tfconfig

// Hostile downloaded modules: regression tests from the security review of
// local-call containment (issue 11).

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A downloaded module's file names and module sources reach error messages
// escaped: the file name in file:line:col, and the path of a missing local
// call, keep no raw control character.
func TestHostileConfigControlCharsInErrors(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"file name":    {"main.tf": "module \"a\" {\n  source = \"./a\"\n}\n", "a/\x1b]0;owned\x07\x1b[2J.tf": "module {\n"},
		"local source": {"main.tf": "module \"a\" {\n  source = \"./\\u001b]0;owned\\u0007\\u001b[2J\"\n}\n"},
	} {
		t.Run(name, func(t *testing.T) {
			pkg := t.TempDir()
			write(t, pkg, files)
			_, err := LoadTreeIn(pkg, pkg)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.ContainsAny(err.Error(), "\x1b\x07") {
				t.Errorf("the error carries raw control characters: %q", err.Error())
			}
			if !strings.Contains(err.Error(), `\x1b`) {
				t.Errorf("the error does not show the escaped name: %q", err.Error())
			}
		})
	}
}

// Refused: ways out of a package — "..' after a symlinked directory
// (resolved lexically, as Terraform does, so it stays inside or is refused),
// links to absolute paths, a subdirectory that is itself a link out,
// Windows-style and absolute sources (not treated as local).
func TestHostileLocalCallsOut(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		links [][2]string
	}{
		"dotdot after a link": {files: map[string]string{"main.tf": "module \"a\" {\n  source = \"./l/../../outside\"\n}\n"},
			links: [][2]string{{"l", "sub/deep"}}},
		"link to absolute dir": {files: map[string]string{"main.tf": "module \"a\" {\n  source = \"./l\"\n}\n"},
			links: [][2]string{{"l", "OUTSIDE"}}},
		"nested link out": {files: map[string]string{"main.tf": "module \"a\" {\n  source = \"./sub/deep/x\"\n}\n"},
			links: [][2]string{{"sub/deep/x", "../../.."}}},
		"link in the middle": {files: map[string]string{"main.tf": "module \"a\" {\n  source = \"./l/pkg\"\n}\n"},
			links: [][2]string{{"l", "../.."}}},
	} {
		t.Run(name, func(t *testing.T) {
			outer := t.TempDir()
			write(t, outer, map[string]string{"outside/main.tf": "terraform {\n  required_providers {\n    evil = { source = \"evil/evil\" }\n  }\n}\n"})
			pkg := filepath.Join(outer, "pkg")
			write(t, pkg, tc.files)
			os.MkdirAll(filepath.Join(pkg, "sub", "deep"), 0o755)
			for _, l := range tc.links {
				target := strings.ReplaceAll(l[1], "OUTSIDE", filepath.Join(outer, "outside"))
				if err := os.Symlink(target, filepath.Join(pkg, l[0])); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := LoadTreeIn(pkg, pkg)
			if err == nil {
				for _, p := range cfg.Providers {
					if p.Source == "evil/evil" {
						t.Fatalf("read a configuration outside the package")
					}
				}
				t.Fatalf("no error: %+v", cfg)
			}
			if !errors.Is(err, ErrOutside) {
				t.Logf("refused, not as ErrOutside: %v", err)
			}
		})
	}
	// Sources Terraform would treat as local on Windows, and absolute paths:
	// not followed (they become non-local calls, which export only warns about).
	pkg := t.TempDir()
	write(t, pkg, map[string]string{"main.tf": "module \"a\" {\n  source = \"..\\\\..\\\\x\"\n}\nmodule \"b\" {\n  source = \"/etc\"\n}\nmodule \"c\" {\n  source = \".\\\\x\"\n}\n"})
	cfg, err := LoadTreeIn(pkg, pkg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Modules) != 3 {
		t.Fatalf("%+v", cfg.Modules)
	}
}

// forBomb is a for expression over literals, n deep: 20^n strings of 8
// bytes from a few hundred bytes of text (n = 6: 64 million, ~10 GiB).
func forBomb(n int) string {
	e := `"xxxxxxxx"`
	for i := 0; i < n; i++ {
		e = "[for x in [" + strings.Repeat("0,", 19) + "0] : " + e + "]"
	}
	return e
}

// Every value airgap reads as a literal — a module's source and version,
// required_providers, a variable's const, sensitive and default, a tfvars
// file, the lock file — used to be evaluated by HCL as written, and a for
// expression over literals needs no variable: nested ones in a downloaded
// module's required_providers made export build every element (20^5: 16 s
// and 530 MiB; 20^6: gigabytes). Now a for expression in them is refused
// (or, in a module source, is not a literal), at its position, before
// anything is evaluated.
func TestHostileForExpressionBombs(t *testing.T) {
	bomb := forBomb(4)
	for name, tc := range map[string]struct {
		files   map[string]string
		project bool
		want    string
	}{
		"required_providers": {files: map[string]string{"main.tf": "terraform {\n  required_providers {\n    x = { source = \"hashicorp/x\", version = " + bomb + " }\n  }\n}\n"},
			want: "main.tf:3:"},
		"variable default": {files: map[string]string{"main.tf": "variable \"v\" {\n  const = true\n  default = " + bomb + "\n}\nmodule \"m\" {\n  source = var.v\n}\n"}, project: true,
			want: "main.tf:3:"},
		"tfvars": {files: map[string]string{"main.tf": "variable \"v\" {\n  const = true\n}\nmodule \"m\" {\n  source = var.v\n}\n", "terraform.tfvars": "v = " + bomb + "\n"}, project: true,
			want: "terraform.tfvars:1:"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tc.files)
			start := time.Now()
			var err error
			if tc.project {
				_, err = LoadProject(dir, Inputs{})
			} else {
				_, err = LoadTreeIn(dir, dir)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "for expression not evaluated") {
				t.Errorf("error %v, want %q and the for expression refused", err, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	t.Run("module source", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{"main.tf": "module \"m\" {\n  source = " + bomb + "\n  version = " + bomb + "\n}\n"})
		cfg, err := LoadTreeIn(dir, dir)
		if err != nil {
			t.Fatal(err)
		}
		if m := cfg.Modules[0]; m.Source != "" || m.SourceExpr == "" || m.Version != "" || m.VersionExpr == "" {
			t.Errorf("a for expression read as a literal: %+v", m)
		}
	})
	t.Run("tfvars, a variable no source uses", func(t *testing.T) {
		// Terraform reads such a value (it evaluates a for expression over
		// literals); airgap refuses it only where it needs it.
		dir := t.TempDir()
		write(t, dir, map[string]string{"main.tf": "variable \"v\" {\n  const = true\n}\nmodule \"m\" {\n  source = \"x/${var.v}/aws\"\n}\n",
			"terraform.tfvars": "v = \"net\"\nother = " + bomb + "\n"})
		cfg, err := LoadProject(dir, Inputs{})
		if err != nil || cfg.Modules[0].Source != "x/net/aws" {
			t.Errorf("%v %+v", err, cfg)
		}
	})
	t.Run("lock file", func(t *testing.T) {
		_, err := ParseLockFile([]byte("provider \"registry.terraform.io/hashicorp/x\" {\n  version = \"1.0.0\"\n  hashes = "+bomb+"\n}\n"), ".terraform.lock.hcl")
		if err == nil || !strings.Contains(err.Error(), "for expression not evaluated") {
			t.Errorf("error %v", err)
		}
	})
}

// A project's files can be named pipes (mkfifo needs no privilege): reading
// main.tf, terraform.tfvars or the lock file used to wait for a writer for
// ever. They are refused as not regular files, at once; and the lock file
// is read within the project, like the configuration.
func TestHostileNamedPipes(t *testing.T) {
	for _, name := range []string{"other.tf", "terraform.tfvars", ".terraform.lock.hcl"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"main.tf": "variable \"v\" {\n  const = true\n  default = \"./m\"\n}\nmodule \"m\" {\n  source = var.v\n}\n", "m/main.tf": "# m\n"})
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := LoadProject(dir, Inputs{})
				if err == nil {
					_, err = LoadLockFile(filepath.Join(dir, ".terraform.lock.hcl"))
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file: it is a named pipe") || !strings.Contains(err.Error(), name) {
					t.Errorf("error %v, want %v naming %s", err, ErrNotRegular, name)
				}
			case <-time.After(5 * time.Second):
				os.WriteFile(filepath.Join(dir, name), nil, 0o644) // let the reader go
				t.Fatal("reading the project waits on a named pipe")
			}
		})
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{"main.tf": "# m\n"})
	outside := filepath.Join(t.TempDir(), "lock.hcl")
	write(t, filepath.Dir(outside), map[string]string{"lock.hcl": "provider \"registry.terraform.io/hashicorp/x\" {\n  version = \"1.0.0\"\n}\n"})
	os.Symlink(outside, filepath.Join(dir, ".terraform.lock.hcl"))
	if _, err := LoadLockFile(filepath.Join(dir, ".terraform.lock.hcl")); err == nil {
		t.Errorf("a lock file linked from outside the project was read")
	}
}
