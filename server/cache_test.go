package server_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airgap/airgap/server"
)

// cacheBound is the worst case the renderKey doc comment states for the
// standard set: 2 + O + 3·Np + 3·Npkg + 3·Nm + 3·Nmv + Np + Npv.
func cacheBound(e *env) int64 {
	origins := map[string]bool{}
	names := map[string]bool{}
	var npkg, nm int
	for _, p := range e.set.Catalog.Providers {
		origins[p.Host] = true
		names[p.Host+"/"+p.Namespace+"/"+p.Type] = true
		npkg += len(p.Packages)
	}
	mnames := map[string]bool{}
	for _, m := range e.set.Catalog.Modules {
		origins[m.Host] = true
		mnames[strings.ToLower(m.Host+"/"+m.Namespace+"/"+m.Name+"/"+m.System)] = true
	}
	nm = len(mnames)
	np, npv, nmv := len(names), len(e.set.Catalog.Providers), len(e.set.Catalog.Modules)
	return int64(2 + len(origins) + 3*np + 3*npkg + 3*nm + 3*nmv + np + npv)
}

// canonicalPaths lists every JSON answer the standard set has, in the form
// the clients send.
func canonicalPaths(e *env) []string {
	ps := []string{"/.well-known/terraform.json", "/airgap/v1/origins"}
	for _, p := range e.set.Catalog.Providers {
		for _, pre := range []string{"", "/origin/" + p.Host} {
			ps = append(ps, pre+"/.well-known/terraform.json", pre+"/v1/providers/"+p.Namespace+"/"+p.Type+"/versions")
			for _, pk := range p.Packages {
				ps = append(ps, pre+"/v1/providers/"+p.Namespace+"/"+p.Type+"/"+p.Version+"/download/"+pk.OS+"/"+pk.Arch)
			}
		}
		ps = append(ps, "/mirror/"+p.Host+"/"+p.Namespace+"/"+p.Type+"/index.json", "/mirror/"+p.Host+"/"+p.Namespace+"/"+p.Type+"/"+p.Version+".json")
	}
	for _, m := range e.set.Catalog.Modules {
		for _, pre := range []string{"", "/origin/" + m.Host} {
			ps = append(ps, pre+"/v1/modules/"+m.Namespace+"/"+m.Name+"/"+m.System+"/versions",
				pre+"/v1/modules/"+m.Namespace+"/"+m.Name+"/"+m.System+"/"+m.Version+"/download")
		}
	}
	return ps
}

// recase changes the case of the values the protocols fold (namespaces,
// types, module names, origins and mirror hostnames), not of literals,
// versions or platforms.
var recase = strings.NewReplacer("/hashicorp/", "/HashiCorp/", "/random/", "/Random/", "/null/", "/NULL/",
	"/example/", "/Example/", "/vpc/", "/VPC/", "/aws/", "/AWS/",
	"/registry.terraform.io/", "/Registry.Terraform.IO/", "/registry.opentofu.org/", "/REGISTRY.opentofu.org/")

// variant spells path differently in ways the server must treat as the
// same path: case changed where the protocols fold it, and bytes
// percent-encoded.
func variant(rng *rand.Rand, path string) string {
	if rng.IntN(2) == 0 {
		path = recase.Replace(path)
	}
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if c := path[i]; c != '/' && rng.IntN(4) == 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func serveRaw(h http.Handler, host, path string) *httptest.ResponseRecorder {
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n")))
	if err != nil {
		return nil
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestCacheBoundedByCatalog: every answer rendered through every view fills
// the cache to at most the stated bound; after that, thousands of requests
// with distinct long Hosts and encoded or re-cased paths add nothing, and
// get the same bytes as the canonical request.
func TestCacheBoundedByCatalog(t *testing.T) {
	e := setup(t)
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler)})
	hosts := []string{"appliance.site.test", "registry.terraform.io", "REGISTRY.OpenTofu.org:443"}
	want := map[string]string{}
	for _, h := range hosts {
		for _, p := range canonicalPaths(e) {
			rec := serveRaw(srv, h, p)
			if rec.Code != 200 {
				// An origin's view lacks the other origin's names: a 404,
				// not cached.
				if !strings.HasPrefix(p, "/v1/") || h == hosts[0] {
					t.Fatalf("GET %s (Host %s): %d %s", p, h, rec.Code, rec.Body)
				}
				continue
			}
			want[h+" "+p] = rec.Body.String()
		}
	}
	full := srv.RenderedEntries()
	bound := cacheBound(e)
	t.Logf("cache after every answer through every view: %d entries (stated bound %d)", full, bound)
	if full > bound || full == 0 {
		t.Fatalf("%d entries, bound %d", full, bound)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	long := strings.Repeat("x", 2<<10)
	for i := 0; i < 3000; i++ {
		p := canonicalPaths(e)[rng.IntN(len(canonicalPaths(e)))]
		h := hosts[rng.IntN(len(hosts))]
		sent := h
		if h == hosts[0] {
			sent = fmt.Sprintf("%s%d.appliance.site.test", long, i) // a new name: the default view, as hosts[0]
		}
		v := variant(rng, p)
		rec := serveRaw(srv, sent, v)
		w, ok := want[h+" "+p]
		if !ok {
			continue // a 404 in that view
		}
		if rec == nil || rec.Code != 200 || rec.Body.String() != w {
			t.Fatalf("GET %s (Host %.40s…): %v, want the answer to %s", v, sent, rec, p)
		}
	}
	// Mirror documents under names that are no origin: the default view,
	// answered but not kept.
	for i := 0; i < 100; i++ {
		rec := serveRaw(srv, "x", fmt.Sprintf("/mirror/h%d.example/hashicorp/random/index.json", i))
		if rec.Code != 200 {
			t.Fatalf("mirror under another name: %d", rec.Code)
		}
	}
	// Encoded slashes and unknown paths: answered, never kept.
	for _, p := range []string{"/v1/providers/hashicorp%2Frandom/x/versions", "/v1/providers/nope/nope/versions", "/nope", "/v1/providers/hashicorp/random/9.9.9/download/linux/amd64"} {
		for i := 0; i < 50; i++ {
			serveRaw(srv, fmt.Sprint(i), p)
		}
	}
	if got := srv.RenderedEntries(); got != full {
		t.Fatalf("the flood grew the cache from %d to %d entries", full, got)
	}
}

// FuzzRenderKey sends arbitrary Hosts and paths to the handler: the cache
// never exceeds the stated bound, nothing answers 5xx, and a second
// identical request (served from the cache if the first was kept) gets the
// same bytes.
func FuzzRenderKey(f *testing.F) {
	e := setup(f)
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler)})
	bound := cacheBound(e)
	for _, p := range canonicalPaths(e) {
		f.Add("registry.terraform.io", p)
		f.Add("Appliance:8443", strings.ToUpper(p))
	}
	f.Add("x", "/mirror/registry.terraform.io/hashicorp/random/%33.6.0.json")
	// Origins with a port, or anything after a colon, in Hosts and paths.
	f.Add("registry.terraform.io:443", "/v1/providers/hashicorp/random/versions")
	f.Add("registry.opentofu.org:junk", "/v1/providers/hashicorp/null/versions")
	f.Add("x", "/origin/registry.terraform.io:443/.well-known/terraform.json")
	f.Add("x", "/origin/registry.terraform.io:junk/v1/providers/hashicorp/random/versions")
	f.Add("x", "/mirror/registry.opentofu.org:8443/hashicorp/null/index.json")
	f.Add("x", "/mirror/registry.terraform.io:x/hashicorp/random/3.6.0.json")
	f.Fuzz(func(t *testing.T, host, path string) {
		rec := serveRaw(srv, host, path)
		if rec == nil {
			return
		}
		if rec.Code >= 500 {
			t.Fatalf("GET %q (Host %q): %d %s", path, host, rec.Code, rec.Body)
		}
		again := serveRaw(srv, host, path)
		if again.Code != rec.Code || again.Body.String() != rec.Body.String() {
			t.Fatalf("GET %q (Host %q) twice: %d %q then %d %q", path, host, rec.Code, rec.Body, again.Code, again.Body)
		}
		if n := srv.RenderedEntries(); n > bound {
			t.Fatalf("%d cache entries, bound %d (after GET %q Host %q)", n, bound, path, host)
		}
	})
}

// TestCacheBudget: once the byte budget is spent, answers are still right
// but no longer kept.
func TestCacheBudget(t *testing.T) {
	e := setup(t)
	const budget = 3 << 10
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler), CacheBytes: budget})
	for round := 0; round < 2; round++ {
		for _, p := range canonicalPaths(e) {
			rec := serveRaw(srv, "appliance.site.test", p)
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.Len() == 0 {
				t.Fatalf("round %d GET %s: %d %s", round, p, rec.Code, rec.Body)
			}
			if rec.Header().Get("Content-Length") != fmt.Sprint(rec.Body.Len()) {
				t.Fatalf("GET %s: Content-Length %q for %d bytes", p, rec.Header().Get("Content-Length"), rec.Body.Len())
			}
		}
	}
	n, b := srv.RenderedEntries(), srv.RenderedBytes()
	t.Logf("budget %d bytes: %d entries counted as %d bytes", budget, n, b)
	if b > budget || n == 0 || n >= int64(len(canonicalPaths(e))) {
		t.Errorf("%d entries, %d bytes for a budget of %d", n, b, budget)
	}
}
