package portable

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

func TestCheck(t *testing.T) {
	for _, bad := range []string{
		`modules\net\override.tf`, "a:b.tf", "evil.tf ", "evil.tf.", "dir./x.tf", "dir /x.tf",
		"CON", "con.tf", "Nul.tf.json", "aux .txt", "COM1.tf", "lpt9", "COM¹.tf", "conout$.tf",
		"OVERRI~1.TF", "main~12.tf", "a/b/x?.tf", "x*.tf", "x|y", `x"y`, "<x>",
	} {
		if err := Check(bad); !errors.Is(err, ErrName) {
			t.Errorf("Check(%q) = %v, want ErrName", bad, err)
		}
	}
	for _, good := range []string{
		"main.tf", "modules/net/main.tf", ".terraform-docs.yml", "console.tf", "com10.tf", "lpt.tf",
		"CONTRIBUTING.md", "a.b.c", "x~y.tf", "main.tf~", "über/straße.tf", ".airgap/modules/ab/x.tf",
		"file~name_long.tf",
	} {
		if err := Check(good); err != nil {
			t.Errorf("Check(%q) = %v, want nil", good, err)
		}
	}
}

func TestSetCollisions(t *testing.T) {
	cases := []struct {
		first, then string
		want        []string // in the error
	}{
		{"Modules/net/main.tf", "modules/net/override.tf", []string{`"Modules"`, `"modules"`, `(in "modules/net/override.tf")`, "case"}},
		{"main.tf", "MAIN.TF", []string{`"main.tf"`, `"MAIN.TF"`}},
		{"caf\u00e9.tf", "cafe\u0301.tf", []string{"normalization"}},
		{"stra\u00dfe.tf", "strasse.tf", []string{"case"}},
		{"kelvin.tf", "\u212aelvin.tf", []string{"kelvin.tf"}},
		{"a/B/c.tf", "a/b", []string{`"a/B"`, `"a/b"`}},
		// NTFS upcases "ı" (dotless i) to "I": one directory on Windows.
		{"modules/infra/main.tf", "modules/\u0131nfra/override.tf", []string{`"modules/infra"`, "\"modules/\u0131nfra\"", "case"}},
		{"\u13cc.tf", "\uab9c.tf", []string{"case"}}, // Cherokee, which x/text's folding swaps
	}
	for _, tc := range cases {
		s := NewSet()
		if err := s.Add(tc.first); err != nil {
			t.Fatalf("Add(%q): %v", tc.first, err)
		}
		err := s.Add(tc.then)
		if !errors.Is(err, ErrName) {
			t.Errorf("%q after %q: %v, want a collision", tc.then, tc.first, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q after %q: %q lacks %s", tc.then, tc.first, err, w)
			}
		}
	}
	s := NewSet()
	for _, n := range []string{"a", "a/b", "a/b/c.tf", "a/b/d.tf", "a/b/c.tf", "b/a", "x/A", "y/a"} {
		if err := s.Add(n); err != nil {
			t.Errorf("Add(%q): %v", n, err)
		}
	}
	if err := s.Add("A/b"); err == nil {
		t.Error(`"A/b" after "a" was accepted`)
	}
	if err := s.Add(strings.Repeat("x", MaxComponent+1)); !errors.Is(err, ErrName) {
		t.Errorf("an over-long component: %v", err)
	}
}

// Every rune is the same name as its simple upper, lower and title case
// (what NTFS's upcase table and every case-insensitive file system join),
// except U+0130 (İ), whose NFD is "I" and a combining dot: no file
// system takes that for "i".
func TestKeyJoinsSimpleCases(t *testing.T) {
	n := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		for _, o := range []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)} {
			if o != r && r != 0x130 && !Equal(string(r), string(o)) {
				if n++; n < 10 {
					t.Errorf("%U %q and %U %q are one name on a case-insensitive file system; Key: %q, %q", r, r, o, o, Key(string(r)), Key(string(o)))
				}
			}
		}
	}
	if n > 0 {
		t.Errorf("%d pairs in all", n)
	}
}

func TestEqual(t *testing.T) {
	if !Equal(".AIRGAP", ".airgap") || !Equal(".air\u212aap", ".airkap") || Equal(".airgap", ".airgapx") {
		t.Error("Equal")
	}
}

func FuzzSet(f *testing.F) {
	f.Add("Modules/net/main.tf", "modules/net/override.tf")
	f.Add("caf\u00e9", "cafe\u0301")
	f.Fuzz(func(t *testing.T, a, b string) {
		s := NewSet()
		if s.Add(a) != nil {
			return
		}
		err := s.Add(b)
		// Names whose components are pairwise equal under Key and not
		// identical must collide; identical names never do.
		if a == b && err != nil {
			t.Fatalf("the same name twice: %v", err)
		}
	})
}
