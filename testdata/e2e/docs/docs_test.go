package docs

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// The documentation test. The README and docs/*.md are parsed as GitHub
// renders them (goldmark with GitHub's extensions); the convention for
// runnable blocks is documented in docs/architecture.md, "Runnable
// documentation".

// docPage is one Markdown page of the documentation.
type docPage struct {
	path    string // relative to the repository, with slashes
	src     []byte
	title   string          // the first heading
	lead    string          // the first paragraph after it
	anchors map[string]bool // the heading ids GitHub makes
	links   []docLink
	blocks  []docBlock
}

// docLink is a link's destination and the line it is on.
type docLink struct {
	dest string
	line int
}

// docBlock is a fenced code block: its info string and what the
// convention makes of it.
type docBlock struct {
	line      int // of the opening fence
	info      string
	run       bool   // ```sh run
	connected bool   // ```sh run connected: with the stand-in internet
	file      string // file=PATH: written to PATH
	text      string
}

// docPages reads README.md and every page in docs/.
func docPages(t *testing.T) []*docPage {
	t.Helper()
	paths, _ := fs.Glob(os.DirFS(harness.Root()), "docs/*.md")
	slices.Sort(paths)
	paths = append([]string{"README.md"}, paths...)
	var pages []*docPage
	for _, p := range paths {
		src, err := os.ReadFile(filepath.Join(harness.Root(), p))
		if err != nil {
			t.Fatal(err)
		}
		page, err := parseDocPage(filepath.ToSlash(p), src)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		pages = append(pages, page)
	}
	return pages
}

// parseDocPage reads a page's headings (as anchors), links and fenced
// blocks.
func parseDocPage(path string, src []byte) (*docPage, error) {
	p := &docPage{path: path, src: src, anchors: map[string]bool{}}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(text.NewReader(src))
	seen := map[string]int{}
	var walkErr error
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			title := plainText(n, src)
			if p.title == "" {
				p.title = title
			}
			p.anchors[githubAnchor(title, seen)] = true
		case *ast.Paragraph:
			if p.lead == "" && p.title != "" && n.Parent() == doc {
				p.lead = plainText(n, src)
			}
		case *ast.Link:
			p.links = append(p.links, docLink{string(n.Destination), lineOf(src, firstOffset(n))})
		case *ast.Image:
			p.links = append(p.links, docLink{string(n.Destination), lineOf(src, firstOffset(n))})
		case *ast.FencedCodeBlock:
			b, err := fencedBlock(n, src)
			if err != nil {
				walkErr = fmt.Errorf("line %d: %w", b.line, err)
				return ast.WalkStop, nil
			}
			p.blocks = append(p.blocks, b)
		}
		return ast.WalkContinue, nil
	})
	return p, walkErr
}

// fencedBlock reads a fenced block's info string by the convention:
// "sh run", "sh run connected", and file=PATH after the language.
func fencedBlock(n *ast.FencedCodeBlock, src []byte) (docBlock, error) {
	b := docBlock{}
	if n.Info != nil {
		b.info = string(n.Info.Segment.Value(src))
		b.line = lineOf(src, n.Info.Segment.Start)
	}
	var body strings.Builder
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		if b.line == 0 {
			b.line = lineOf(src, seg.Start) - 1
		}
		body.Write(seg.Value(src))
	}
	b.text = body.String()
	words := strings.Fields(b.info)
	for i, w := range words {
		switch {
		case i == 0:
		case w == "run" && i == 1 && words[0] == "sh":
			b.run = true
		case w == "connected" && b.run:
			b.connected = true
		case strings.HasPrefix(w, "file="):
			b.file = strings.TrimPrefix(w, "file=")
			if b.file == "" || filepath.IsAbs(b.file) || slices.Contains(strings.Split(b.file, "/"), "..") {
				return b, fmt.Errorf("%q: file= takes a path inside the page's work directory", b.info)
			}
		default:
			return b, fmt.Errorf("info string %q: %q is not part of the convention (sh run [connected], LANG file=PATH; see docs/architecture.md)", b.info, w)
		}
	}
	return b, nil
}

// plainText is a node's text as GitHub renders it: code spans' contents
// included, emphasis and link syntax left out.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.RawHTML:
		default:
			b.WriteString(plainText(c, src))
		}
	}
	return b.String()
}

// githubAnchor is the id GitHub gives a heading with this text (as its
// github-slugger does): lower case; letters, digits, marks, '-' and '_'
// kept, each space a '-', everything else left out; a repeated id gets
// -1, -2, … in the order of the page.
func githubAnchor(title string, seen map[string]int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	base := b.String()
	id := base
	for {
		if _, taken := seen[id]; !taken {
			break
		}
		seen[base]++
		id = fmt.Sprintf("%s-%d", base, seen[base])
	}
	seen[id] = 0
	return id
}

// firstOffset is the source offset of a node's first text, for its line.
func firstOffset(n ast.Node) int {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			return t.Segment.Start
		}
		if o := firstOffset(c); o >= 0 {
			return o
		}
	}
	return -1
}

func lineOf(src []byte, off int) int {
	if off < 0 {
		return 0
	}
	return strings.Count(string(src[:min(off, len(src))]), "\n") + 1
}

// TestDocLinks: every relative link in README.md and docs/*.md leads to a
// file of the repository, and every #anchor to a heading of its page, as
// GitHub makes heading ids. Every page in docs/ opens, under its title,
// with one line saying whom it is for, and docs/README.md lists it.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	pages := docPages(t)
	byPath := map[string]*docPage{}
	for _, p := range pages {
		byPath[p.path] = p
	}
	for _, p := range pages {
		for _, l := range p.links {
			if err := checkDocLink(p, l.dest, byPath); err != nil {
				t.Errorf("%s:%d: link %q: %v", p.path, l.line, l.dest, err)
			}
		}
	}
	index := byPath["docs/README.md"]
	if index == nil {
		t.Fatal("docs/README.md (the index of the pages) is missing")
	}
	for _, p := range pages {
		if !strings.HasPrefix(p.path, "docs/") || p == index {
			continue
		}
		if !strings.HasPrefix(p.lead, "For ") {
			t.Errorf("%s: the line under the title says %q; a page opens with whom it is for (*For …*)", p.path, p.lead)
		}
		if !slices.ContainsFunc(index.links, func(l docLink) bool { return l.dest == strings.TrimPrefix(p.path, "docs/") }) {
			t.Errorf("docs/README.md does not list %s", p.path)
		}
	}
}

// checkDocLink checks one link of page p.
func checkDocLink(p *docPage, dest string, byPath map[string]*docPage) error {
	u, err := url.Parse(dest)
	if err != nil {
		return err
	}
	if u.Scheme != "" || u.Host != "" {
		return nil // an address on the internet: not reachable from here
	}
	target := p
	if u.Path != "" {
		rel := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.path), u.Path)))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return errors.New("leads out of the repository")
		}
		if _, err := os.Stat(filepath.Join(harness.Root(), rel)); err != nil {
			return fmt.Errorf("no such file in the repository (%s)", rel)
		}
		target = byPath[rel]
	}
	if u.Fragment == "" {
		return nil
	}
	if target == nil {
		return fmt.Errorf("an anchor into %s, which is not a page of the documentation", u.Path)
	}
	if !target.anchors[u.Fragment] {
		return fmt.Errorf("%s has no heading with the id %q", target.path, u.Fragment)
	}
	return nil
}

// TestDocs runs every runnable block of README.md and docs/*.md (see
// docs/architecture.md, "Runnable documentation") against the stand-in
// internet of 'make demo' with the built binary, page by page, and fails
// on the first block of a page that exits non-zero. What a page left
// running in the background is stopped with it, and must be gone.
func TestDocs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is required: the runnable blocks are bash (apt-get install -y bash)")
	}
	var runnable []*docPage
	for _, p := range docPages(t) {
		if slices.ContainsFunc(p.blocks, func(b docBlock) bool { return b.run }) {
			runnable = append(runnable, p)
		}
	}
	if len(runnable) == 0 {
		t.Fatal("no runnable blocks in README.md or docs/")
	}
	work := t.TempDir()
	demo := harness.StartDemo(t, work)
	binDir := filepath.Join(work, "bin")
	os.MkdirAll(binDir, 0o755)
	if err := os.Symlink(harness.Bin, filepath.Join(binDir, "airgap")); err != nil {
		t.Fatal(err)
	}
	internet := harness.ReadEnvFile(t, filepath.Join(demo.Dir, "internet.env"))
	for _, p := range runnable {
		t.Run(p.path, func(t *testing.T) { runDocPage(t, bash, p, demo, binDir, internet) })
	}
}

// runDocPage runs a page's blocks in order in a work directory of its own.
func runDocPage(t *testing.T, bash string, p *docPage, demo *harness.RunningDemo, binDir string, internet []string) {
	dir, home := t.TempDir(), t.TempDir()
	if err := os.Symlink(demo.Dir, filepath.Join(dir, "demo")); err != nil {
		t.Fatal(err)
	}
	ports := strings.NewReplacer("8443", fmt.Sprint(harness.FreePort(t)), "8444", fmt.Sprint(harness.FreePort(t)))
	env := append(harness.BaseEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+home,
		"AIRGAP_PASSPHRASE=docs-test-passphrase",
		// the offline side: nothing reaches beyond loopback
		"HTTPS_PROXY=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9",
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1")
	for _, b := range p.blocks {
		if b.file != "" {
			path := filepath.Join(dir, filepath.FromSlash(b.file))
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(ports.Replace(b.text)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if !b.run {
			continue
		}
		blockEnv := env
		if b.connected {
			blockEnv = append(slices.Clip(env), internet...)
		}
		out, err := runDocBlock(t, bash, dir, blockEnv, ports.Replace(b.text))
		if err != nil {
			t.Fatalf("%s:%d: the block failed (%v):\n%s--- its output:\n%s", p.path, b.line, err, b.text, out)
		}
	}
}

// runDocBlock runs one block in a new bash of its own process group, with
// its output in a file (a process it leaves in the background keeps the
// file, not a pipe the test would wait on), within 5 minutes. The group is
// stopped (SIGTERM, then SIGKILL) when the page's test ends, and must be
// gone within 30 s.
func runDocBlock(t *testing.T, bash, dir string, env []string, script string) (string, error) {
	outPath := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bash, "-c", "set -euo pipefail\n"+script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { stopGroup(t, pgid) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		syscall.Kill(-pgid, syscall.SIGKILL)
		err = fmt.Errorf("still running after 5 minutes: %v", <-done)
	}
	b, _ := os.ReadFile(outPath)
	return string(b), err
}

// stopGroup ends what is left of a block's process group: SIGTERM, then
// SIGKILL after 20 s; the test fails if anything is still there 10 s later.
func stopGroup(t *testing.T, pgid int) {
	gone := func(within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if syscall.Kill(-pgid, 0) != nil {
				return true
			}
		}
		return false
	}
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil || gone(20*time.Second) {
		return
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	if !gone(10 * time.Second) {
		t.Errorf("processes of process group %d survive SIGKILL", pgid)
	}
}

// TestGithubAnchor: heading ids as GitHub makes them, and a link to an id
// no heading has is an error.
func TestGithubAnchor(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for _, c := range []struct{ title, want string }{
		{"Exporting from a project: --from DIR", "exporting-from-a-project---from-dir"},
		{"verify --json", "verify---json"},
		{"Module sources from variables (Terraform 1.15, OpenTofu)", "module-sources-from-variables-terraform-115-opentofu"},
		{"Big sites: deltas, volumes, interrupted exports", "big-sites-deltas-volumes-interrupted-exports"},
		{"Café_au lait — déjà vu?", "café_au-lait--déjà-vu"},
		{"Foo", "foo"}, {"Foo", "foo-1"}, {"foo-1", "foo-1-1"}, {"Foo", "foo-2"},
	} {
		if got := githubAnchor(c.title, seen); got != c.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", c.title, got, c.want)
		}
	}
	p, err := parseDocPage("docs/x.md", []byte("# X\n\n*For tests.*\n\n## The `verify --json` document\n\n[ok](#the-verify---json-document) [bad](#the-verify-json-document) [gone](missing.md)\n"))
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*docPage{p.path: p}
	if p.lead != "For tests." || len(p.links) != 3 {
		t.Fatalf("parsed %q, %v", p.lead, p.links)
	}
	if err := checkDocLink(p, p.links[0].dest, byPath); err != nil {
		t.Errorf("%s: %v", p.links[0].dest, err)
	}
	for _, l := range p.links[1:] {
		if err := checkDocLink(p, l.dest, byPath); err == nil {
			t.Errorf("%s: no error", l.dest)
		}
	}
	if _, err := parseDocPage("x.md", []byte("```sh runn\nfalse\n```\n")); err == nil {
		t.Error("an info string outside the convention is not an error")
	}
}
