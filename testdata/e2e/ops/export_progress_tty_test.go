package ops

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestExportProgressOnTerminal runs 'airgap export' of four throttled
// packages (one at a time) on a real terminal (tmux) and watches the
// screen: the live line shows packages done of the total with the share,
// bytes, rate, an ETA once a package is done, and the downloads under way;
// a line whose packages are all done shows neither a download nor an ETA.
func TestExportProgressOnTerminal(t *testing.T) {
	work := t.TempDir()
	in := registrytest.World(t)
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0"} {
		in.AddProvider(t, "registry.terraform.io", "example", "slow", v, []string{"linux_amd64"}, 600<<10)
	}
	in.Throttle.Store(1 << 20)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"example/slow\" {\n  all = true\n}\n"), 0o644)
	var env []string
	for _, kv := range append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc")) {
		env = append(env, "'"+kv+"'")
	}
	screenOf := harness.OnTerminal(t, 200, 40, fmt.Sprintf("cd %s && env %s %s export --manifest m.hcl --sign-key k/site.key.asc --out b.bundle --cache cache --jobs 1",
		work, strings.Join(env, " "), harness.Bin))
	running := regexp.MustCompile(`[1-3]/4 packages \(\d+%\)  [0-9.]+ [KMG]?i?B  [0-9.]+ [KMG]?i?B/s  ETA \S+  ↓ example/slow 1\.\d\.0 linux_amd64`)
	status := regexp.MustCompile(`(?m)^\d/4 packages.*$`)
	var seen string
	var screen string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		screen = screenOf()
		if m := running.FindString(screen); m != "" && seen == "" {
			seen = m
		}
		for _, l := range status.FindAllString(screen, -1) {
			if strings.HasPrefix(l, "4/4") && (strings.Contains(l, "↓") || strings.Contains(l, "ETA")) {
				t.Errorf("with every package done the line still shows %q", l)
			}
		}
		if strings.Contains(screen, "EXIT=") {
			break
		}
	}
	if !strings.Contains(screen, "EXIT=0") {
		t.Fatalf("the export did not finish well:\n%s", screen)
	}
	if seen == "" {
		t.Fatalf("no live line with the total, an ETA and the download under way was seen; last screen:\n%s", screen)
	}
	t.Logf("live line seen: %q", seen)
}
