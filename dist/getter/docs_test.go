package getter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
