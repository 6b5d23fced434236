package vendoring

import (
	"strings"
	"testing"
)

// The golden rewrite: only the source values change; comments, alignment,
// heredocs, other blocks and the JSON layout stay byte for byte.
func TestRewriteGolden(t *testing.T) {
	const tf = `# leading comment
module "net" {
  # about the source
  source  = "git::https://github.com/example/net.git//sub?ref=v1" # trailing
  version_note = <<-EOT
    source = "git::https://github.com/not/this"
  EOT
  count   =   1
}

module "keep" {
  source = "git::https://github.com/example/keep.git"
}

/* block comment */
module "app" {
  source = "github.com/example/shorthand//app"
}
`
	const tfWant = `# leading comment
module "net" {
  # about the source
  source  = "./.airgap/modules/aa/sub" # trailing
  version_note = <<-EOT
    source = "git::https://github.com/not/this"
  EOT
  count   =   1
}

module "keep" {
  source = "git::https://github.com/example/keep.git"
}

/* block comment */
module "app" {
  source = "../x/.airgap/modules/bb/app"
}
`
	got, err := rewrite([]byte(tf), "main.tf", map[string]string{"net": "./.airgap/modules/aa/sub", "app": "../x/.airgap/modules/bb/app"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != tfWant {
		t.Errorf("rewritten .tf:\n%s\nwant:\n%s", got, tfWant)
	}

	const js = `{
  "module": {
    "leaf":   {"source" : "https://archives.example.com/leaf.tar.gz",  "x": "\u0041"},
    "other": { "source": "https://archives.example.com/other.tar.gz" }
  },
  "output": {"o": {"value": "${module.leaf.v}"}}
}
`
	jsWant := strings.Replace(js, `"https://archives.example.com/leaf.tar.gz"`, `"./.airgap/modules/cc"`, 1)
	got, err = rewrite([]byte(js), "calls.tf.json", map[string]string{"leaf": "./.airgap/modules/cc"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != jsWant {
		t.Errorf("rewritten .tf.json:\n%s\nwant:\n%s", got, jsWant)
	}
	// The array form of blocks, two edits in one file.
	const arr = `{"module": [{"a": {"source": "git::https://h/a.git"}}, {"b": [{"source": "git::https://h/b.git"}]}]}`
	got, err = rewrite([]byte(arr), "x.tf.json", map[string]string{"a": "./A", "b": "./B"})
	if want := `{"module": [{"a": {"source": "./A"}}, {"b": [{"source": "./B"}]}]}`; err != nil || string(got) != want {
		t.Errorf("array form: %s %v", got, err)
	}
}

func TestRewriteRefuses(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"main.tf", `module "m" {`, "cannot rewrite"},
		{"main.tf", `module "m" { version = "1" }`, "has no source"},
		{"main.tf", `module "other" { source = "x" }`, "not found"},
		{"x.tf.json", `{"module": {"m": {"source": 3}}}`, "not a quoted string"},
		{"x.tf.json", `{"module": `, "cannot rewrite"},
	} {
		if _, err := rewrite([]byte(c.src), c.name, map[string]string{"m": "./x"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.name, c.src, err, c.want)
		}
	}
}

func FuzzRewrite(f *testing.F) {
	f.Add([]byte(`module "m" { source = "git::https://h/x.git" }`), false)
	f.Add([]byte(`{"module": {"m": {"source": "git::https://h/x.git"}}}`), true)
	f.Fuzz(func(t *testing.T, src []byte, json bool) {
		name := "f.tf"
		if json {
			name += ".json"
		}
		out, err := rewrite(src, name, map[string]string{"m": "./.airgap/modules/x"})
		if err != nil {
			return
		}
		// The result must still parse and carry the new source.
		if _, err := rewrite(out, name, map[string]string{"m": "./y"}); err != nil {
			t.Fatalf("rewritten file no longer rewritable: %v\n%q", err, out)
		}
	})
}
