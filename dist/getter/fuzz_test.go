package getter

import (
	"strings"
	"testing"
)

func FuzzGetterParse(f *testing.F) {
	for _, s := range []string{
		"git::https://github.com/a/b?ref=v1", "git::https://h/x//sub?ref=v1", "github.com/a/b",
		"https://h/x.tar.gz//*", "https://h/x?archive=zip", "s3::https://s3/x.zip", "git@github.com:a/b.git?ref=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := Parse(s)
		if err != nil {
			return
		}
		if src.Kind != "git" && src.Kind != "http" {
			t.Fatalf("kind %q", src.Kind)
		}
		if strings.Contains(src.Subdir, "?") {
			t.Fatalf("subdir keeps the query: %q", src.Subdir)
		}
	})
}

func TestParseSources(t *testing.T) {
	cases := []struct{ in, kind, url, ref, sub string }{
		{"git::https://github.com/a/b?ref=v1.0.0", "git", "https://github.com/a/b", "v1.0.0", ""},
		{"git::https://github.com/a/mono//modules/x?ref=v2", "git", "https://github.com/a/mono", "v2", "modules/x"},
		{"github.com/hashicorp/example", "git", "https://github.com/hashicorp/example.git", "", ""},
		{"github.com/hashicorp/example//sub?ref=v1", "git", "https://github.com/hashicorp/example.git", "v1", "sub"},
		{"bitbucket.org/a/b//sub?ref=v1", "git", "https://bitbucket.org/a/b.git", "v1", "sub"},
		{"git::ssh://git@example.com/a/b.git?ref=main", "git", "ssh://git@example.com/a/b.git", "main", ""},
		{"git@github.com:a/b.git?ref=v3", "git", "git@github.com:a/b.git", "v3", ""},
		{"https://example.com/m.tar.gz//*", "http", "https://example.com/m.tar.gz", "", "*"},
		{"https://example.com/dl?archive=tar.gz", "http", "https://example.com/dl?archive=tar.gz", "", ""},
	}
	for _, c := range cases {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if s.Kind != c.kind || s.URL != c.url || s.Ref != c.ref || s.Subdir != c.sub {
			t.Errorf("%s: got %+v", c.in, s)
		}
	}
	for _, bad := range []string{"s3::https://b/x.zip", "gcs::https://x", "hg::https://x", "https://example.com/module", "./local"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
