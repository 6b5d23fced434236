package registrytest

import (
	"net/http"
	"sync/atomic"

	"github.com/airgap/airgap/bundle/bundletest"
)

// Handle makes the stand-in answer requests for exactly hostPath
// ("releases.hashicorp.com/some/file.zip") with h, ahead of everything else:
// a way to make one URL hostile.
func (in *Internet) Handle(hostPath string, h http.Handler) {
	in.handlers.Store(hostPath, h)
}

// PublishAlso publishes an already built provider version under a second
// address, host/ns/<bp's type>, with byte-identical packages, SHA256SUMS and
// signature (as registry.opentofu.org serves many of HashiCorp's builds, and
// as a namespace alias would). Its files are also reachable under host's
// download paths.
func (in *Internet) PublishAlso(bp *bundletest.BuiltProvider, host, ns string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	key := host + "/" + ns + "/" + bp.Type
	in.providers[key] = append(in.providers[key], bp)
	for name, f := range bp.Files {
		in.files["releases.hashicorp.com/"+path(host, bp.Type, bp.Version)+"/"+name] = f
	}
}

// PackageURL is where a provider package published on host is downloaded
// from (after the opentofu-style relative redirect), for Handle.
func PackageURL(host, typ, version, filename string) string {
	return "releases.hashicorp.com/" + path(host, typ, version) + "/" + filename
}

// Counter is a hostile handler that counts the requests it got and the bytes
// it sent.
type Counter struct {
	Requests atomic.Int64
	Sent     atomic.Int64
	serve    func(c *Counter, w http.ResponseWriter, r *http.Request)
}

func (c *Counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.Requests.Add(1)
	c.serve(c, w, r)
}

// Endless streams zeros without end and without a Content-Length, as a
// broken or malicious server would, until the client goes away.
func Endless() *Counter {
	return &Counter{serve: func(c *Counter, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		buf := make([]byte, 32<<10)
		for r.Context().Err() == nil {
			n, err := w.Write(buf)
			c.Sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}}
}

// RedirectLoop redirects every request to itself.
func RedirectLoop() *Counter {
	return &Counter{serve: func(c *Counter, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	}}
}

// Status answers every request with code.
func Status(code int) *Counter {
	return &Counter{serve: func(c *Counter, w http.ResponseWriter, r *http.Request) {
		http.Error(w, http.StatusText(code), code)
	}}
}

// RedirectTo redirects every request to target (e.g. an ftp:// URL).
func RedirectTo(target string) *Counter {
	return &Counter{serve: func(c *Counter, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusFound)
	}}
}

// JSON answers every request with doc as application/json.
func JSON(doc any) *Counter {
	return &Counter{serve: func(c *Counter, w http.ResponseWriter, r *http.Request) {
		writeJSON(w, doc)
	}}
}
