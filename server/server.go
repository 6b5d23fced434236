package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/protocol"
)

// Store is what the server needs of a store (protocol.Store): read-only
// access to the current catalog and to blobs. (*store.Store satisfies it.)
type Store = protocol.Store

// Server is the appliance's handler: the route table in front of the
// protocol answers, the pages and the single sign-on.
type Server struct {
	store Store
	log   *slog.Logger
	caPEM []byte
	rt    *routing // the route table, compiled
	tool  string   // for the SBOM

	// access enforces the access file; nil: everyone may read
	// everything.
	access *access.AccessControl
	// login answers /oauth/…: single sign-on, when the access
	// file has a login block.
	login *access.LoginService
	// usage counts completed downloads; nil: not counted.
	usage *protocol.Usage
	// answers are the registry, mirror, download and OCI answers, and
	// each catalog snapshot's scopes and cache.
	answers *protocol.Answers
}

// Options configure New.
type Options struct {
	Logger *slog.Logger
	// CAPEM is offered at /ca.pem when not nil (the local CA certificate).
	CAPEM []byte
	// CacheBytes bounds the rendered-answer cache of one catalog snapshot;
	// zero means protocol.DefaultCacheBytes.
	CacheBytes int64
	// Access enforces an access file (NewAccessControl); nil: none.
	Access *access.AccessControl
	// Tool names the airgap serving, e.g. "airgap 1.2.3" (in the SBOM).
	Tool string
	// Usage counts package and archive downloads; nil: none.
	Usage *protocol.Usage
}

// New returns a Server reading st.
func New(st Store, opt Options) *Server {
	s := &Server{store: st, log: opt.Logger, caPEM: opt.CAPEM, access: opt.Access, tool: opt.Tool, usage: opt.Usage}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.access != nil {
		s.login = access.NewLoginService(s.access, s.log)
	}
	s.answers = protocol.New(st, protocol.Options{Logger: s.log, CacheBytes: opt.CacheBytes, Access: s.access, Usage: s.usage})
	s.rt = newRouting(s.routeTable())
	return s
}

// warm builds the lookup state of the store's current catalog now, so that
// no request pays for it (call it after the store reloads).
func (s *Server) warm() { s.answers.Warm() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.login != nil && strings.HasPrefix(r.URL.Path, "/oauth/") {
		s.serveSignIn(w, r) // its own methods (the token endpoint is a POST)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.writeError(w, r, fmt.Errorf("%w: %s", errMethod, r.Method))
		return
	}
	sn := s.answers.Snapshot()
	var ra *access.Admission
	if s.access != nil {
		if ra = s.access.Admit(w, r, sn.Access(), need(s.rt.accessOf(r.URL.Path))); ra == nil {
			return // refused
		}
	}
	// A JSON answer rendered before is served without routing.
	if s.answers.ServeCached(w, r, sn, ra.Principal()) {
		return
	}
	if ra != nil {
		r = access.WithAdmission(r, ra)
	}
	s.rt.mux.ServeHTTP(w, r)
}

// healthz answers load balancers. It is open, so with an access file it
// says nothing about the catalog.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.access != nil {
		writeJSON(w, r, map[string]any{"status": "ok"})
		return
	}
	cat := s.answers.Snapshot().Catalog()
	writeJSON(w, r, map[string]any{"status": "ok", "provider_versions": len(cat.Providers), "module_versions": len(cat.Modules)})
}

func (s *Server) caCert(w http.ResponseWriter, r *http.Request) {
	if s.caPEM == nil {
		s.writeError(w, r, notFound("this appliance does not use the built-in CA"))
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(s.caPEM)
}

// listenAddrs returns the IPs of a listen address for certificates: the host
// part if it is an IP, or loopback when it is empty.
func listenAddrs(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "0.0.0.0" || host == "::" {
		return []string{"127.0.0.1", "::1"}
	}
	return []string{host}
}
