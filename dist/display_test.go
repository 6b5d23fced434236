package dist

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"registry.terraform.io/hashicorp/aws": "registry.terraform.io/hashicorp/aws",
		"x\x1b]0;pwned\x07y":                  `x\x1b]0;pwned\x07y`,
		"\x1b[2J\x1b[H":                       `\x1b[2J\x1b[H`,
		"a\u202eexe.txt":                      `a\u202eexe.txt`,
		"\u2066iso\u2069":                     `\u2066iso\u2069`,
		"c1\u009bcsi":                         `c1\u009bcsi`,
		"del\x7f":                             `del\x7f`,
		"line\nbreak\r":                       `line\x0abreak\x0d`,
		"bad\xffutf8":                         `bad\xffutf8`,
		`back\slash ünïcödé 日本`:               `back\slash ünïcödé 日本`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := PrintableLines("error: \x1b[31mred\nhint: x\x07"); got != "error: \\x1b[31mred\nhint: x\\x07" {
		t.Errorf("PrintableLines: %q", got)
	}
}

// FuzzPrintable: the output never contains a rune Printable escapes, is
// valid UTF-8, and a string with nothing to escape is unchanged.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;pwned\x07", "\u202e", "\xc2\x9b", "\xff\xfe", "a\u2028b", "\x00\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Printable(%q) = %q: invalid UTF-8", s, out)
		}
		if i := strings.IndexFunc(out, needsEscape); i >= 0 {
			t.Fatalf("Printable(%q) = %q: rune %U at %d", s, out, []rune(out[i:])[0], i)
		}
		if strings.IndexFunc(s, needsEscape) < 0 && utf8.ValidString(s) && out != s {
			t.Fatalf("Printable(%q) = %q: a clean string changed", s, out)
		}
		lines := PrintableLines(s)
		if i := strings.IndexFunc(lines, func(r rune) bool { return r != '\n' && needsEscape(r) }); i >= 0 {
			t.Fatalf("PrintableLines(%q) = %q: control rune at %d", s, lines, i)
		}
	})
}

func TestRedactSource(t *testing.T) {
	for in, want := range map[string]string{
		"git::https://deploy:TOKEN@git.example/net.git//sub?ref=v1": "git::https://git.example/net.git//sub?ref=v1",
		"https://TOKEN@archives.example/x.tar.gz":                   "https://archives.example/x.tar.gz",
		"git::ssh://git:pw@git.example/net.git":                     "git::ssh://git@git.example/net.git",
		"git::ssh://git@git.example/net.git":                        "git::ssh://git@git.example/net.git",
		"git@github.com:a/b.git?ref=v1":                             "git@github.com:a/b.git?ref=v1",
		"git::https://git.example/a%2Fb.git?ref=a%2Fb":              "git::https://git.example/a%2Fb.git?ref=a%2Fb",
		"terraform-aws-modules/vpc/aws":                             "terraform-aws-modules/vpc/aws",
	} {
		if got := RedactSource(in); got != want {
			t.Errorf("RedactSource(%q) = %q, want %q", in, got, want)
		}
	}
}
