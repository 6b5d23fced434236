package vendoring

import (
	"runtime"
	"strings"
	"testing"
)

// MaxCalls sources in one 8 MiB file (tfconfig.MaxFileSize) are rewritten
// in one pass: the allocations stay a small multiple of the file, not one
// copy of it per source.
func TestRewriteLargeFileOnePass(t *testing.T) {
	var b strings.Builder
	srcs := map[string]string{}
	for i := range MaxCalls {
		b.WriteString("module \"m" + itoa(i) + "\" {\n  source = \"git::https://h.example/x.git\"\n}\n")
		srcs["m"+itoa(i)] = "./.airgap/modules/" + strings.Repeat("0", 64) + "/sub"
	}
	src := []byte(b.String() + strings.Repeat("# "+strings.Repeat("x", 100)+"\n", (8<<20-b.Len())/103))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := rewrite(src, "a.tf", srcs)
	runtime.ReadMemStats(&after)
	if err != nil || strings.Count(string(out), "./.airgap/modules/") != MaxCalls {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32*uint64(len(src)) {
		t.Errorf("rewriting %d sources in %d bytes allocated %d MiB", MaxCalls, len(src), alloc>>20)
	}
}

// Odd shapes a hostile author can write: only the module's own source
// value changes, whatever surrounds it.
func TestRewriteOddShapes(t *testing.T) {
	const p = "./.airgap/modules/aa/s"
	for _, c := range []struct{ name, src, want string }{
		{"a.tf", "module \"x\" {\r\n  source = \"git::https://h/x\" # c\r\n}\r\n", "module \"x\" {\r\n  source = \"" + p + "\" # c\r\n}\r\n"},
		{"a.tf", "module \"x\" {\n  source = \"git::https://h/x\"\n  dynamic \"y\" {\n    source = \"git::https://h/x\"\n  }\n}\nresource \"r\" \"x\" {\n  source = \"git::https://h/x\"\n}\n",
			"module \"x\" {\n  source = \"" + p + "\"\n  dynamic \"y\" {\n    source = \"git::https://h/x\"\n  }\n}\nresource \"r\" \"x\" {\n  source = \"git::https://h/x\"\n}\n"},
		{"a.tf", "module \"x\" {\n  source = \"a\" == \"b\" ? \"git::https://h/y\" : \"git::https://h/x\"\n}\n", "module \"x\" {\n  source = \"" + p + "\"\n}\n"},
		{"a.tf.json", `{"//": {"module": {"x": {"source": "git::https://h/x"}}}, "module": [{"x": {"//": "source", "source": "git::https:\/\/h\/x"}}]}`,
			`{"//": {"module": {"x": {"source": "git::https://h/x"}}}, "module": [{"x": {"//": "source", "source": "` + p + `"}}]}`},
	} {
		got, err := rewrite([]byte(c.src), c.name, map[string]string{"x": p})
		if err != nil || string(got) != c.want {
			t.Errorf("%q:\n%q\nwant\n%q (%v)", c.src, got, c.want, err)
		}
	}
	// A name with ${ and %{ is escaped in .tf (the caller refuses such
	// subdirectories before; this is the second wall).
	got, err := rewrite([]byte("module \"x\" {\n  source = \"git::https://h/x\"\n}\n"), "a.tf", map[string]string{"x": "./${a}%{b}"})
	if err != nil || !strings.Contains(string(got), `"./$${a}%%{b}"`) {
		t.Errorf("%s %v", got, err)
	}
	// Heredoc, parenthesized, duplicate source: refused, nothing written.
	for _, src := range []string{
		"module \"x\" {\n  source = <<EOT\ngit::https://h/x\nEOT\n}\n",
		"module \"x\" {\n  source = (\"git::https://h/x\")\n}\n",
		"module \"x\" {\n  source = \"a\"\n  source = \"b\"\n}\n",
	} {
		if out, err := rewrite([]byte(src), "a.tf", map[string]string{"x": p}); err == nil {
			t.Errorf("%q rewritten to %q", src, out)
		}
	}
	if out, err := rewrite([]byte(`{"module": {"x": {"source": "a", "source": "b"}}}`), "a.tf.json", map[string]string{"x": p}); err == nil {
		t.Errorf("duplicate JSON source rewritten to %q", out)
	}
}
