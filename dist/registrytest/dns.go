package registrytest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// DNSOverride starts a CONNECT proxy that tunnels every name to addr, the
// way a site's DNS override points registry.terraform.io (and every other
// name the clients ask for) at the appliance; nothing else is reachable
// through it. Give its URL as HTTPS_PROXY.
func DNSOverride(t testing.TB, addr string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
			return
		}
		splice(w, addr)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
