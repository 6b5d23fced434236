package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/dist/registrytest"
)

// AxeVersion is the axe-core release the browser test runs on every page
// the appliance serves.
const AxeVersion = "4.14.1"

var (
	axeOnce sync.Once
	axeJS   string
	axeErr  string
)

// axeSource returns axe-core's axe.min.js, installing the npm package into
// the test cache ($AIRGAP_TEST_CACHE, default ~/.cache/airgap) on first use
// (npm, from the npm registry; about 2 s). A missing axe-core fails the
// test: the pages' accessibility must not go unchecked.
func axeSource(t *testing.T) string {
	t.Helper()
	axeOnce.Do(func() { axeJS, axeErr = installAxe() })
	if axeErr != "" {
		t.Fatalf("axe-core %s is required by the browser test and could not be installed: %s\nhint: it is installed with npm (apt-get install -y npm; .ci/run does) from the npm registry", AxeVersion, axeErr)
	}
	return axeJS
}

func installAxe() (string, string) {
	cache, err := CacheDir()
	if err != nil {
		return "", err.Error()
	}
	dir := filepath.Join(cache, "axe-core-"+AxeVersion)
	file := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
		return string(b), ""
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "npm is not installed"
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err.Error()
	}
	tmp, err := os.MkdirTemp(cache, ".axe-core-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--no-save", "--ignore-scripts", "axe-core@"+AxeVersion)
	cmd.Env = registrytest.UnguardedEnv() // from the npm registry, once
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("npm install axe-core@%s: %v\n%s", AxeVersion, err, out)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err.Error()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err.Error()
	}
	return string(b), ""
}

// axeViolation is one rule axe-core found broken, with the elements.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// AxeCheck runs axe-core (every rule it runs by default: WCAG 2.x A and AA
// and best practices) on the page loaded in ctx and fails the test for
// every violation.
func AxeCheck(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axeSource(t)+"\n;true"))
	var res string
	if err == nil {
		res, err = chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`,
			chromedp.EvalAwaitPromise))
	}
	if err != nil {
		t.Fatalf("axe-core on %s: %v", page, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(res), &vs); err != nil {
		t.Fatalf("axe-core on %s: %v\n%s", page, err, res)
	}
	for _, v := range vs {
		var targets []string
		for _, n := range v.Nodes {
			targets = append(targets, fmt.Sprint(n.Target...))
		}
		t.Errorf("axe-core on %s: %s (%s): %s: %s", page, v.ID, v.Impact, v.Help, strings.Join(targets, ", "))
	}
}
