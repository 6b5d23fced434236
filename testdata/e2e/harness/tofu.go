package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// TofuVersion is the OpenTofu release most end-to-end tests drive; the
// client matrix (client_matrix_test.go) adds tofuNewVersion.
const (
	TofuVersion    = "1.11.14"
	TofuNewVersion = "1.12.6"
)

var tofuBuilds sync.Map // version -> *tofuBuild

type tofuBuild struct {
	once      sync.Once
	path, err string
}

// TofuBin returns the path of a real tofu binary (tofuVersion), building it
// from the OpenTofu Go module on first use and caching it in
// $AIRGAP_TEST_CACHE (default ~/.cache/airgap). OpenTofu's go.mod has a
// replace directive, so 'go install …@version' cannot build it: the module
// is downloaded and ./cmd/tofu built inside it. A missing tofu fails the
// test: the OpenTofu client must not go untested.
func TofuBin(t *testing.T) string { return TofuBinVersion(t, TofuVersion) }

// TofuBinVersion is tofuBin for OpenTofu version v.
func TofuBinVersion(t *testing.T, v string) string {
	t.Helper()
	path, errText := buildTofu(v)
	if errText != "" {
		t.Fatalf("tofu %s is required by the end-to-end tests and could not be built: %s\nhint: it is built from the Go module proxy (go mod download github.com/opentofu/opentofu@v%s); check that the proxy is reachable", v, errText, v)
	}
	return path
}

// buildTofu builds (once per test binary) and caches tofu v.
func buildTofu(v string) (string, string) {
	b, _ := tofuBuilds.LoadOrStore(v, &tofuBuild{})
	tb := b.(*tofuBuild)
	tb.once.Do(func() {
		tb.path, tb.err = BuildFromModule("github.com/opentofu/opentofu", v, "./cmd/tofu", "tofu-"+v, "")
	})
	return tb.path, tb.err
}

// CacheDir is where the tests keep tools they build or install:
// $AIRGAP_TEST_CACHE, default ~/.cache/airgap.
func CacheDir() (string, error) {
	if c := os.Getenv("AIRGAP_TEST_CACHE"); c != "" {
		return c, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "airgap"), nil
}

// BuildFromModule builds pkg of module@v (v without "v") into the test
// cache as name, once; it returns the binary's path or an error text.
// mainSrc, if set, is built in place of pkg: a main package in a module of
// its own that requires module@v, to leave out parts a test does not need.
// The go commands reach the Go module proxy, outside the network guard
// (registrytest.UnguardedEnv).
func BuildFromModule(module, v, pkg, name, mainSrc string) (string, string) {
	bin, cached, errText := CacheBin(name)
	if cached || errText != "" {
		return bin, errText
	}
	// 'go mod download' of a module at a version needs a module context
	// that is not ours (it must not touch airgap's go.mod).
	tmp, err := os.MkdirTemp("", "gomod-dl-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module dl\n\ngo 1.24\n"), 0o644); err != nil {
		return "", err.Error()
	}
	dl := exec.Command("go", "mod", "download", "-json", module+"@v"+v)
	dl.Dir = tmp
	dl.Env = append(registrytest.UnguardedEnv(), "GOFLAGS=-mod=mod")
	out, err := dl.Output()
	if err != nil {
		return "", "go mod download: " + err.Error() + ": " + string(out)
	}
	var info struct{ Dir, Sum, GoModSum, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", "go mod download gave no directory: " + string(out) + info.Error
	}
	part := fmt.Sprintf("%s.partial-%d", bin, os.Getpid()) // another test process may build it at the same time
	build := exec.Command("go", "build", "-trimpath", "-o", part, pkg)
	build.Dir = info.Dir
	if mainSrc != "" {
		// A module of its own that requires module@v, with module's go.sum.
		sums, err := os.ReadFile(filepath.Join(info.Dir, "go.sum"))
		if err != nil {
			return "", err.Error()
		}
		sums = fmt.Appendf(sums, "%s v%s %s\n%s v%s/go.mod %s\n", module, v, info.Sum, module, v, info.GoModSum)
		os.WriteFile(filepath.Join(tmp, "go.sum"), sums, 0o644)
		os.WriteFile(filepath.Join(tmp, "go.mod"), fmt.Appendf(nil, "module slim\n\ngo 1.24\n\nrequire %s v%s\n", module, v), 0o644)
		os.WriteFile(filepath.Join(tmp, "main.go"), []byte(mainSrc), 0o644)
		build = exec.Command("go", "build", "-trimpath", "-o", part, ".")
		build.Dir = tmp
	}
	build.Env = append(registrytest.UnguardedEnv(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.Remove(part)
		return "", "go build " + pkg + ": " + err.Error() + "\n" + string(out)
	}
	if err := os.Rename(part, bin); err != nil {
		return "", err.Error()
	}
	return bin, ""
}

// CacheBin is where the test tool name is cached (testCacheDir,
// created if need be) and whether it is there already (an executable
// file).
func CacheBin(name string) (bin string, cached bool, errText string) {
	cache, err := CacheDir()
	if err != nil {
		return "", false, err.Error()
	}
	bin = filepath.Join(cache, name)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return bin, true, ""
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", false, err.Error()
	}
	return bin, false, ""
}
