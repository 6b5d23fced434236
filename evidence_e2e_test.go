package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The evidence a site reads about what entered its store, and the bounds
// on what reading it costs: each test is the regression test of a
// finding of issue 30.

// TestCatalogHistoryWithAccessFile: with an access file, the catalog
// page's "Bundles imported" table showed "none" to every token: the
// filter compared the word "provider" or "module" that starts each
// history line with the token's address rules. Now a token sees the
// import that added what it may read, counting only that, and a token
// that may read nothing of it still sees none.
func TestCatalogHistoryWithAccessFile(t *testing.T) {
	root, _, _ := opsStore(t) // one import: a terraform.io provider, an opentofu.org provider, a module
	access := filepath.Join(t.TempDir(), "access.hcl")
	all := createToken(t, access, "all", "**")
	tofu := createToken(t, access, "tofu", "registry.opentofu.org/**")
	nobody := createToken(t, access, "nobody", "example.invalid/**")
	base, _ := startServe(t, root, "--access", access)
	cl, _, _ := caClient(t, root)
	// The rows of the bundle table: the "Added" cell of each.
	added := func(token string) []string {
		t.Helper()
		resp, body := httpGet(t, cl, base, "Authorization", "Bearer "+token)
		if resp.StatusCode != 200 {
			t.Fatalf("catalog page: %s", resp.Status)
		}
		page := string(body)
		i := strings.Index(page, `id="bundles"`)
		if i < 0 {
			t.Fatalf("no Bundles imported section:\n%s", page)
		}
		sec := page[i:]
		if strings.HasPrefix(strings.TrimSpace(sec[strings.Index(sec, "</h2>")+5:]), `<p class="muted">none</p>`) {
			return nil
		}
		rows := regexp.MustCompile(`(?s)<tr><td><code title="sha256:[0-9a-f]{64}">.*?</td><td>(\d+)</td><td>(\d+)</td></tr>`).FindAllStringSubmatch(sec, -1)
		if len(rows) == 0 {
			t.Fatalf("a bundle table without rows:\n%s", sec)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r[1])
		}
		return out
	}
	if got := added(all); strings.Join(got, ",") != "3" {
		t.Errorf("token with every address: rows with Added %v, want one import that added 3", got)
	}
	if got := added(tofu); strings.Join(got, ",") != "1" {
		t.Errorf("token for registry.opentofu.org: rows with Added %v, want the import, counting the 1 entry it may read", got)
	}
	if got := added(nobody); got != nil {
		t.Errorf("token that may read nothing imported: rows %v, want none", got)
	}
}
