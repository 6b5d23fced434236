package tfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
)

func write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for n, c := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// positioned: an error that starts with file:line:col.
var positioned = regexp.MustCompile(`^[^:]+:\d+:\d+: `)

func TestMalformedLockFile(t *testing.T) {
	for name, body := range map[string]string{
		"version is a number":         "provider \"registry.terraform.io/hashicorp/null\" {\n  version = 1\n}\n",
		"version is null":             "provider \"registry.terraform.io/hashicorp/null\" {\n  version = null\n}\n",
		"version is a null string":    "provider \"registry.terraform.io/hashicorp/null\" {\n  version = true ? null : \"1\"\n}\n",
		"constraints is a list":       "provider \"registry.terraform.io/hashicorp/null\" {\n  constraints = [\"1\"]\n}\n",
		"hashes is a string":          "provider \"registry.terraform.io/hashicorp/null\" {\n  hashes = \"h1:x\"\n}\n",
		"hashes holds a number":       "provider \"registry.terraform.io/hashicorp/null\" {\n  hashes = [\"h1:x\", 2]\n}\n",
		"hashes holds null":           "provider \"registry.terraform.io/hashicorp/null\" {\n  hashes = [null]\n}\n",
		"hashes is an object":         "provider \"registry.terraform.io/hashicorp/null\" {\n  hashes = { a = \"b\" }\n}\n",
		"variable reference":          "provider \"registry.terraform.io/hashicorp/null\" {\n  version = var.x\n}\n",
		"function call":               "provider \"registry.terraform.io/hashicorp/null\" {\n  version = upper(\"x\")\n}\n",
		"unterminated block":          "provider \"registry.terraform.io/hashicorp/null\" {\n  version = \"1\"\n",
		"provider without an address": "provider {\n}\n",
		"nested block":                "provider \"x\" {\n  inner {}\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
			write(t, filepath.Dir(p), map[string]string{".terraform.lock.hcl": body})
			_, err := LoadLockFile(p)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrMalformed) || !positioned.MatchString(err.Error()) || !strings.HasPrefix(err.Error(), p+":") {
				t.Fatalf("error %q: want %v at %s:line:col", err, ErrMalformed, p)
			}
		})
	}
	// The real thing still reads.
	lock, err := ParseLockFile([]byte("provider \"registry.terraform.io/hashicorp/null\" {\n  version     = \"3.2.2\"\n  constraints = \"~> 3.2\"\n  hashes = [\n    \"h1:a\",\n    \"zh:b\",\n  ]\n}\n"), "l.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if lp := lock["registry.terraform.io/hashicorp/null"]; lp.Version != "3.2.2" || lp.Constraints != "~> 3.2" || len(lp.Hashes) != 2 {
		t.Fatalf("%+v", lock)
	}
}

func TestMalformedConfig(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"provider entry is null":        {"main.tf": "terraform {\n  required_providers {\n    aws = null\n  }\n}\n"},
		"provider entry is a null str":  {"main.tf": "terraform {\n  required_providers {\n    aws = true ? null : \"x\"\n  }\n}\n"},
		"provider source is a number":   {"main.tf": "terraform {\n  required_providers {\n    aws = { source = 1 }\n  }\n}\n"},
		"provider version is null":      {"main.tf": "terraform {\n  required_providers {\n    aws = { version = null }\n  }\n}\n"},
		"provider entry is a list":      {"main.tf": "terraform {\n  required_providers {\n    aws = [1]\n  }\n}\n"},
		"provider entry is a reference": {"main.tf": "terraform {\n  required_providers {\n    aws = var.x\n  }\n}\n"},
		"module without a name":         {"main.tf": "module {\n}\n"},
		"syntax":                        {"main.tf": "module \"x\" {\n  source = \n}\n"},
		"json syntax":                   {"main.tf.json": "{\"module\": {\"x\": {\"source\": }}}"},
		"json provider entry":           {"main.tf.json": "{\"terraform\": {\"required_providers\": {\"aws\": 3}}}"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, files)
			_, err := LoadTree(dir)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrMalformed) || !positioned.MatchString(err.Error()) || !strings.HasPrefix(err.Error(), dir+string(filepath.Separator)) {
				t.Fatalf("error %q: want %v at file:line:col", err, ErrMalformed)
			}
		})
	}
}

// Local module calls are followed only inside the project; symlinks do not
// lead out either. Inside a downloaded module's package, calls to siblings
// are fine.
func TestLocalCallsStayInside(t *testing.T) {
	outer := t.TempDir()
	write(t, outer, map[string]string{
		"outside/main.tf":          "terraform {\n  required_providers {\n    evil = { source = \"evil/evil\" }\n  }\n}\n",
		"project/main.tf":          "module \"ok\" {\n  source = \"./modules/ok\"\n}\n",
		"project/modules/ok/m.tf":  "module \"sib\" {\n  source = \"../sib\"\n}\n",
		"project/modules/sib/m.tf": "module \"self\" {\n  source = \"./\"\n}\nmodule \"loop\" {\n  source = \"./loop/loop\"\n}\n",
	})
	if err := os.Symlink(".", filepath.Join(outer, "project/modules/sib/loop")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTree(filepath.Join(outer, "project")); err != nil {
		t.Fatalf("a project that stays inside: %v", err)
	}
	for name, tc := range map[string]struct {
		files map[string]string
		link  [2]string // a symlink to plant in the project, if any
		want  string
	}{
		"dot-dot":           {files: map[string]string{"main.tf": "\n\nmodule \"x\" {\n  source = \"../../outside\"\n}\n"}, want: `main.tf:3: module "x": source "../../outside": outside the project or module package (`},
		"one level out":     {files: map[string]string{"main.tf": "module \"x\" {\n  source = \"../outside\"\n}\n"}, want: `main.tf:1: module "x": source "../outside": outside the project`},
		"nested":            {files: map[string]string{"main.tf": "module \"a\" {\n  source = \"./a\"\n}\n", "a/a.tf": "module \"b\" {\n  source = \"../../outside\"\n}\n"}, want: `a.tf:1: module "b": source "../../outside": outside the project`},
		"through a symlink": {files: map[string]string{"main.tf": "module \"x\" {\n  source = \"./vendored\"\n}\n"}, link: [2]string{"vendored", "../outside"}, want: `main.tf:1: module "x": source "./vendored": `},
		"a linked file":     {files: map[string]string{"main.tf": "# nothing\n"}, link: [2]string{"evil.tf", "../outside/main.tf"}, want: `evil.tf: outside the project or module package: a symlink leads out of`},
	} {
		t.Run(name, func(t *testing.T) {
			proj := filepath.Join(outer, strings.ReplaceAll(name, " ", "-"))
			write(t, proj, tc.files)
			if tc.link[0] != "" {
				if err := os.Symlink(tc.link[1], filepath.Join(proj, tc.link[0])); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := LoadTree(proj)
			if err == nil {
				t.Fatalf("followed: %+v", cfg)
			}
			if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "hint:") {
				t.Fatalf("error %q\nwant %v and %q", err, ErrOutside, tc.want)
			}
		})
	}
	// Inside a downloaded module's package, a call to a sibling is fine; out
	// of the package it is not.
	pkg := filepath.Join(outer, "project", "modules")
	if _, err := LoadTreeIn(pkg, filepath.Join(pkg, "ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTreeIn(filepath.Join(pkg, "ok"), filepath.Join(pkg, "ok")); !errors.Is(err, ErrOutside) {
		t.Fatalf("a call out of the package: %v", err)
	}
}

func FuzzLockFile(f *testing.F) {
	f.Add([]byte("provider \"registry.terraform.io/hashicorp/null\" {\n  version = \"3.2.2\"\n  constraints = \"~> 3.2\"\n  hashes = [\"h1:a\", \"zh:b\"]\n}\n"))
	f.Add([]byte("provider \"x\" {\n  version = 1\n  hashes = \"x\"\n}\n"))
	f.Add([]byte("provider \"x\" {\n  hashes = [1, null, true ? null : \"x\"]\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 64<<10 {
			return
		}
		_, err := ParseLockFile(src, "l.hcl")
		if err != nil && !strings.HasPrefix(err.Error(), "l.hcl:") {
			t.Fatalf("error without a position: %v", err)
		}
	})
}

func FuzzConfig(f *testing.F) {
	f.Add([]byte("terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \"~> 5.0\" }\n    old = \"1.0\"\n  }\n}\nmodule \"m\" {\n  source = \"./x\"\n  version = \"1\"\n}\n"), false)
	f.Add([]byte("terraform {\n  required_providers {\n    aws = true ? null : \"x\"\n  }\n}\n"), false)
	f.Add([]byte("{\"terraform\": {\"required_providers\": {\"aws\": {\"source\": \"a/b\"}}}, \"module\": {\"m\": {\"source\": \"../x\"}}}"), true)
	f.Fuzz(func(t *testing.T, src []byte, json bool) {
		if len(src) > 64<<10 {
			return
		}
		name := "c.tf"
		if json {
			name = "c.tf.json"
		}
		cfg, err := ParseConfig(src, name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		for _, p := range cfg.Providers {
			if p.Source == "" || !strings.HasPrefix(p.Pos, name+":") {
				t.Fatalf("provider %+v", p)
			}
		}
	})
}

// TestDeepConfig: HCL's parsers recurse once per level with no bound: a
// .tf.json of 4 MiB of '[', or a .tf of 4 MiB of '[', '!', 'a?a:' or
// '"${', overflowed the Go stack, killing the process. Now each is refused
// (dist.CheckHCLNesting; at 4 MiB, already by dist.CheckHCLTokens) and
// real nesting still parses.
func TestDeepConfig(t *testing.T) {
	full, n := MaxFileSize-100, 50_000
	for name, src := range map[string]string{
		"main.tf.json":   `{"locals":{"a":` + strings.Repeat("[", full) + `}}`,
		"brack.tf":       "locals {\n a = " + strings.Repeat("[", full) + "\n}\n",
		"n.main.tf.json": `{"locals":{"a":` + strings.Repeat("[", n) + `}}`,
		"n.brack.tf":     "locals {\n a = " + strings.Repeat("[", n) + "\n}\n",
		"bang.tf":        "locals {\n a = " + strings.Repeat("!", n) + "a\n}\n",
		"cond.tf":        "locals {\n a = " + strings.Repeat("a?a:", n) + "a\n}\n",
		"tmpl.tf":        "locals {\n a = \"" + strings.Repeat("${\"", n) + "\n}\n",
		"ifs.tf":         "locals {\n a = <<EOT\n" + strings.Repeat("%{if a}", n) + "\nEOT\n}\n",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, strings.TrimPrefix(name, "n.")), []byte(src), 0o644)
		_, err := LoadDir(dir)
		want := errors.Is(err, dist.ErrHCLTooDeep)
		if len(src) > MaxFileSize/2 {
			want = errors.Is(err, dist.ErrHCLTooManyTokens)
		}
		if !errors.Is(err, ErrTooLarge) || !want {
			t.Errorf("%s: %v", name, err)
		}
	}
	dir := t.TempDir()
	ok := "locals {\n  a = [for x in [1, 2] : x > 1 ? -x : !true ? 1 : 2]\n  b = { c = [[1], [2]], d = \"${var.x}-%{if true}y%{endif}\" }\n  e = a ? b : c\n  f = a ? b : c\n}\n"
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.Repeat(ok, 400)), 0o644)
	if _, err := LoadDir(dir); err != nil && strings.Contains(err.Error(), "nested") {
		t.Errorf("400 blocks of ordinary nesting refused: %v", err)
	}
}

// TestDenseJSONTemplates: a .tf.json's strings are templates to
// LoadProject (HCL's JSON syntax), parsed as such: one string of 1 MiB of
// "${a}" is a few JSON tokens but 800 Ki template tokens, which the
// parser would hold a kilobyte or so each of. LoadProject refuses the
// file; LoadTreeIn, which evaluates nothing, does not parse the strings.
func TestDenseJSONTemplates(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"main.tf.json": `{"locals": {"a": "` + strings.Repeat("${a}", 1<<18) + `"}}`})
	_, err := LoadProject(dir, Inputs{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "read as templates") || !strings.Contains(err.Error(), "\nhint: ") {
		t.Errorf("LoadProject: %v", err)
	}
	if _, err := LoadTreeIn(dir, dir); err != nil {
		t.Errorf("LoadTreeIn: %v", err)
	}
	write(t, dir, map[string]string{"main.tf.json": `{"locals": {"a": "` + strings.Repeat("${a}", 1<<10) + `"}}`})
	if _, err := LoadProject(dir, Inputs{}); err != nil {
		t.Errorf("LoadProject of a small template: %v", err)
	}
}
