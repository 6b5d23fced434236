package station

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

var (
	trivyOnce, vulnOnce sync.Once
	trivyPath, vulnPath string
	trivyErr, vulnErr   string
)

// trivyBin is trivy built as the project measured it: 'go get -tool' in a
// scratch module, then GOEXPERIMENT=jsonv2 (it needs encoding/json/v2)
// CGO_ENABLED=0 go build.
func trivyBin(t *testing.T) string {
	t.Helper()
	trivyOnce.Do(func() {
		trivyPath, trivyErr = buildGoTool("github.com/aquasecurity/trivy/cmd/trivy", harness.TrivyVersion, "trivy-"+harness.TrivyVersion, "GOEXPERIMENT=jsonv2")
	})
	if trivyErr != "" {
		t.Fatalf("trivy %s is required by the gate tests and could not be built: %s\nhint: it is built from the Go module proxy (github.com/aquasecurity/trivy@v%s, about 5.5 minutes on 2 cores); check that the proxy is reachable", harness.TrivyVersion, trivyErr, harness.TrivyVersion)
	}
	return trivyPath
}

// govulncheckBin is golang.org/x/vuln's govulncheck.
func govulncheckBin(t *testing.T) string {
	t.Helper()
	vulnOnce.Do(func() {
		vulnPath, vulnErr = buildGoTool("golang.org/x/vuln/cmd/govulncheck", harness.GovulncheckVersion, "govulncheck-"+harness.GovulncheckVersion)
	})
	if vulnErr != "" {
		t.Fatalf("govulncheck %s is required by the gate tests and could not be built: %s\nhint: it is built from the Go module proxy (golang.org/x/vuln@v%s)", harness.GovulncheckVersion, vulnErr, harness.GovulncheckVersion)
	}
	return vulnPath
}

// buildGoTool builds pkg (of its module at v) into the test cache as name, once: in
// a scratch module, 'go get -tool pkg@v' then 'go build -trimpath' with
// CGO_ENABLED=0 and env. It returns the binary's path or an error text.
// The go commands reach the Go module proxy, outside the network guard
// (registrytest.UnguardedEnv).
func buildGoTool(pkg, v, name string, env ...string) (string, string) {
	bin, cached, errText := harness.CacheBin(name)
	if cached || errText != "" {
		return bin, errText
	}
	tmp, err := os.MkdirTemp("", "gotool-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module scratch\n\ngo 1.26\n"), 0o644); err != nil {
		return "", err.Error()
	}
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = tmp
		cmd.Env = append(append(registrytest.UnguardedEnv(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0"), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "go " + args[0] + " " + pkg + ": " + err.Error() + "\n" + string(out)
		}
		return ""
	}
	if e := run("get", "-tool", pkg+"@v"+v); e != "" {
		return "", e
	}
	part := fmt.Sprintf("%s.partial-%d", bin, os.Getpid()) // another test process may build it at the same time
	if e := run("build", "-trimpath", "-o", part, pkg); e != "" {
		os.Remove(part)
		return "", e
	}
	if err := os.Rename(part, bin); err != nil {
		return "", err.Error()
	}
	return bin, ""
}

// TestScannersBuild makes sure the scanners are there for the gate tests
// (and builds them once for them).
func TestScannersBuild(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ bin, arg string }{{trivyBin(t), "--version"}, {govulncheckBin(t), "-version"}} {
		cmd := exec.Command(c.bin, c.arg)
		// An empty home of its own, removed without failing the test: the
		// go command govulncheck runs may leave a telemetry writer behind
		// that is still filling HOME/.config/go/telemetry when the test ends.
		home, err := os.MkdirTemp("", "scanner-home-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", c.bin, c.arg, err, out)
		}
	}
}
