package ui

import (
	"path"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// Hostile markdown renders safely, within the stated time and memory:
// no script or event handler survives, javascript: and data: links are
// dropped, remote images are not loaded, and deep nesting, huge tables
// and long runs of brackets stay bounded (shown as source, or refused by
// size).
func TestRenderHostileMarkdown(t *testing.T) {
	keep := func(dest string, image bool) (string, bool) {
		if strings.HasPrefix(dest, "https://") && !image {
			return dest, true
		}
		return "", false
	}
	safe := func(t *testing.T, html string) {
		t.Helper()
		if bad := unsafeHTML(html); bad != "" {
			t.Fatalf("%s survived:\n%.2000s", bad, html)
		}
		low := strings.ToLower(html)
		for _, bad := range []string{"<script", "onerror", "onload", "javascript:", "data:", "<iframe", "evil.example", "<style", "onclick", "<img", "<form", "<meta", "<link", "<svg"} {
			if strings.Contains(low, bad) {
				t.Fatalf("%q survived:\n%.2000s", bad, html)
			}
		}
	}
	row := "| " + strings.Repeat("x | ", 9) + "x |\n"
	cases := []struct {
		name, src string
		asSource  bool // shown as source (a bound) rather than rendered
		refused   bool // over the size bound: not parsed
	}{
		{name: "script", src: "# t\n<script>alert(1)</script>\n\ntext <img src=x onerror=alert(1)> <a href=\"javascript:alert(1)\">j</a>\n"},
		{name: "links", src: "[a](javascript:alert(1)) [b](data:text/html;base64,PHNjcmlwdD4=) [c](JaVaScRiPt:alert(1)) ![r](https://evil.example/x.png) <https://ok.example/>\n"},
		{name: "html", src: "<div onclick=\"x()\" style=\"background:url(https://evil.example)\">d</div><iframe src=https://evil.example></iframe><svg><script>1</script></svg>\n"},
		{name: "raw images", src: "<img src=\"https://evil.example/t.png\" alt=\"t\"> <img src=\"//evil.example/u.png\"> <img src=x onerror=alert(1)> <IMG SRC=\"javascript:alert(1)\"> <img srcset=\"https://evil.example/s.png 2x\">\n"},
		// Sources that look like the docs' own files but leave them: a
		// browser resolves the dot segments (and their character
		// references) and would GET a package with the viewer's session.
		{name: "images outside the docs", src: "<img src=\"/ui/providers/h/n/t/1.0.0/docs/-/../../../../../../../blobs/sha256/" + strings.Repeat("ab", 32) + "/p.zip\"> " +
			"<img src=\"/ui/providers/h/n/t/1.0.0/docs/-/a/&#46;&#46;/&#46;&#46;/&#46;&#46;/&#46;&#46;/&#46;&#46;/&#46;&#46;/&#46;&#46;/healthz\"> " +
			"<img src=\"/ui/providers/../n/t/../docs/-/x.png\"> <img src=\"/ui/providers/h/n/t/1.0.0/docs/-/./x.png\">\n"},
		{name: "forms and styles", src: "<form action=https://evil.example><input name=p></form><style>body{background:url(https://evil.example)}</style><link rel=stylesheet href=https://evil.example/s.css><meta http-equiv=refresh content=\"0;url=https://evil.example\">\n"},
		{name: "quotes 10000 deep", src: strings.Repeat(">", 10_000) + " deep\n", asSource: true},
		{name: "lists 10000 deep", src: strings.Repeat("- ", 10_000) + "x\n", asSource: true},
		{name: "indented lists 1000 deep", src: func() string {
			var b strings.Builder
			for i := range 1000 {
				b.WriteString(strings.Repeat("  ", i) + "- x\n")
			}
			return b.String()
		}(), asSource: true},
		{name: "table 1 MiB", src: "| " + strings.Repeat("h | ", 9) + "h |\n|" + strings.Repeat("---|", 10) + "\n" + strings.Repeat(row, (1<<20-100)/len(row)), asSource: true},
		{name: "table 50 MiB", src: "| h |\n|---|\n" + strings.Repeat(row, 50<<20/len(row)), refused: true},
		{name: "brackets", src: strings.Repeat("[", 500_000) + strings.Repeat("](", 200_000), asSource: true},
		{name: "emphasis", src: strings.Repeat("*a **b ", 140_000), asSource: true},
		{name: "emphasis under the bound", src: strings.Repeat("*a **b ", 19_000)},
		{name: "brackets under the bound", src: strings.Repeat("[", 4_900) + strings.Repeat("](", 4_900)},
		{name: "table cells", src: "| h | i |\n|---|---|\n" + strings.Repeat("| x | y |\n", 19_000), asSource: true},
		{name: "tags", src: strings.Repeat("<b>", 59_000)},
		{name: "backticks", src: strings.Repeat("`a ``b ", 19_000)},
		{name: "references", src: strings.Repeat("[a]: https://x.example/\n", 4_000) + strings.Repeat("[a] ", 900)},
		{name: "quotes 32 deep", src: strings.Repeat("> ", 32) + "x\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			html, why := renderMarkdown([]byte(c.src), keep)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %v, %d MiB allocated, %d bytes out, %q", c.name, took, alloc>>20, len(html), why)
			safe(t, string(html))
			if c.refused != (why != "" && html == "") || c.asSource != (why != "" && html != "") {
				t.Fatalf("shown as source: %v, refused: %v (%q); want %v, %v", why != "" && html != "", why != "" && html == "", why, c.asSource, c.refused)
			}
			if took > time.Second || alloc > 200<<20 {
				t.Fatalf("took %v and allocated %d MiB: over the bound (1 s, 200 MiB)", took, alloc>>20)
			}
		})
	}
}

// FuzzRenderMarkdown: whatever the page, the HTML has no script, no event
// handler, no javascript: or data: URL and no image from elsewhere.
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{"# t\n<script>x</script>", "[a](javascript:x) ![i](https://e/x.png) <img src=x onerror=y>", "| a |\n|---|\n| b |", "> > > q", "<a href=\"data:text/html,x\">d</a>", "<img src=\"/ui/providers/h/n/t/1.0.0/docs/-/../../x\">"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, _ := renderMarkdown([]byte(src), func(dest string, image bool) (string, bool) {
			if image {
				return "/ui/providers/h/n/t/1.0.0/docs/-/x.png", true
			}
			return dest, true // the sanitizer alone must hold
		})
		if bad := unsafeHTML(string(out)); bad != "" {
			t.Fatalf("%s in %q", bad, out)
		}
	})
}

// unsafeHTML names the first thing in s, read as a browser would
// tokenize it, that could run script or load something from elsewhere.
func unsafeHTML(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "script", "style", "iframe", "object", "embed", "form", "svg", "math", "link", "meta", "base":
				return "element " + tok.Data
			}
			for _, a := range tok.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(a.Key, "on") || a.Key == "style" || a.Key == "srcset":
					return "attribute " + a.Key
				case (a.Key == "href" || a.Key == "src") && (strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") || strings.HasPrefix(v, "vbscript:")):
					return a.Key + "=" + a.Val
				case tok.Data == "img" && a.Key == "src" && (!strings.HasPrefix(a.Val, "/ui/providers/") || !strings.Contains(a.Val, "/docs/-/") || path.Clean(a.Val) != a.Val):
					return "image " + a.Val // from elsewhere, or resolving outside the docs
				}
			}
		}
	}
}
