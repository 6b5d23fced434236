package server_test

// Regression tests for the answer cache from a security review of
// 'airgap serve' (issue 11).

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/protocol"
)

// TestCacheOriginPortVariants (finding 3 of the review):
// "registry.terraform.io:<anything>" was accepted as an origin in
// /origin/{origin}/… and /mirror/{hostname}/… (scope.isOrigin cut at ':'),
// and canonicalKey kept the ":<anything>" in the key, so one client could
// add cache entries without bound by the catalog and spend the snapshot's
// whole byte budget, after which no legitimate answer was cached. Path
// values must now name an origin exactly: such variants are 404s, never
// cached, and the legitimate answers are still kept.
func TestCacheOriginPortVariants(t *testing.T) {
	e := setup(t)
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler)})
	bound := cacheBound(e)
	p := e.set.Catalog.Providers[0]
	pk := p.Packages[0]
	long := strings.Repeat("9", 24<<10) // the real server takes paths up to ~32 KiB
	for i := 0; i < 1400; i++ {
		port := fmt.Sprintf("%d%s", i, long)
		for _, path := range []string{
			"/origin/" + p.Host + ":" + port + "/v1/providers/" + p.Namespace + "/" + p.Type + "/" + p.Version + "/download/" + pk.OS + "/" + pk.Arch,
			"/mirror/" + p.Host + ":" + port + "/" + p.Namespace + "/" + p.Type + "/index.json",
		} {
			if rec := serveRaw(srv, "appliance.site.test", path); rec != nil && rec.Code != 404 {
				t.Fatalf("GET %.80s…: %d, want 404 (no such origin)", path, rec.Code)
			}
		}
	}
	// Top up what is left of the budget with short variants.
	for i := 0; i < 2000; i++ {
		serveRaw(srv, "x", fmt.Sprintf("/mirror/%s:%d/%s/%s/index.json", p.Host, i, p.Namespace, p.Type))
	}
	n, b := srv.RenderedEntries(), srv.RenderedBytes()
	t.Logf("after 4,800 requests with distinct :port suffixes: %d entries, %d bytes (catalog bound %d entries, budget %d bytes)", n, b, bound, protocol.DefaultCacheBytes)
	if n > bound {
		t.Errorf("cache holds %d entries, more than the catalog bound %d: origin:port variants are distinct keys", n, bound)
	}
	// The legitimate answers asked now are not kept: the budget is spent.
	before := srv.RenderedEntries()
	for _, path := range canonicalPaths(e) {
		serveRaw(srv, "appliance.site.test", path)
	}
	if kept := srv.RenderedEntries() - before; kept < int64(len(canonicalPaths(e))/2) {
		t.Errorf("only %d of %d legitimate answers were cached: one client spent the budget (%d of %d bytes)", kept, len(canonicalPaths(e)), srv.RenderedBytes(), protocol.DefaultCacheBytes)
	}
}

// TestCacheCrossView: one shared server
// primed in a random order with requests from every Host (origins, the
// appliance's name, origins with ports and odd case) and variants of every
// path gives, for each request, the bytes a fresh server gives for it:
// no answer rendered for one view is served to another.
func TestCacheCrossView(t *testing.T) {
	e := setup(t)
	shared := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler)})
	hosts := []string{"appliance.site.test", "registry.terraform.io", "Registry.OpenTofu.org:443", "registry.opentofu.org", "REGISTRY.TERRAFORM.IO:8443", ""}
	rng := rand.New(rand.NewPCG(7, 9))
	paths := canonicalPaths(e)
	for i := 0; i < 3000; i++ {
		h := hosts[rng.IntN(len(hosts))]
		p := paths[rng.IntN(len(paths))]
		if rng.IntN(2) == 0 {
			p = variant(rng, p)
		}
		method := "GET"
		got := serveRaw(shared, h, p)
		fresh := serveRaw(server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler)}), h, p)
		if got == nil || fresh == nil {
			continue
		}
		if got.Code != fresh.Code || got.Body.String() != fresh.Body.String() || got.Header().Get("X-Terraform-Get") != fresh.Header().Get("X-Terraform-Get") {
			t.Fatalf("%s %s (Host %q): shared cache answered %d %q, a fresh server %d %q", method, p, h, got.Code, got.Body, fresh.Code, fresh.Body)
		}
	}
}

// TestOriginCanonical: answers under /origin/{origin}/ name the origin as
// the catalog spells it, whatever case the request used, and an origin
// with a port or other suffix in a path is no origin.
func TestOriginCanonical(t *testing.T) {
	e := setup(t)
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler)})
	host := e.set.Catalog.Providers[0].Host
	rec := serveRaw(srv, "x", "/origin/"+strings.ToUpper(host)+"/.well-known/terraform.json")
	if rec == nil || rec.Code != 200 || !strings.Contains(rec.Body.String(), `"/origin/`+host+`/v1/providers/"`) {
		t.Fatalf("discovery under an upper-case origin: %v", rec)
	}
	for _, path := range []string{
		"/origin/" + host + ":443/.well-known/terraform.json",
		"/origin/" + host + ":junk/.well-known/terraform.json",
		"/mirror/" + host + ":junk/hashicorp/random/index.json",
	} {
		if rec := serveRaw(srv, "x", path); rec == nil || rec.Code != 404 || strings.Contains(rec.Body.String(), "discovery") {
			t.Errorf("GET %s: %v, want 404", path, rec)
		}
	}
}
