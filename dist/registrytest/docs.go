package registrytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
)

// SetProviderSource makes registry.terraform.io's version documents of
// host/ns/typ (GET /v1/providers/NS/TYPE/VERSION) name src as the
// provider's source repository, as the real registry does.
func (in *Internet) SetProviderSource(host, ns, typ, src string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sources[host+"/"+ns+"/"+typ] = src
}

// Release is one tagged commit of a repository: its tag and the files it
// changes (a nil value removes the file).
type Release struct {
	Tag   string
	Files map[string]*string
}

// Str is a pointer to s, for Release.Files.
func Str(s string) *string { return &s }

// AddTaggedRepo creates a bare repository github.com/<repo> (reachable with
// and without ".git") with one commit per release, in order, each tagged;
// the server side allows partial clones (uploadpack.allowFilter) and
// fetching any commit or blob by id, as GitHub does. build, if set, runs
// in the work tree before each release's commit (for links and other
// things Files cannot say).
func (in *Internet) AddTaggedRepo(t testing.TB, repo string, releases []Release, build func(work, tag string)) {
	t.Helper()
	work := filepath.Join(in.Dir, "gitwork", repo)
	os.MkdirAll(work, 0o755)
	run := func(dir string, args ...string) { gitIn(t, dir, args...) }
	run(work, "init", "-q", "-b", "main")
	run(work, "config", "core.precomposeunicode", "false")
	for _, r := range releases {
		for n, c := range r.Files {
			if c == nil {
				os.Remove(filepath.Join(work, n))
				continue
			}
			bundletest.WriteFile(t, filepath.Join(work, n), []byte(*c))
		}
		if build != nil {
			build(work, r.Tag)
		}
		run(work, "add", "-A")
		run(work, "commit", "-q", "--allow-empty", "-m", "release "+r.Tag)
		run(work, "tag", r.Tag)
	}
	bare := filepath.Join(in.GitRoot, repo+".git")
	run(in.Dir, "clone", "-q", "--bare", work, bare)
	for _, kv := range [][2]string{{"uploadpack.allowFilter", "true"}, {"uploadpack.allowAnySHA1InWant", "true"}} {
		run(bare, "config", kv[0], kv[1])
	}
	os.Symlink(filepath.Base(bare), filepath.Join(in.GitRoot, repo))
}
