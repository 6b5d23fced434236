package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/ui"
)

// Regression tests of the reviewer findings on serve's access control
// that need a controlled clock or file reloads (the end-to-end attacks on
// the real binary are in the root package's access attack tests).

// TestSameNameGetsNoCachedAnswer: the answer cache was keyed by the
// token's name. A token revoked and created again under its name (with
// narrower rules) and presented before serve noticed the change (the
// first request with an unknown token re-reads the file) was answered
// from what the old token's requests had cached: an address outside its
// rules.
func TestSameNameGetsNoCachedAnswer(t *testing.T) {
	e := setupAccess(t, map[string][]string{"ci": {"**"}}, nil)
	const denied = "/v1/providers/hashicorp/null/versions"
	if resp, b := e.do(t, denied, "ci"); resp.StatusCode != 200 {
		t.Fatalf("the old token: %s %s", resp.Status, b)
	}
	if err := acl.RemoveToken(e.access, "ci"); err != nil {
		t.Fatal(err)
	}
	sec, err := acl.AddToken(e.access, "ci", []string{"registry.terraform.io/hashicorp/random"}, time.Time{}, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	e.tokens["ci"] = sec
	if resp, b := e.do(t, denied, "ci"); resp.StatusCode != 404 {
		t.Errorf("the new token named ci, on an address outside its rules: %s %s (want 404)", resp.Status, b)
	}
}

// historyFixture is an index of two providers with an import of the
// first and a later one of (or about) the second, served with an access
// file whose token "ci" may read only the first: get fetches a path as ci.
func historyFixture(t *testing.T, later store.ImportEntry) (seen, hidden dist.ProviderVersion, get func(path string) (int, string)) {
	t.Helper()
	ix := bigIndex(2, 1, []string{"linux_amd64"})
	seen, hidden = ix.Catalog.Providers[0], ix.Catalog.Providers[1]
	first := store.ImportEntry{Bundle: fakeDigest("first"), Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Added: []string{"provider " + seen.Addr() + " " + seen.Version + " (linux_amd64)"}}
	later.Time = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	ix.Imports = []store.ImportEntry{first, later}
	dir := t.TempDir()
	accessFile := filepath.Join(dir, "access.hcl")
	sec, err := acl.AddToken(accessFile, "ci", []string{seen.Addr()}, time.Time{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ac, err := access.NewAccessControl(access.AccessOptions{File: accessFile, TLSDir: filepath.Join(dir, "tls")})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(server.New(indexStore{ix}, server.Options{Logger: slog.New(slog.DiscardHandler), Access: ac}))
	t.Cleanup(ts.Close)
	return seen, hidden, func(path string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", basic(sec))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// TestCatalogHistoryScoped: the catalog page's list of imports left out,
// for a token, an import that added or withdrew nothing it may read, but
// not one that only reinstated addresses outside its rules: that import,
// its bundle, signer and time showed on the page of every token.
func TestCatalogHistoryScoped(t *testing.T) {
	reinstated := fakeDigest("bundle that reinstated")
	_, hidden, get := historyFixture(t, store.ImportEntry{Bundle: reinstated, Added: []string{}, Reinstated: []string{"provider registry.terraform.io/ns0000/type00001 1.0.0"}})
	code, page := get("/")
	if code != 200 || !strings.Contains(page, string(fakeDigest("first"))) {
		t.Fatalf("the page for ci: %d, the import of what it may read listed: %v", code, strings.Contains(page, string(fakeDigest("first"))))
	}
	if strings.Contains(page, string(reinstated)) {
		t.Errorf("the page for ci lists an import that only reinstated %s, outside its rules", hidden.Addr())
	}
}

// TestSBOMTimeScoped: the SBOM a token gets carried the time of the
// store's newest import, also of one that changed only addresses outside
// the token's rules (which the catalog page does not list for it): each
// such import showed in every token's SBOM.
func TestSBOMTimeScoped(t *testing.T) {
	seen, hidden, get := historyFixture(t, store.ImportEntry{Bundle: fakeDigest("later"), Added: []string{"provider registry.terraform.io/ns0000/type00001 1.0.0 (linux_amd64)"}})
	code, doc := get(ui.SBOMPath)
	if code != 200 || !strings.Contains(doc, seen.Addr()) || strings.Contains(doc, hidden.Addr()) {
		t.Fatalf("the SBOM for ci: %d\n%s", code, doc)
	}
	if !strings.Contains(doc, `"timestamp":"2026-11-01T00:00:00Z"`) {
		t.Errorf("the SBOM for ci is not dated by the newest import it may see (2026-11-01):\n%.600s", doc)
	}
}
