package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/ui"
)

// The route table: every path the appliance answers, the handler that
// answers it, and who may reach it. The ServeMux is built from it and
// nothing else, and AccessControl.Admit is told each request's access from
// it, so a new endpoint is one row here (and a row in TestRouteTable).
//
// Access is decided before routing and from the path alone, because a
// refusal must not depend on what exists (a 401 says nothing about the
// catalog) and every path, routed or not, needs it: a pattern without
// wildcards is matched exactly, any other by its literal prefix (the text
// before its first wildcard), the longest such prefix winning; a path no
// row names takes the access of the catch-all "/".

// routeAccess is who may reach a route.
type routeAccess int

const (
	// accessToken: a principal, a token the access file lists (Bearer,
	// Basic, or the catalog's session cookie) or the file's anonymous
	// rule; it then sees its scope of the catalog. The catalog pages ("/",
	// /ui/…) are refused the way browsers expect (a challenge or a
	// sign-in redirect), everything else with a Bearer challenge.
	accessToken routeAccess = iota
	// accessOpen: anyone; the answer carries no catalog data.
	accessOpen
	// accessSigned: a package or archive download: a valid signed URL
	// admits as the token it was issued to, else as accessToken; either
	// way that principal's rules must allow an owner of the blob now.
	accessSigned
	// accessOCI: the OCI API: credentials are required even where the
	// access file has an anonymous rule (OCI clients send none before a
	// challenge; anonymous ones get an anonymous bearer at /v2/token),
	// then as accessToken, a /v2/token bearer included.
	accessOCI
	// accessSignIn: the single sign-on endpoints, answered before any
	// other check by the login service (state, PKCE and the identity
	// provider are their checks), and only with an access file; without
	// one they are unknown paths.
	accessSignIn
	// accessMounted: served in front of the app, outside this table's
	// ServeMux (/metrics with metrics-listen = "main", which an access file
	// refuses): no principal.
	accessMounted
)

func (a routeAccess) String() string {
	return [...]string{"token", "open", "signed-url", "oci", "sign-in", "mounted"}[a]
}

// route is one row of the table.
type route struct {
	// method is GET (which HEAD also matches) or POST; "" for the
	// catch-all.
	method  string
	pattern string // a net/http ServeMux pattern, without the method
	access  routeAccess
	handler http.HandlerFunc
	// signIn answers an accessSignIn row with the current login block
	// and login state.
	signIn func(w http.ResponseWriter, r *http.Request, cfg *acl.Login, ls *access.LoginState)
}

// routeTable is the table of s. The OCI API's routes under /v2/ are
// dispatched by one handler (protocol.Handlers.OCI): repository names hold slashes, and a ServeMux
// wildcard that matches slashes must end its pattern, so
// /v2/{name...}/manifests/{ref} is not a pattern it accepts (distribution
// matches them with regular expressions).
func (s *Server) routeTable() []route {
	pages := ui.New(uiApp{s})
	a := s.answers.Handlers()
	l := s.login
	rs := []route{
		// The registry protocols, in the view the Host chooses.
		{method: "GET", pattern: "/.well-known/terraform.json", access: accessOpen, handler: a.Discovery},
		{method: "GET", pattern: "/v1/providers/{ns}/{type}/versions", handler: a.ProviderVersions},
		{method: "GET", pattern: "/v1/providers/{ns}/{type}/{version}/download/{os}/{arch}", handler: a.ProviderDownload},
		{method: "GET", pattern: "/v1/modules/{ns}/{name}/{system}/versions", handler: a.ModuleVersions},
		{method: "GET", pattern: "/v1/modules/{ns}/{name}/{system}/{version}/download", handler: a.ModuleDownload},
		// One origin's view, for CLI host overrides.
		{method: "GET", pattern: "/origin/{origin}/.well-known/terraform.json", handler: a.Discovery},
		{method: "GET", pattern: "/origin/{origin}/v1/providers/{ns}/{type}/versions", handler: a.ProviderVersions},
		{method: "GET", pattern: "/origin/{origin}/v1/providers/{ns}/{type}/{version}/download/{os}/{arch}", handler: a.ProviderDownload},
		{method: "GET", pattern: "/origin/{origin}/v1/modules/{ns}/{name}/{system}/versions", handler: a.ModuleVersions},
		{method: "GET", pattern: "/origin/{origin}/v1/modules/{ns}/{name}/{system}/{version}/download", handler: a.ModuleDownload},
		// The provider network mirror protocol.
		{method: "GET", pattern: "/mirror/{hostname}/{ns}/{type}/index.json", handler: a.MirrorIndex},
		{method: "GET", pattern: "/mirror/{hostname}/{ns}/{type}/{file}", handler: a.MirrorVersion},
		// Content-addressed downloads: packages, SHA256SUMS, signatures,
		// module archives.
		{method: "GET", pattern: "/blobs/sha256/{hex}", access: accessSigned, handler: a.Blob},
		{method: "GET", pattern: "/blobs/sha256/{hex}/{filename}", access: accessSigned, handler: a.Blob},
		{method: "GET", pattern: "/archives/sha256/{file}", access: accessSigned, handler: a.Archive},
		// Terraform's and OpenTofu's CLI releases in their publishers'
		// layouts, for version managers and installers (protocol.ReleasesPrefix).
		{method: "GET", pattern: "/releases/", handler: a.Releases},
		// Appliance helpers.
		{method: "GET", pattern: "/healthz", access: accessOpen, handler: s.healthz},
		{method: "GET", pattern: "/ca.pem", access: accessOpen, handler: s.caCert},
		{method: "GET", pattern: "/airgap/v1/origins", handler: a.Origins},
		{method: "GET", pattern: "/metrics", access: accessMounted},
		// The OCI distribution API, read-only, and its bearer tokens.
		{method: "GET", pattern: "/v2/{$}", access: accessOCI, handler: a.OCIBase},
		{method: "GET", pattern: "/v2/token", access: accessOpen, handler: a.OCIToken},
		{method: "GET", pattern: "/v2/", access: accessOCI, handler: a.OCI},
		// Single sign-on: 'terraform login' (login.v1), the identity
		// provider's return, the catalog's sign-in and sign-out.
		{method: "GET", pattern: access.AuthorizePath, access: accessSignIn, signIn: l.Authorize},
		{method: "POST", pattern: access.TokenPath, access: accessSignIn, signIn: l.Token},
		{method: "GET", pattern: access.CallbackPath, access: accessSignIn, signIn: l.Callback},
		{method: "GET", pattern: access.SignInPath, access: accessSignIn, signIn: l.SignIn},
		{method: "POST", pattern: access.SignOutPath, access: accessSignIn, signIn: l.SignOut},
		{method: "POST", pattern: access.ConsentPath, access: accessSignIn, signIn: l.Consent},
		// The HTML catalog and documentation for people. "/{$}" matches
		// only "/" itself, so no protocol path is shadowed, and /ui/ is a
		// prefix no protocol uses.
		{method: "GET", pattern: "/{$}", handler: pages.Index},
		{method: "GET", pattern: "/ui/providers/{host}/{ns}/{type}", handler: pages.Provider},
		{method: "GET", pattern: "/ui/modules/{host}/{ns}/{name}/{system}", handler: pages.Module},
		{method: "GET", pattern: "/ui/releases", handler: pages.Releases},
		{method: "GET", pattern: ui.SBOMPath, handler: pages.SBOM},
		{method: "GET", pattern: "/ui/providers/{host}/{ns}/{type}/{version}/docs/{rest...}", handler: pages.ProviderDocs},
		{method: "GET", pattern: "/ui/modules/{host}/{ns}/{name}/{system}/{version}", handler: pages.ModuleDocs},
		{method: "GET", pattern: "/ui/docs/search", handler: pages.DocsSearch},
		{method: "GET", pattern: "/ui/docs/search.json", handler: pages.DocsSearchJSON},
		{method: "GET", pattern: "/ui/docs/pages.json", handler: pages.DocsPagesJSON},
		{method: "GET", pattern: "/ui/docs/module.json", handler: pages.DocsModuleJSON},
		// Anything else: 404 with a JSON body, after the access check.
		{pattern: "/", handler: s.noEndpoint},
	}
	return rs
}

// routing is the table compiled: the ServeMux of the routes it serves, the
// sign-in endpoints by path, and the access of any path.
type routing struct {
	mux    *http.ServeMux
	signIn map[string]route
	exact  map[string]routeAccess
	prefix []accessPrefix // longest first
}

type accessPrefix struct {
	prefix string
	access routeAccess
}

func newRouting(rs []route) *routing {
	rt := &routing{mux: http.NewServeMux(), signIn: map[string]route{}, exact: map[string]routeAccess{}}
	for _, r := range rs {
		switch r.access {
		case accessSignIn:
			rt.signIn[r.pattern] = r
		case accessMounted:
		default:
			p := r.pattern
			if r.method != "" {
				p = r.method + " " + p
			}
			rt.mux.HandleFunc(p, r.handler)
		}
		if exact, ok := exactPath(r.pattern); ok {
			rt.exact[exact] = r.access
		} else {
			rt.prefix = append(rt.prefix, accessPrefix{literalPrefix(r.pattern), r.access})
		}
	}
	sort.SliceStable(rt.prefix, func(i, j int) bool { return len(rt.prefix[i].prefix) > len(rt.prefix[j].prefix) })
	return rt
}

// exactPath is the one path a pattern matches, if it matches one.
func exactPath(pattern string) (string, bool) {
	if p, ok := strings.CutSuffix(pattern, "{$}"); ok {
		return p, !strings.Contains(p, "{")
	}
	return pattern, !strings.Contains(pattern, "{") && !strings.HasSuffix(pattern, "/")
}

// literalPrefix is the text of a pattern before its first wildcard.
func literalPrefix(pattern string) string {
	p, _, _ := strings.Cut(pattern, "{")
	return p
}

// accessOf is the access a request for path needs.
func (rt *routing) accessOf(path string) routeAccess {
	if a, ok := rt.exact[path]; ok {
		return a
	}
	for _, p := range rt.prefix {
		if strings.HasPrefix(path, p.prefix) {
			return p.access
		}
	}
	return accessToken
}

func (s *Server) noEndpoint(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, notFound("no such endpoint %s", r.URL.Path))
}

// serveSignIn answers the single sign-on endpoints (the accessSignIn rows),
// before any other check and with their own methods (the token endpoint
// and sign-out are POSTs): 404 without a login block or for a path no row
// names, 405 for another method.
func (s *Server) serveSignIn(w http.ResponseWriter, r *http.Request) {
	cfg, ls := s.login.Current()
	if cfg == nil || ls == nil {
		s.writeError(w, r, notFound("this appliance has no single sign-on (its access file has no login block)"))
		return
	}
	rt, ok := s.rt.signIn[r.URL.Path]
	if !ok {
		s.writeError(w, r, notFound("no such endpoint %s", r.URL.Path))
		return
	}
	want := rt.method
	if r.Method != want && !(want == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", want)
		s.writeError(w, r, fmt.Errorf("%w: %s", errMethod, r.Method))
		return
	}
	rt.signIn(w, r, cfg, ls)
}

// need is what admission a route's access asks of access control (the
// sign-in endpoints never reach it, nor a mounted /metrics: as any path
// no row names, they would need a principal).
func need(a routeAccess) access.Need {
	switch a {
	case accessOpen:
		return access.NeedNothing
	case accessSigned:
		return access.NeedSignedURL
	case accessOCI:
		return access.NeedCredentials
	}
	return access.NeedPrincipal
}
