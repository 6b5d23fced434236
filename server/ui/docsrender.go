package ui

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"

	"github.com/airgap/airgap/dist"
)

// Bounds on rendering one page of documentation (a provider's page or a
// module's README), which comes from a bundle: untrusted. A page larger
// than maxRenderSource is not read at all; one over preScan's bounds
// (nesting, indentation, counts of brackets, table pipes, emphasis marks,
// angle brackets and backticks: the inputs goldmark's parsers are
// superlinear on) is shown as its escaped source in a <pre> without
// being parsed; a parsed page whose tree has more than maxRenderNodes
// nodes, nests deeper than maxRenderDepth or has more than maxRenderCells
// table cells is shown as source too. Measured worst cases just under the
// bounds (TestRenderHostileMarkdown, 2-core machine): about 300 ms and
// 40 MiB allocated per page; 10,000-deep nesting and a 50 MiB table are
// refused in microseconds. docsRenders pages render at once (docsUI), so
// serve's worst case is twice that, and rendered pages are cached.
const (
	maxRenderSource = 1 << 20
	maxRenderNodes  = 100_000
	maxRenderDepth  = 64
	maxRenderCells  = 20_000
)

// docsMarkdown parses and renders markdown: CommonMark with GitHub's
// tables, strikethrough, autolinks and task lists, headings with ids, raw
// HTML passed through to the sanitizer (docsPolicy), never to the page.
var docsMarkdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	goldmark.WithRendererOptions(html.WithUnsafe()),
)

// reDocsAsset: the only image sources a page may keep, the appliance's own
// docs files (pageLinks makes them). No segment may be "." or "..": a
// browser resolves them (and their character references, which the
// sanitizer decodes before it matches; '%' is not allowed at all), so
// /ui/providers/…/docs/-/../../../../blobs/sha256/HEX/x.zip would load any
// GET of this appliance, a provider package for one, with the viewer's
// session: a hostile page could make each viewer download packages (and
// count them as used).
var reDocsAsset = regexp.MustCompile(`^/ui/providers/[A-Za-z0-9][A-Za-z0-9._:-]*/[A-Za-z0-9_-]+/[A-Za-z0-9-]+/[A-Za-z0-9][A-Za-z0-9.+-]*/docs/-(?:/(?:[A-Za-z0-9_-]|\.[A-Za-z0-9_-]|\.\.[A-Za-z0-9._-])[A-Za-z0-9._-]*)+$`)

// docsPolicy sanitizes rendered markdown. It is bluemonday's policy for
// user content narrowed: the structural and text elements of documents
// (headings, paragraphs, lists, tables, code, quotes, details) and no
// other (no script, style, iframe, form, object, svg, math); no event
// handler or style attribute; links only with href to http, https, mailto
// or relative URLs (which linkFor made), with rel="nofollow noreferrer";
// images only with a src among this appliance's docs files (an image
// without one is removed, so a remote image never loads); ids on
// headings, a language class on code, task-list checkboxes.
var docsPolicy = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowStandardAttributes()
	p.AllowElements("article", "aside", "details", "summary", "section", "h1", "h2", "h3", "h4", "h5", "h6", "hgroup",
		"p", "br", "hr", "div", "span", "blockquote", "pre", "code", "kbd", "samp", "var", "b", "i", "u", "s", "strike",
		"del", "ins", "em", "strong", "small", "sub", "sup", "mark", "abbr", "cite", "dfn", "q", "time", "figure", "figcaption", "caption")
	p.AllowLists()
	p.AllowTables()
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("name").Matching(regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)).OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AllowAttrs("src").Matching(reDocsAsset).OnElements("img")
	p.AllowAttrs("alt", "title").OnElements("img")
	p.AllowAttrs("id").Matching(regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)).OnElements("h1", "h2", "h3", "h4", "h5", "h6")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[A-Za-z0-9_+-]{1,32}$`)).OnElements("code")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^(|checked|disabled)$`)).OnElements("input")
	return p
}()

// reImgNoSrc is an image the policy left without a source (its src was
// not one of the docs' files): removed, alt text and all.
var reImgNoSrc = regexp.MustCompile(`<img(?: (?:alt|title)="[^"]*")*/?>`)

// linkFunc resolves a link or image destination of a page: the URL to put
// in its place, or ok false to drop it (the link's text stays; an image
// becomes its alt text).
type linkFunc func(dest string, image bool) (url string, ok bool)

// renderMarkdown renders src (a page's body) to sanitized HTML within the
// bounds above; links and images go through link. The second result is
// why the page was shown as source instead ("" when rendered).
func renderMarkdown(src []byte, link linkFunc) (template.HTML, string) {
	if len(src) > maxRenderSource {
		return "", "the page is " + dist.HumanSize(int64(len(src))) + ", over the " + dist.HumanSize(maxRenderSource) + " this appliance renders"
	}
	asSource := func(why string) (template.HTML, string) {
		return template.HTML("<pre tabindex=\"0\">" + template.HTMLEscapeString(strings.ToValidUTF8(string(src), "\uFFFD")) + "</pre>"), why
	}
	if why := preScan(src); why != "" {
		return asSource(why)
	}
	doc := docsMarkdown.Parser().Parse(text.NewReader(src))
	if why := tooComplex(doc); why != "" {
		return asSource(why)
	}
	rewriteLinks(doc, src, link)
	var b bytes.Buffer
	if err := docsMarkdown.Renderer().Render(&b, src, doc); err != nil {
		return "", "it could not be rendered"
	}
	return template.HTML(reImgNoSrc.ReplaceAll(docsPolicy.SanitizeBytes(b.Bytes()), nil)), ""
}

// Bounds preScan holds a page to before goldmark parses it: goldmark's
// block parser is quadratic in the nesting of containers (a list 1,000
// deep by indentation took 5.6 s), and its inline parser slow on runs of
// unmatched brackets and emphasis delimiters; real pages (AWS's largest)
// nest a few levels and hold a few hundred brackets.
const (
	maxPreNesting   = 32    // block quote and list markers opening one line
	maxPreIndent    = 128   // columns of indentation of one line
	maxPreBrackets  = 5000  // '[' in the page
	maxPrePipes     = 60000 // '|' in the page (table cells)
	maxPreEmphasis  = 60000 // '*' and '_' in the page
	maxPreAngles    = 60000 // '<' in the page (raw HTML, autolinks)
	maxPreBackticks = 60000
)

// preScan reads src once and says which bound it is over, or "".
func preScan(src []byte) string {
	counts := [256]int{}
	for _, c := range src {
		counts[c]++
	}
	switch {
	case counts['['] > maxPreBrackets:
		return "the page has more than " + dist.Thousands(maxPreBrackets) + " brackets"
	case counts['|'] > maxPrePipes:
		return "the page has more than " + dist.Thousands(maxPrePipes) + " table cell marks"
	case counts['*']+counts['_'] > maxPreEmphasis:
		return "the page has more than " + dist.Thousands(maxPreEmphasis) + " emphasis marks"
	case counts['<'] > maxPreAngles:
		return "the page has more than " + dist.Thousands(maxPreAngles) + " angle brackets"
	case counts['`'] > maxPreBackticks:
		return "the page has more than " + dist.Thousands(maxPreBackticks) + " backticks"
	}
	for line := range bytes.SplitSeq(src, []byte{'\n'}) {
		depth, col, i := 0, 0, 0
		for i < len(line) {
			switch c := line[i]; {
			case c == ' ':
				col++
				i++
				continue
			case c == '\t':
				col += 4
				i++
				continue
			case c == '>':
				depth++
				i++
				continue
			case (c == '-' || c == '*' || c == '+') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t'):
				depth++
				i += 2
				continue
			case c >= '0' && c <= '9':
				j := i
				for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
					j++
				}
				if j+1 < len(line) && (line[j] == '.' || line[j] == ')') && line[j+1] == ' ' {
					depth++
					i = j + 2
					continue
				}
			}
			break
		}
		if depth > maxPreNesting {
			return "the page nests more than " + dist.Thousands(maxPreNesting) + " levels deep"
		}
		if col > maxPreIndent {
			return "the page is indented more than " + dist.Thousands(maxPreIndent) + " columns"
		}
	}
	return ""
}

// tooComplex walks the tree once, iteratively, and says which bound it is
// over, or "".
func tooComplex(doc ast.Node) string {
	nodes, cells := 0, 0
	type item struct {
		n     ast.Node
		depth int
	}
	stack := []item{{doc, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if nodes++; nodes > maxRenderNodes {
			return "the page has more than " + dist.Thousands(maxRenderNodes) + " elements"
		}
		if it.depth > maxRenderDepth {
			return "the page nests more than " + dist.Thousands(maxRenderDepth) + " levels deep"
		}
		if it.n.Kind() == east.KindTableCell {
			if cells++; cells > maxRenderCells {
				return "the page's tables have more than " + dist.Thousands(maxRenderCells) + " cells"
			}
		}
		for c := it.n.FirstChild(); c != nil; c = c.NextSibling() {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return ""
}

// rewriteLinks sends every link and image destination through link,
// unwrapping links it drops and turning images it drops into their alt
// text. Raw HTML is left to docsPolicy.
func rewriteLinks(doc ast.Node, src []byte, link linkFunc) {
	var links, images []ast.Node
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.Link, *ast.AutoLink:
			links = append(links, n)
		case *ast.Image:
			images = append(images, n)
		}
		return ast.WalkContinue, nil
	})
	for _, n := range links {
		switch l := n.(type) {
		case *ast.Link:
			if u, ok := link(string(l.Destination), false); ok {
				l.Destination = []byte(u)
				continue
			}
			unwrap(l)
		case *ast.AutoLink:
			if _, ok := link(string(l.URL(src)), false); !ok {
				parent := l.Parent()
				parent.ReplaceChild(parent, l, ast.NewString(l.Label(src)))
			}
		}
	}
	for _, n := range images {
		img := n.(*ast.Image)
		if u, ok := link(string(img.Destination), true); ok {
			img.Destination = []byte(u)
			continue
		}
		alt := "image"
		if t := strings.TrimSpace(string(nodeText(img, src))); t != "" {
			alt = t
		}
		parent := img.Parent()
		parent.ReplaceChild(parent, img, ast.NewString([]byte("[image not shown: "+alt+"]")))
	}
}

// nodeText is the text under n.
func nodeText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}

// unwrap replaces n by its children.
func unwrap(n ast.Node) {
	parent := n.Parent()
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		parent.InsertBefore(parent, n, c)
		c = next
	}
	parent.RemoveChild(parent, n)
}
