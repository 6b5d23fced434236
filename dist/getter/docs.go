package getter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/dist/portable"
)

// DocsTimeout bounds one provider version's docs fetch (every git process
// of it), as GitTimeout bounds a module's.
const DocsTimeout = 10 * time.Minute

// docsContactTimeout bounds the first contact of a docs fetch (git
// ls-remote, a few hundred bytes each way). Without it a host or a proxy
// that never answers holds the fetch for curl's connect timeout, 300 s,
// per provider. (A var: tests shorten it.)
var docsContactTimeout = 60 * time.Second

// maxDocsTreeEntries bounds the entries (files and folders) of the docs
// folder listed before anything is fetched.
const maxDocsTreeEntries = 4 * dist.MaxDocsFiles

// docsOverhead is what the size watch allows a docs fetch beyond twice its
// bound (the files are on disk twice, as git objects and checked out):
// the commit and the trees of the whole repository at depth 1 (AWS's:
// about 3 MiB).
const docsOverhead = 64 << 20

// ErrNoDocs: the repository has no documentation folder at the tag, or
// not the tag.
var ErrNoDocs = errors.New("no documentation")

// ErrDocsLimit: the docs folder is over a bound (entries, pages, depth);
// ErrUnsafeDocs: it has a name no file system of the clients takes, or
// two that one takes for one file.
var (
	ErrDocsLimit  = errors.New("the docs are over airgap's limits")
	ErrUnsafeDocs = errors.New("unsafe docs")
)

// DocsTree is a fetched documentation folder.
type DocsTree struct {
	Root   string // the folder, checked out (markdown pages and images only)
	Dir    string // "docs" or "website/docs"
	Ref    string // the tag fetched
	Commit string
	// Left lists what the folder held that was not fetched (links, other
	// files), a few names, and Skipped how many.
	Skipped int
	Left    []string
	files   int // pages and images the checkout will write
}

// FetchDocs fetches the documentation folder of the git repository repo
// (https:// or ssh://, as for modules) at the first of tags that exists:
// docs/, or the legacy website/docs/ when there is no docs/. Only that
// folder's markdown pages and images are fetched, with the module getter's
// git runner and all its bounds (the protocols, hooks, attributes and
// environment of gitConfig and gitEnv, GIT_ALLOC_LIMIT, the stall
// timeout, one size watch over work): a shallow clone (depth 1) without
// blobs (--filter=blob:none), no checkout; the folder's entries listed
// from the commit's trees and checked (at most maxDocsTreeEntries, names
// printable, portable — no two that fold into one on macOS or Windows —
// and at most docs.MaxDepth deep) before any file is fetched; then a
// sparse checkout of the folder's pages and images, which fetches those
// blobs and no others. The size watch stops git when work holds more than
// twice maxBytes plus docsOverhead; DocsTimeout bounds the whole fetch.
// Links in the folder are checked out as links and left out by docs.Pack,
// which reads through an os.Root. work must not exist.
func FetchDocs(ctx context.Context, repo string, tags []string, work string, maxBytes int64) (*DocsTree, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("the git binary is needed to fetch provider documentation; install git")
	}
	if err := checkGitURL(repo); err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrUnsupported, dist.RedactSource(repo), err)
	}
	ctx, cancel := context.WithTimeout(ctx, DocsTimeout)
	defer cancel()
	ctx, watch := watchSize(ctx, work, 2*maxBytes+docsOverhead)
	defer watch.stop()
	g := &gitRunner{ctx: ctx, env: gitEnv(), watch: watch, names: portable.NewSet()}
	tag, err := g.findTag(repo, tags)
	if err != nil {
		return nil, err
	}
	if _, err := g.write("", "clone", "--quiet", "--no-checkout", "--depth=1", "--filter=blob:none", "--no-tags", "--single-branch", "--branch", tag, "--", repo, work); err != nil {
		return nil, err
	}
	info := filepath.Join(work, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(info, "attributes"), []byte(noAttributes), 0o644); err != nil {
		return nil, err
	}
	commit, err := g.run(work, "rev-parse", "--verify", "--quiet", "--end-of-options", "HEAD^{commit}")
	if err != nil {
		return nil, err
	}
	t := &DocsTree{Ref: tag, Commit: commit}
	if t.Dir, err = g.docsDir(work, commit); err != nil {
		return nil, err
	}
	if err := g.checkDocsTree(work, commit, t); err != nil {
		return nil, err
	}
	if t.files == 0 {
		return nil, fmt.Errorf("%w: the %s/ folder at %s has no markdown pages or images", ErrNoDocs, t.Dir, tag)
	}
	if err := sparseDocs(work, t.Dir); err != nil {
		return nil, err
	}
	for _, kv := range [][2]string{{"core.sparseCheckout", "true"}, {"core.sparseCheckoutCone", "false"}} {
		if _, err := g.run(work, "config", kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if _, err := g.write(work, "checkout", "--quiet", "--detach", commit); err != nil {
		return nil, err
	}
	if err := plainDir(work, t.Dir); err != nil {
		return nil, err
	}
	t.Root = filepath.Join(work, filepath.FromSlash(t.Dir))
	return t, nil
}

// findTag asks the repository which of tags it has (one ls-remote, at
// most docsContactTimeout) and returns the first that it has. A host that
// could not be reached is an ErrUnreachable.
func (g *gitRunner) findTag(repo string, tags []string) (string, error) {
	args := []string{"ls-remote", "--tags", "--", repo}
	for _, t := range tags {
		args = append(args, "refs/tags/"+t)
	}
	ctx, cancel := context.WithTimeout(g.ctx, docsContactTimeout)
	defer cancel()
	out, err := g.runCtx(ctx, "", args...)
	switch {
	case err != nil && ctx.Err() != nil && g.ctx.Err() == nil:
		return "", fmt.Errorf("%w: git ls-remote had no answer in %s", ErrUnreachable, docsContactTimeout)
	case err != nil && unreachable(err.Error()):
		return "", fmt.Errorf("%w: %w", ErrUnreachable, err)
	case err != nil:
		return "", err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if _, ref, ok := strings.Cut(l, "\t"); ok {
			have[strings.TrimPrefix(ref, "refs/tags/")] = true
		}
	}
	for _, t := range tags {
		if have[t] {
			return t, nil
		}
	}
	return "", fmt.Errorf("%w: the repository has no tag %s", ErrNoDocs, strings.Join(tags, " or "))
}

// docsDir is "docs" when the commit has that folder, else "website/docs",
// as the registry chooses.
func (g *gitRunner) docsDir(dir, commit string) (string, error) {
	out, err := g.run(dir, "ls-tree", "-z", "--full-tree", commit, "--", "docs", "website/docs")
	if err != nil {
		return "", err
	}
	found := map[string]bool{}
	for _, rec := range strings.Split(out, "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if ok && strings.HasPrefix(meta, "040000 tree ") {
			found[p] = true
		}
	}
	switch {
	case found["docs"]:
		return "docs", nil
	case found["website/docs"]:
		return "website/docs", nil
	}
	return "", fmt.Errorf("%w: no docs/ or website/docs/ folder at %s", ErrNoDocs, commit[:min(12, len(commit))])
}

// checkDocsTree streams the entries of the docs folder ("git ls-tree -r
// -t", names only: no blob is fetched to list them) and holds them to the
// bounds before anything is checked out: at most maxDocsTreeEntries
// entries and dist.MaxDocsFiles pages and images, names
// printable and portable (the runner's name set), at most docs.MaxDepth
// deep below the folder. Links and files that are neither pages nor
// images are counted in t.Skipped (the sparse checkout leaves the latter
// out; docs.Pack the former).
func (g *gitRunner) checkDocsTree(dir, commit string, t *DocsTree) error {
	n := 0
	return g.lsTree(dir, []string{"-r", "-t", "-z", "--full-tree", commit, "--", t.Dir + "/"}, ErrUnsafeDocs, func(rec []byte) error {
		if n++; n > maxDocsTreeEntries {
			return fmt.Errorf("%w: the folder has more than %d entries", ErrDocsLimit, maxDocsTreeEntries)
		}
		return g.docsEntry(rec, t)
	})
}

// docsEntry checks one "<mode> <type> <object>\t<path>" of the folder.
func (g *gitRunner) docsEntry(rec []byte, t *DocsTree) error {
	meta, p, ok := bytes.Cut(rec, []byte{'\t'})
	f := strings.Fields(string(meta))
	if !ok || len(f) != 3 {
		return fmt.Errorf("git ls-tree: unexpected output %q", rec)
	}
	name := string(p)
	if dist.Printable(name) != name {
		return fmt.Errorf("%w: %q has control characters or invalid UTF-8 in its name", ErrUnsafeDocs, dist.Printable(name))
	}
	if err := g.names.Add(name); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsafeDocs, err)
	}
	rel := strings.TrimPrefix(name, t.Dir+"/")
	if strings.Count(rel, "/") >= docs.MaxDepth {
		return fmt.Errorf("%w: %q is more than %d folders deep", ErrDocsLimit, name, docs.MaxDepth)
	}
	switch {
	case f[1] == "tree":
	case f[1] != "blob" || f[0] == "120000":
		t.skip(rel, "a link or submodule")
	case docs.Allowed(rel) != nil:
		t.skip(rel, "neither a page nor an image")
	default:
		if t.files++; t.files > dist.MaxDocsFiles {
			return fmt.Errorf("%w: the folder has more than %d pages and images", ErrDocsLimit, dist.MaxDocsFiles)
		}
	}
	return nil
}

func (t *DocsTree) skip(name, why string) {
	t.Skipped++
	if len(t.Left) < 5 {
		t.Left = append(t.Left, fmt.Sprintf("%q (%s)", dist.Printable(name), why))
	}
}

// sparseDocs writes the sparse-checkout patterns that keep only the pages
// and images of the docs folder dir (of a clone at work): the checkout
// fetches those blobs and no others.
func sparseDocs(work, dir string) error {
	var b strings.Builder
	for _, e := range docs.Exts() {
		fmt.Fprintf(&b, "/%s/**/*%s\n", dir, e)
	}
	return os.WriteFile(filepath.Join(work, ".git", "info", "sparse-checkout"), []byte(b.String()), 0o644)
}

// unreachableSigns are what curl (git over https) and ssh say when they
// could not reach a host or its proxy, before any answer from it. Each
// has a space, so that no repository URL in the message can match.
var unreachableSigns = []string{
	"Could not resolve host", "Could not resolve proxy", "Failed to connect to", "Couldn't connect to server",
	"Connection timed out", "Resolving timed out", "Operation timed out", "Proxy CONNECT aborted",
	"SSL connection timeout", "CONNECT tunnel failed", "from proxy after CONNECT",
	"Could not resolve hostname", "Connection refused", "No route to host", "Network is unreachable",
}

// unreachable reports whether git's failure says that the host could not
// be reached.
func unreachable(msg string) bool {
	for _, s := range unreachableSigns {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
