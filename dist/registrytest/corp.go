package registrytest

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
)

// A company's side of the stand-in internet: what a connected laptop behind
// a corporate proxy registry reaches (Artifactory- or Nexus-style), a
// network mirror, and the site's own git server.
const (
	// ProxyHost serves the registry protocol of registry.terraform.io
	// under ProxyBase, every URL rewritten to itself (providers.v1 at
	// ProxyBase+"v1/providers/", modules.v1 at ProxyBase+"v1/modules/"),
	// for a CLI config host block. API calls need ProxyToken.
	ProxyHost  = "proxy.corp.example"
	ProxyBase  = "https://" + ProxyHost + "/api/terraform/tfc/"
	ProxyToken = "pr0xy-t0ken"
	// MirrorHost serves the provider network mirror protocol of every
	// provider on the stand-in at MirrorURL; archives under MirrorHost's
	// /terraform/files/.
	MirrorHost = "mirror.corp.example"
	MirrorURL  = "https://" + MirrorHost + "/terraform/providers/"
	// GitSiteHost is the site's own git server (smart HTTP), sharing
	// GitRoot with github.com: https://git.site.example/<repo>.git.
	GitSiteHost = "git.site.example"
)

// Corp holds the switches of the company's hosts (hostile variants).
type Corp struct {
	// ProxyForeign makes the proxy answer provider downloads with the
	// origin's own URLs (releases.hashicorp.com) instead of its own.
	ProxyForeign atomic.Bool
	// MirrorTamper makes the mirror serve altered bytes for this package
	// filename (its listed hashes stay the true ones).
	MirrorTamper atomic.Value // string
	// MirrorHashes says which hashes the mirror lists: "both" (default),
	// "h1", "zh" or "none".
	MirrorHashes atomic.Value // string
	// MirrorForeign makes the mirror's archive URLs point at another host.
	MirrorForeign atomic.Bool
}

// Block makes host unreachable on the stand-in internet: the CONNECT proxy
// refuses it (502, as a corporate proxy refuses a host it does not allow)
// and Transport cannot dial it.
func (in *Internet) Block(host string) { in.blocked.Store(host, true) }

// Unblock undoes Block.
func (in *Internet) Unblock(host string) { in.blocked.Delete(host) }

func (in *Internet) isBlocked(host string) bool {
	_, ok := in.blocked.Load(host)
	return ok
}

// corp answers for ProxyHost and MirrorHost.
func (in *Internet) corp(w http.ResponseWriter, r *http.Request, host string) {
	switch {
	case host == ProxyHost && strings.HasPrefix(r.URL.Path, "/dl/"):
		in.serveFile(w, r, "releases.hashicorp.com/"+strings.TrimPrefix(r.URL.Path, "/dl/"), false)
	case host == ProxyHost && strings.HasPrefix(r.URL.Path, "/arch/"):
		in.serveFile(w, r, "archives.example.com/"+strings.TrimPrefix(r.URL.Path, "/arch/"), false)
	case host == ProxyHost:
		if r.Header.Get("Authorization") != "Bearer "+ProxyToken {
			http.Error(w, `{"errors":["unauthorized"]}`, http.StatusUnauthorized)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/api/terraform/tfc")
		if !ok {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = rest
		in.registryAs(w, r2, "registry.terraform.io", false, in.proxyURLs)
	case host == MirrorHost && strings.HasPrefix(r.URL.Path, "/terraform/files/"):
		name := strings.TrimPrefix(r.URL.Path, "/terraform/files/")
		t, _ := in.Corp.MirrorTamper.Load().(string)
		in.serveFile(w, r, "releases.hashicorp.com/"+name, t != "" && filepath.Base(name) == t)
	case host == MirrorHost && strings.HasPrefix(r.URL.Path, "/terraform/providers/"):
		in.mirror(w, r, strings.TrimPrefix(r.URL.Path, "/terraform/providers/"))
	default:
		http.NotFound(w, r)
	}
}

// proxyURLs rewrites a download document's URLs to the proxy, as a
// remote repository does (unless ProxyForeign).
func (in *Internet) proxyURLs(doc map[string]any) {
	if in.Corp.ProxyForeign.Load() {
		return
	}
	for _, k := range []string{"download_url", "shasums_url", "shasums_signature_url"} {
		if s, ok := doc[k].(string); ok {
			doc[k] = "https://" + ProxyHost + "/dl/" + strings.TrimPrefix(s, "https://releases.hashicorp.com/")
		}
	}
}

// mirror answers the network mirror protocol: HOST/NS/TYPE/index.json and
// HOST/NS/TYPE/VERSION.json.
func (in *Internet) mirror(w http.ResponseWriter, r *http.Request, p string) {
	parts := strings.Split(p, "/")
	if len(parts) != 4 {
		http.NotFound(w, r)
		return
	}
	host, ns, typ, file := parts[0], parts[1], parts[2], parts[3]
	in.mu.Lock()
	vs := in.providers[host+"/"+ns+"/"+typ]
	in.mu.Unlock()
	if len(vs) == 0 {
		http.NotFound(w, r)
		return
	}
	if file == "index.json" {
		out := map[string]any{}
		for _, v := range vs {
			out[v.Version] = map[string]any{}
		}
		writeJSON(w, map[string]any{"versions": out})
		return
	}
	ver, ok := strings.CutSuffix(file, ".json")
	for _, v := range vs {
		if !ok || v.Version != ver {
			continue
		}
		which, _ := in.Corp.MirrorHashes.Load().(string)
		archives := map[string]any{}
		for _, pk := range v.Packages {
			u := "https://" + MirrorHost + "/terraform/files/" + path(host, typ, ver) + "/" + pk.Filename
			if in.Corp.MirrorForeign.Load() {
				u = "https://releases.hashicorp.com/" + path(host, typ, ver) + "/" + pk.Filename
			}
			hashes := []string{}
			if which == "" || which == "both" || which == "h1" {
				hashes = append(hashes, pk.H1)
			}
			if which == "" || which == "both" || which == "zh" {
				hashes = append(hashes, pk.ZH())
			}
			archives[pk.Platform()] = map[string]any{"url": u, "hashes": hashes}
		}
		writeJSON(w, map[string]any{"archives": archives})
		return
	}
	http.NotFound(w, r)
}

// serveFile serves the published file key (host/path); tampered, with one
// byte flipped.
func (in *Internet) serveFile(w http.ResponseWriter, r *http.Request, key string, tampered bool) {
	in.mu.Lock()
	f, ok := in.files[key]
	in.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !tampered {
		http.ServeFile(w, r, f)
		return
	}
	b, _ := os.ReadFile(f)
	b[len(b)/2] ^= 0xff
	w.Header().Set("Content-Type", "application/zip")
	w.Write(b)
}

// AddGitRelease commits files on top of the repository github.com/<repo>
// (also https://git.site.example/<repo>.git), creating it if it does not
// exist, and tags the commit: one release of a module kept in git.
func (in *Internet) AddGitRelease(t testing.TB, repo, tag string, files map[string]string) {
	t.Helper()
	bare := filepath.Join(in.GitRoot, repo+".git")
	if _, err := os.Stat(bare); err != nil {
		in.AddGitRepo(t, repo, tag, files)
		return
	}
	work := filepath.Join(in.Dir, "gitwork", repo)
	for n, c := range files {
		bundletest.WriteFile(t, filepath.Join(work, n), []byte(c))
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "release " + tag}, {"tag", tag}, {"push", "-q", bare, "HEAD:main", tag}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
			"GIT_AUTHOR_DATE=2024-01-02T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-02T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
