package dist

import (
	"strings"
	"testing"
	_ "unsafe" // go:linkname, for hcl/json's scanner

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	_ "github.com/hashicorp/hcl/v2/json"
)

// hcl/json's scanner is not exported; the test reaches it to check that
// jsonTokens counts what it makes.
type jsonPos struct {
	Filename string
	Pos      hcl.Pos
}

type jsonToken struct {
	Type  rune
	Bytes []byte
	Range hcl.Range
}

//go:linkname jsonScan github.com/hashicorp/hcl/v2/json.scan
func jsonScan(buf []byte, start jsonPos) []jsonToken

// realTokens is the count of tokens HCL's own scanner makes of src.
func realTokens(src []byte, json bool) int {
	if json {
		return len(jsonScan(src, jsonPos{Filename: "x.json", Pos: hcl.InitialPos}))
	}
	toks, _ := hclsyntax.LexConfig(src, "x.tf", hcl.InitialPos)
	return len(toks)
}

var hclTokenSeeds = []string{
	"", "a", "a\n", "a = 1\n", "a = [1, 2, 3]\n", `a = "x${b}y"` + "\n", `a = "$${b}%%{c}$d%e\\"\\$"`,
	"a = <<EOT\nx ${b} y\n  EOT\nb = 1\n", "a = <<-EOT\r\n%{ if x }y%{ endif }\r\nEOT\r\n",
	"a = <<EOT\n$\nEOT\n", "a = <<EOT\nEOT$\nEOT\n", "a = <<EOTé\nx\nEOTé\n", "a = <<EOT\rx\nEOT\n",
	"# c\n// d\n/* e\n*/ f /* g", "x = {a = {b = \"${ {c = 1}.c }\"}}", "a = \"${\"${\"${x}\"}\"}\"",
	"a = 1.5e+3 0x1F 1e5e5x", "a-b = c-d", "a = \"\\\xff\" \"\\\n\"", "a = \"\xc3\x28\xed\xa0\x80\"", "a = \"x\"~}~}}}",
	"a = <<EOT\n${x}EOT\nEOT\n", "\xef\xbb\xbfa = 1", "a = ${b}", "<<\n", "<<-\n", "<<1\n", "<<A-\nA-\n",
	`{"a": [1, -2.5e3, true, null, "x\"y"], "b": {"c": "\u0600""}}`, `{"a": "x` + "\x01" + `"}`, `{"a": trueX_y}`, `{"a": é}`,
}

func FuzzHCLTemplateTokens(f *testing.F) {
	for _, s := range hclTokenSeeds {
		f.Add(s)
	}
	f.Add("x ${a} y %{ if b }c%{ else }d%{ endif } $${e} %%{f} $ % \r\n\r x\n")
	f.Add("${\"${\"a\"}\"}}}} <<EOT\nEOT\n")
	f.Fuzz(func(t *testing.T, s string) {
		toks, _ := hclsyntax.LexTemplate([]byte(s), "x.tf", hcl.InitialPos)
		if got := HCLTemplateTokens([]byte(s)); got < len(toks) {
			t.Fatalf("HCLTemplateTokens(%q) = %d, HCL's scanner makes %d", s, got, len(toks))
		}
	})
}

func FuzzHCLTokens(f *testing.F) {
	for _, s := range hclTokenSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, json bool) {
		name := "x.tf"
		if json {
			name = "x.tf.json"
		}
		got, want := HCLTokens([]byte(s), name), realTokens([]byte(s), json)
		if got < want || json && got != want {
			t.Fatalf("HCLTokens(%q, %s) = %d, HCL's scanner makes %d", s, name, got, want)
		}
	})
}

// nestSeeds are the shapes checkHCLNesting counts, nested and mixed.
var nestSeeds = []string{
	"a = [[[[1]]]]\n",
	"a = x ? y ? z : w : v\nb = p ? q : r\n",
	"a = (b ? c : d, e ? f : g)\n",
	"a = {\n  b = c ? d : e\n  f = g ? h : i\n}\n",
	"a = [b ? c : d\n, e ? f : g]\n",
	"a = !!!- -!x\nb = c != d\nc = 1e-5 - -2\n",
	"a = \"${\"${\"${x}\"}\"}\"\n",
	"a = \"%{ if a }%{ for x in y }${x}%{ endfor }%{ endif }\"\n",
	"a = \"%{~ if a ~}x%{~ endif ~}\"\n",
	"a = \"%{ if-x }%{ endif-x }%{ endif }\"\n",
	"a = <<EOT\n${[[[x]]]}\n%{ if a }b%{ endif }\nEOT\nb = <<-X\n  ${ {a = [1]} }\n  X\n",
	"a = [ # ]]]]\n  1, /* ))) */ 2 // }}}\n]\n",
	"a = \"\\\"((( $${x} %%{y}\"\n",
	"a = ((((((x))))))) ) ] }\nb = [[[\n",
	"a = \"${ {for k, v in x : k => v ? 1 : 2} }\"\n",
	"a = x ? {\n  b = y ? 1 : 2\n  c = 3\n} : null\n",
}

// FuzzHCLNestingBound: where HCLNestingBound follows a file, its bound is
// at least the depth checkHCLNesting measures on HCL's lexer's tokens
// (else a file the lexer would find too deep could reach the parser).
func FuzzHCLNestingBound(f *testing.F) {
	for _, s := range append(append([]string{}, hclTokenSeeds...), nestSeeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := HCLNestingBound([]byte(s))
		want, _, over := lexNestingDepth([]byte(s), "x.tf")
		if ok && (over || got < want) {
			t.Fatalf("HCLNestingBound(%q) = %d, the lexer's tokens nest %d (over the limit: %v)", s, got, want, over)
		}
	})
}

// TestHCLNestingBoundDeep: files nested over the limit are never let
// through by the bound (it gives up or passes the limit), and real shapes
// are bounded without the lexer.
func TestHCLNestingBoundDeep(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("[", 4<<10),
		"a = " + strings.Repeat("!", 1000) + "x\n",
		"a = " + strings.Repeat("a?a:", 600) + "a\n",
		"a = " + strings.Repeat("\"${", 600) + "\n",
		"a = \"" + strings.Repeat("%{ if a }", 600) + "\"\n",
	} {
		if d, ok := HCLNestingBound([]byte(s)); ok && d <= MaxHCLNesting {
			t.Errorf("%.40q…: bounded at %d, under the limit", s, d)
		}
		if err := checkHCLNesting([]byte(s), "x.tf"); err == nil {
			t.Errorf("%.40q…: let through", s)
		}
	}
	real := "resource \"a\" \"b\" {\n  count = var.c ? 1 : 0\n  tags  = merge(var.tags, { \"k\" = \"${var.n}-${count.index}\" })\n}\n"
	if d, ok := HCLNestingBound([]byte(strings.Repeat(real, 1000))); !ok || d > 8 {
		t.Errorf("a real shape: bound %d, followed %v", d, ok)
	}
}
