package getter

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
)

var s = registrytest.Str

// The docs folder of the tag is fetched, and nothing else of the
// repository: not the Go sources, not the docs' other files, not another
// tag's pages.
func TestFetchDocsOnlyTheFolder(t *testing.T) {
	in := gitHost(t)
	in.AddTaggedRepo(t, "acme/terraform-provider-widget", []registrytest.Release{
		{Tag: "v1.0.0", Files: map[string]*string{"docs/index.md": s("# one\n"), "docs/resources/thing.md": s("v1 thing\n"),
			"main.go": s(strings.Repeat("package main\n", 1000)), "docs/notes.txt": s("not a page\n")}},
		{Tag: "v2.0.0", Files: map[string]*string{"docs/resources/thing.md": s("v2 thing\n"), "docs/images/a.png": s("PNG")}},
	}, nil)
	tree, err := FetchDocs(context.Background(), "https://github.com/acme/terraform-provider-widget", []string{"v2.0.0", "2.0.0"}, filepath.Join(t.TempDir(), "w"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(filepath.Dir(tree.Root), func(p string, d os.DirEntry, err error) error {
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(filepath.Dir(tree.Root), p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	if strings.Join(got, " ") != "docs/images/a.png docs/index.md docs/resources/thing.md" || tree.Dir != "docs" || tree.Ref != "v2.0.0" {
		t.Fatalf("checked out %v (dir %s, ref %s)", got, tree.Dir, tree.Ref)
	}
	if b, _ := os.ReadFile(filepath.Join(tree.Root, "resources/thing.md")); string(b) != "v2 thing\n" {
		t.Fatalf("thing.md = %q", b)
	}
	// main.go's blob was never fetched (the clone is blob-filtered and
	// the checkout sparse).
	work := filepath.Dir(tree.Root)
	if missing := gitOut(t, work, "", "rev-list", "--objects", "--missing=print", "HEAD"); strings.Count(missing, "\n?") < 2 {
		t.Fatalf("every blob was fetched:\n%s", missing)
	}
	if tree.Skipped != 1 {
		t.Fatalf("skipped %d (%v), want notes.txt", tree.Skipped, tree.Left)
	}
	// A docs folder without pages: no docs, said so.
	in.AddTaggedRepo(t, "acme/terraform-provider-empty", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{"docs/README.txt": s("x")}}}, nil)
	if _, err := FetchDocs(context.Background(), "https://github.com/acme/terraform-provider-empty", []string{"v1.0.0"}, filepath.Join(t.TempDir(), "w"), 1<<20); !errors.Is(err, ErrNoDocs) || !strings.Contains(err.Error(), "has no markdown pages or images") {
		t.Errorf("empty docs folder: %v", err)
	}
	_, err = FetchDocs(context.Background(), "https://github.com/acme/terraform-provider-widget", []string{"v9.0.0"}, filepath.Join(t.TempDir(), "w"), 1<<20)
	if !errors.Is(err, ErrNoDocs) || !strings.Contains(err.Error(), "no tag v9.0.0") {
		t.Fatalf("missing tag: %v", err)
	}
}

// A host that cannot be reached is an ErrUnreachable, refused or silent
// (within docsContactTimeout, not curl's 300 s); a host that answers that
// it has no such repository is not.
func TestFetchDocsUnreachable(t *testing.T) {
	in := gitHost(t)
	fetch := func() (time.Duration, error) {
		start := time.Now()
		_, err := FetchDocs(context.Background(), "https://github.com/acme/terraform-provider-gone", []string{"v1.0.0"}, filepath.Join(t.TempDir(), "w"), 1<<20)
		return time.Since(start), err
	}
	if _, err := fetch(); err == nil || errors.Is(err, ErrUnreachable) {
		t.Errorf("no such repository: %v", err)
	}
	in.Block("github.com")
	if _, err := fetch(); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "CONNECT tunnel failed, response 502") {
		t.Errorf("refused by the proxy: %v", err)
	}
	// A proxy that takes the connection and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	for _, k := range []string{"HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, "http://"+ln.Addr().String())
	}
	defer func(d time.Duration) { docsContactTimeout = d }(docsContactTimeout)
	docsContactTimeout = 2 * time.Second
	took, err := fetch()
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "no answer in 2s") || took > 30*time.Second {
		t.Errorf("silent proxy: %v after %s", err, took)
	}
}
