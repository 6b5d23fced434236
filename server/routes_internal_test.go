package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
)

// wantAccess is every route of the table with the access it must have.
// A change here changes who may reach what: it needs a security review.
var wantAccess = map[string]routeAccess{
	"GET /.well-known/terraform.json":                                              accessOpen,
	"GET /v1/providers/{ns}/{type}/versions":                                       accessToken,
	"GET /v1/providers/{ns}/{type}/{version}/download/{os}/{arch}":                 accessToken,
	"GET /v1/modules/{ns}/{name}/{system}/versions":                                accessToken,
	"GET /v1/modules/{ns}/{name}/{system}/{version}/download":                      accessToken,
	"GET /origin/{origin}/.well-known/terraform.json":                              accessToken,
	"GET /origin/{origin}/v1/providers/{ns}/{type}/versions":                       accessToken,
	"GET /origin/{origin}/v1/providers/{ns}/{type}/{version}/download/{os}/{arch}": accessToken,
	"GET /origin/{origin}/v1/modules/{ns}/{name}/{system}/versions":                accessToken,
	"GET /origin/{origin}/v1/modules/{ns}/{name}/{system}/{version}/download":      accessToken,
	"GET /mirror/{hostname}/{ns}/{type}/index.json":                                accessToken,
	"GET /mirror/{hostname}/{ns}/{type}/{file}":                                    accessToken,
	"GET /blobs/sha256/{hex}":                                                      accessSigned,
	"GET /blobs/sha256/{hex}/{filename}":                                           accessSigned,
	"GET /archives/sha256/{file}":                                                  accessSigned,
	"GET /ui/releases":                                                             accessToken,
	"GET /releases/":                                                               accessToken,
	"GET /healthz":                                                                 accessOpen,
	"GET /ca.pem":                                                                  accessOpen,
	"GET /airgap/v1/origins":                                                       accessToken,
	"GET /metrics":                                                                 accessMounted,
	"GET /v2/{$}":                                                                  accessOCI,
	"GET /v2/token":                                                                accessOpen,
	"GET /v2/":                                                                     accessOCI,
	"GET /oauth/authorization":                                                     accessSignIn,
	"POST /oauth/token":                                                            accessSignIn,
	"GET /oauth/callback":                                                          accessSignIn,
	"GET /oauth/signin":                                                            accessSignIn,
	"POST /oauth/signout":                                                          accessSignIn,
	"POST /oauth/consent":                                                          accessSignIn,
	"GET /{$}":                                                                     accessToken,
	"GET /ui/providers/{host}/{ns}/{type}":                                         accessToken,
	"GET /ui/modules/{host}/{ns}/{name}/{system}":                                  accessToken,
	"GET /ui/sbom.cdx.json":                                                        accessToken,
	"GET /ui/providers/{host}/{ns}/{type}/{version}/docs/{rest...}":                accessToken,
	"GET /ui/modules/{host}/{ns}/{name}/{system}/{version}":                        accessToken,
	"GET /ui/docs/search":                                                          accessToken,
	"GET /ui/docs/search.json":                                                     accessToken,
	"GET /ui/docs/pages.json":                                                      accessToken,
	"GET /ui/docs/module.json":                                                     accessToken,
	" /":                                                                           accessToken,
}

// admission is what admit does with a path: the access rules it applied
// before the route table (open paths, signed downloads, the OCI API's
// required credentials, a principal for everything else), kept here as
// the oracle the table must agree with.
func oldAdmission(p string) routeAccess {
	switch {
	case p == "/healthz" || p == "/ca.pem" || p == "/.well-known/terraform.json" || p == "/v2/token":
		return accessOpen
	case strings.HasPrefix(p, "/blobs/sha256/") || strings.HasPrefix(p, "/archives/sha256/"):
		return accessSigned
	case strings.HasPrefix(p, "/v2/"):
		return accessOCI
	}
	return accessToken
}

// admission folds the accesses admit treats alike: it never sees the
// sign-in endpoints (answered before it) nor a mounted /metrics, and asks
// a principal of any other path.
func admission(a routeAccess) routeAccess {
	if a == accessSignIn || a == accessMounted {
		return accessToken
	}
	return a
}

func testRoutes(t testing.TB) (*Server, []route) {
	s := New(catStore{&dist.Catalog{}}, Options{})
	return s, s.routeTable()
}

// samplePath fills a pattern's wildcards (a subtree's with one segment).
func samplePath(pattern string) string {
	if strings.HasSuffix(pattern, "/") {
		pattern += "x"
	}
	p := strings.ReplaceAll(pattern, "{$}", "")
	p = strings.ReplaceAll(p, "{rest...}", "a/b")
	for strings.Contains(p, "{") {
		i := strings.Index(p, "{")
		j := strings.Index(p[i:], "}")
		p = p[:i] + "x" + p[i+j+1:]
	}
	return p
}

func TestRouteTable(t *testing.T) {
	s, rs := testRoutes(t)
	seen := map[string]bool{}
	for _, r := range rs {
		key := r.method + " " + r.pattern
		if seen[key] {
			t.Errorf("%s: twice in the table", key)
		}
		seen[key] = true
		want, ok := wantAccess[key]
		if !ok {
			t.Errorf("%s: a route the test does not know; add it to wantAccess with the access it must have", key)
			continue
		}
		if r.access != want {
			t.Errorf("%s: access %s, want %s", key, r.access, want)
		}
		if (r.handler == nil) != (r.access == accessSignIn || r.access == accessMounted) || (r.signIn == nil) != (r.access != accessSignIn) {
			t.Errorf("%s: a handler for its access %s missing, or one it does not use", key, r.access)
		}
		path := samplePath(r.pattern)
		if got := s.rt.accessOf(path); got != r.access {
			t.Errorf("%s: a request for %s is admitted as %s", key, path, got)
		}
		// The ServeMux routes the row's paths to the row, and nothing
		// else: the sign-in endpoints and /metrics are not in it.
		req := httptest.NewRequest(cmp(r.method, "GET"), path, nil)
		_, pat := s.rt.mux.Handler(req)
		switch {
		case r.access == accessSignIn || r.access == accessMounted:
			if pat != "/" {
				t.Errorf("%s: the mux routes %s to %q, want the catch-all", key, path, pat)
			}
		case pat != strings.TrimPrefix(key, " "):
			t.Errorf("%s: the mux routes %s to %q", key, path, pat)
		}
	}
	for key := range wantAccess {
		if !seen[key] {
			t.Errorf("%s: not in the table", key)
		}
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// routeCorpus is paths around every route: the sample, its prefixes,
// variants with a suffix, dot segments, doubled slashes and escapes.
func routeCorpus(rs []route) []string {
	var out []string
	extra := []string{"", "/", "x", "/x", "/..", "/../healthz", "//", "%2F", "?q"}
	for _, r := range rs {
		p := samplePath(r.pattern)
		for i := 1; i <= len(p); i++ {
			out = append(out, p[:i])
		}
		for _, e := range extra {
			out = append(out, p+e, strings.ToUpper(p)+e)
		}
	}
	return append(out, "", "/", "/v2", "/v2/token/", "/v2//token", "/blobs/", "/blobs/sha256", "/archives/", "/healthz/",
		"/ca.pem/", "/.well-known/", "/oauth/", "/oauth/x", "/ui", "/ui/", "/metrics", "/metrics/", "/origin/x/healthz")
}

// TestRouteAccessAsBefore checks, over paths around every route, that the
// table admits each path as admit did before it.
func TestRouteAccessAsBefore(t *testing.T) {
	s, rs := testRoutes(t)
	for _, p := range routeCorpus(rs) {
		if got, want := admission(s.rt.accessOf(p)), oldAdmission(p); got != want {
			t.Errorf("%q: admitted as %s, before as %s", p, got, want)
		}
	}
}

func FuzzRouteAccess(f *testing.F) {
	s, rs := testRoutes(f)
	for _, p := range routeCorpus(rs) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := admission(s.rt.accessOf(p)), oldAdmission(p); got != want {
			t.Errorf("%q: admitted as %s, before as %s", p, got, want)
		}
	})
}

// TestNoRouteOutsideTable checks that every request the ServeMux routes
// goes to a pattern of the table.
func TestNoRouteOutsideTable(t *testing.T) {
	s, rs := testRoutes(t)
	patterns := map[string]bool{"": true} // "": a redirect or 405 of the mux itself
	for _, r := range rs {
		patterns[strings.TrimPrefix(r.method+" "+r.pattern, " ")] = true
	}
	for _, p := range routeCorpus(rs) {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			req, err := http.NewRequest(m, "http://a"+strings.ReplaceAll(p, "?", "%3F"), nil)
			if err != nil || !strings.HasPrefix(req.URL.Path, "/") {
				continue
			}
			if _, pat := s.rt.mux.Handler(req); !patterns[pat] {
				t.Errorf("%s %s: routed to %q, which the table does not name", m, p, pat)
			}
		}
	}
}
