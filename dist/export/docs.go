package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/verify"
)

// DocsSetting is a provider block's docs attribute: Off (docs = false), or
// the repository to take the docs from (docs = "git::https://…"); zero:
// the registry's source, else the convention (docsRepo).
type DocsSetting struct {
	Off    bool
	Source string
}

// docsJobs bounds the docs fetches at once: each is a few git processes
// and a checkout of up to twice the bound on disk.
const docsJobs = 2

// providerDocs fetches the documentation of every provider version (at
// most docsJobs at once) and records it on the version, or why it is
// missing: a failure here is reported and never fails the export, except
// the export's own cancellation. A host that could not be reached
// (getter.ErrUnreachable: no name, no connection, or no answer to the
// first request within its bound, 60 s) is not tried again in the same
// export, so an export whose network drops github.com loses at most
// docsJobs times that bound to it, not curl's 300 s per provider.
func (e *exporter) providerDocs(ctx context.Context, pvs []*dist.ProviderVersion, reqs []*ProviderReq) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(docsJobs)
	for i, pv := range pvs {
		g.Go(func() error {
			pv.Docs = e.fetchProviderDocs(gctx, pv, reqs[i].Docs)
			if pv.Docs.Missing != "" {
				e.opt.Log("notice: provider %s: no docs carried: %s", pv, pv.Docs.Missing)
				e.mu.Lock()
				e.res.DocsMissing = append(e.res.DocsMissing, pv.String()+": "+pv.Docs.Missing)
				e.mu.Unlock()
			}
			return gctx.Err()
		})
	}
	return g.Wait()
}

// fetchProviderDocs is providerDocs for one version.
func (e *exporter) fetchProviderDocs(ctx context.Context, pv *dist.ProviderVersion, set DocsSetting) *dist.ProviderDocs {
	switch {
	case set.Off:
		return &dist.ProviderDocs{Missing: "not exported (docs = false in the manifest)"}
	case e.opt.NoDocs:
		return &dist.ProviderDocs{Missing: "not exported (export --no-docs)"}
	}
	repo := e.docsRepo(ctx, pv, set)
	shown := dist.RedactSource(repo)
	host := gitHost(repo)
	e.mu.Lock()
	why, down := e.docsDown[host]
	e.mu.Unlock()
	if down {
		return &dist.ProviderDocs{Source: shown, Missing: "not tried: " + host + " could not be reached earlier in this export (" + why + ")"}
	}
	d, err := e.fetchDocsTree(ctx, pv, repo)
	if err != nil {
		reason := docsReason(err, e.docsBound())
		if errors.Is(err, getter.ErrUnreachable) && host != "" {
			e.mu.Lock()
			if e.docsDown == nil {
				e.docsDown = map[string]string{}
			}
			e.docsDown[host] = reason
			e.mu.Unlock()
		}
		return &dist.ProviderDocs{Source: shown, Missing: reason}
	}
	d.Source = shown
	return d
}

// gitHost is the host of a git repository address (https://, ssh:// or
// git@host:path), "" if it has none.
func gitHost(repo string) string {
	if rest, ok := strings.CutPrefix(repo, "git@"); ok {
		h, _, _ := strings.Cut(rest, ":")
		return strings.ToLower(h)
	}
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// docsRepo is where pv's docs are: the manifest's docs = "…", else the
// repository its registry names (registry.terraform.io's version
// document), else github.com/NAMESPACE/terraform-provider-TYPE.
func (e *exporter) docsRepo(ctx context.Context, pv *dist.ProviderVersion, set DocsSetting) string {
	if set.Source != "" {
		return strings.TrimPrefix(set.Source, "git::")
	}
	if src, err := e.opt.Client.ProviderSource(ctx, pv.Host, pv.Namespace, pv.Type, pv.Version); err == nil && src != "" {
		return src
	}
	return "https://github.com/" + pv.Namespace + "/terraform-provider-" + pv.Type
}

// fetchDocsTree fetches the docs folder of repo at pv's tag (getter.FetchDocs)
// and packs it as a docs tar (docs.Pack) into the cache, as a blob.
func (e *exporter) fetchDocsTree(ctx context.Context, pv *dist.ProviderVersion, repo string) (*dist.ProviderDocs, error) {
	work, err := moduleWorkDir(e.opt.CacheDir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	max := e.docsBound()
	tree, err := getter.FetchDocs(ctx, repo, []string{"v" + pv.Version, pv.Version}, filepath.Join(work, "repo"), max)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(tree.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	tmp := e.tmpPath()
	f, err := os.Create(tmp)
	if err != nil {
		return nil, err
	}
	h := verify.NewDigester()
	st, err := docs.Pack(root, io.MultiWriter(f, h), max)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return nil, err
	}
	d := h.Digest()
	p, err := e.admit(tmp, d)
	if err != nil {
		return nil, err
	}
	e.addBlob(d, fi.Size(), dist.RoleProviderDocs, p)
	if tree.Skipped > 0 { // (what docs.Pack left out, git listed first)
		e.opt.Log("notice: provider %s docs: left out %d files that are not pages or images, or are links (%s)", pv, tree.Skipped, strings.Join(tree.Left, ", "))
	}
	e.opt.Log("fetched docs of provider %s: %s pages, %s from %s at %s", pv, dist.Thousands(int64(st.Pages)), dist.HumanSize(st.Bytes), dist.RedactSource(repo), tree.Ref)
	return &dist.ProviderDocs{Ref: tree.Ref, Commit: tree.Commit, Dir: tree.Dir, Archive: d, Pages: st.Pages, Files: st.Files, Bytes: st.Bytes}, nil
}

// docsBound is the bound on one version's docs.
func (e *exporter) docsBound() int64 {
	if e.opt.MaxDocsSize > 0 {
		return e.opt.MaxDocsSize
	}
	return dist.DefaultDocsBytes
}

// docsReason is what the bundle records for docs that could not be
// fetched: the error's first line, printable and at most 512 bytes.
func docsReason(err error, bound int64) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	switch {
	case errors.Is(err, getter.ErrGitTooLarge):
		msg = fmt.Sprintf("over the docs bound (--max-docs-size %s): git was stopped when the fetch passed twice that plus the repository's trees", dist.HumanSize(bound))
	case errors.Is(err, docs.ErrTooLarge) || errors.Is(err, getter.ErrDocsLimit):
		msg = fmt.Sprintf("over the docs bound (--max-docs-size %s): %s", dist.HumanSize(bound), msg)
	}
	msg = dist.Printable(msg)
	if len(msg) > 512 {
		msg = msg[:509] + "..."
	}
	return dist.Printable(msg) // the cut may split an escape; printable again
}

// moduleDocs reads a fetched module's documentation (docs.ModuleDocs) from
// its tree and adds it as a blob; a module whose docs cannot be read is
// exported without (a notice says why).
func (e *exporter) moduleDocs(tree, subdir string, mv *dist.ModuleVersion, parsed *docs.Parsed) {
	root, err := os.OpenRoot(tree)
	if err != nil {
		return
	}
	defer root.Close()
	if subdir == "" {
		subdir = "."
	}
	b, err := docs.ModuleDocsFrom(root, subdir, parsed)
	if err != nil {
		e.opt.Log("notice: module %s: no docs carried: %v", mv, err)
		return
	}
	d, p, err := e.storeBytes(b)
	if err != nil {
		e.opt.Log("notice: module %s: no docs carried: %v", mv, err)
		return
	}
	e.addBlob(d, int64(len(b)), dist.RoleModuleDocs, p)
	mv.Docs = d
}
