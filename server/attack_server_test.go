package server_test

// ATTACK TESTS (security review of 'airgap serve', branch atk-server).
// Each test asserts the behaviour the appliance should have; a failure
// reproduces a finding of the review. Production code is not changed here.

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/airgap/airgap/server"
)

// TestAttackCacheOriginPortVariants: "registry.terraform.io:<anything>" is
// accepted as an origin in /origin/{origin}/… and /mirror/{hostname}/…
// (view.isOrigin cuts at ':'), and canonicalKey keeps the ":<anything>" in
// the key. One client can thus add cache entries without bound by the
// catalog and spend the snapshot's whole byte budget, after which no
// legitimate answer is cached until the next import.
func TestAttackCacheOriginPortVariants(t *testing.T) {
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
			if rec := serveRaw(srv, "appliance.site.test", path); rec == nil || rec.Code != 200 {
				continue // refused: what we want
			}
		}
	}
	// Top up what is left of the budget with short variants.
	for i := 0; i < 2000; i++ {
		serveRaw(srv, "x", fmt.Sprintf("/mirror/%s:%d/%s/%s/index.json", p.Host, i, p.Namespace, p.Type))
	}
	n, b := srv.RenderedEntries(), srv.RenderedBytes()
	t.Logf("after 4,800 requests with distinct :port suffixes: %d entries, %d bytes (catalog bound %d entries, budget %d bytes)", n, b, bound, server.DefaultCacheBytes)
	if n > bound {
		t.Errorf("cache holds %d entries, more than the catalog bound %d: origin:port variants are distinct keys", n, bound)
	}
	// The legitimate answers asked now are not kept: the budget is spent.
	before := srv.RenderedEntries()
	for _, path := range canonicalPaths(e) {
		serveRaw(srv, "appliance.site.test", path)
	}
	if kept := srv.RenderedEntries() - before; kept < int64(len(canonicalPaths(e))/2) {
		t.Errorf("only %d of %d legitimate answers were cached: one client spent the budget (%d of %d bytes)", kept, len(canonicalPaths(e)), srv.RenderedBytes(), server.DefaultCacheBytes)
	}
}

// TestAttackCacheCrossView (refused, kept as a guard): one shared server
// primed in a random order with requests from every Host (origins, the
// appliance's name, origins with ports and odd case) and variants of every
// path gives, for each request, the bytes a fresh server gives for it:
// no answer rendered for one view is served to another.
func TestAttackCacheCrossView(t *testing.T) {
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
