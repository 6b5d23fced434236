package ops

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestImportProgressOnTerminal runs 'airgap import' of a 192 MiB bundle on a
// real terminal (tmux) and watches the screen: a live line with bytes done
// of the total, the percentage and the rate appears while it runs, and is
// gone when the summary is printed. tmux is required (.ci/run installs it).
func TestImportProgressOnTerminal(t *testing.T) {
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.NewSet()
	// 36 packages of 16 MiB: about 0.9 s of import on the project's 2-core
	// machine (about 700 MiB/s), so the line drawn from 200 ms on stays up
	// long enough for the 30 ms screen polls below to see it. With 12 the
	// import was over about 85 ms after the first line.
	for i := 0; i < 36; i++ {
		set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "p", fmt.Sprint(i)), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: fmt.Sprintf("p%02d", i), Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 16 << 20,
		}))
	}
	big := filepath.Join(work, "big.bundle")
	set.WriteBundleFile(t, big, signer, bundle.CompressionNone)
	os.RemoveAll(filepath.Join(work, "p"))

	screenOf := harness.OnTerminal(t, 160, 60, fmt.Sprintf("%s import --keyring %s --store %s %s", harness.Bin, keyring, filepath.Join(work, "store"), big))
	live := regexp.MustCompile(`import big\.bundle  [0-9.]+ [KMG]?i?B of 576\.\d MiB \(\d+%\)  [0-9.]+ [KMG]?i?B/s(  ETA \S+)?`)
	var seen, screen string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		screen = screenOf()
		if m := live.FindString(screen); m != "" && seen == "" {
			seen = m
		}
		if strings.Contains(screen, "EXIT=") {
			break
		}
		time.Sleep(30 * time.Millisecond)
	}
	if !strings.Contains(screen, "EXIT=0") || !strings.Contains(screen, "imported bundle") {
		t.Fatalf("the import did not finish well:\n%s", screen)
	}
	if seen == "" {
		t.Fatalf("no live progress line was seen on the terminal; last screen:\n%s", screen)
	}
	t.Logf("live line seen: %q", seen)
	if live.MatchString(screen) {
		t.Errorf("the progress line was left on the screen after the summary:\n%s", screen)
	}
}
