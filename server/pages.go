package server

import (
	"io"
	"net/http"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/protocol"
	"github.com/airgap/airgap/server/ui"
)

// uiApp is the server as the HTML pages see it (ui.App).
type uiApp struct{ s *Server }

func (a uiApp) Store() ui.Store   { return a.s.store }
func (a uiApp) Origins() []string { return a.s.answers.Origins() }

func (a uiApp) Scope(r *http.Request) ui.Scope {
	return a.s.answers.Scope(access.Of(r).Principal())
}

func (a uiApp) Viewer(r *http.Request) ui.Viewer {
	p := access.Of(r).Principal()
	v := ui.Viewer{Person: p.User(), SignOut: a.s.login.SignOutMAC(p)}
	if p != nil {
		v.Name = p.Name()
		if l := p.Login(); l != nil {
			v.Groups, v.Until = l.Groups, l.Expires
		}
	}
	return v
}

func (a uiApp) AccessControl() bool { return a.s.access != nil }
func (a uiApp) SignIn() bool        { return a.s.access.LoginConfig() != nil }
func (a uiApp) CAPEM() []byte       { return a.s.caPEM }
func (a uiApp) Tool() string        { return a.s.tool }

func (a uiApp) Counts() ui.Counts {
	if a.s.usage == nil {
		return nil // not a typed nil: the pages test for nil
	}
	return a.s.usage
}

func (a uiApp) WriteClientConfig(w io.Writer, base string, origins []string, tool, mode string, login bool) error {
	return protocol.WriteClientConfig(w, protocol.ClientConfigOptions{URL: base, Origins: origins, Tool: tool, Mode: mode, Login: login})
}

func (a uiApp) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	a.s.writeError(w, r, err)
}
func (a uiApp) NoteDenied(w http.ResponseWriter, addr string) { access.NoteDenied(w, addr) }
