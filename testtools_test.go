package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What the test suite needs, said before it runs: 'make test' runs the
// test binary with AIRGAP_TEST_PREFLIGHT=1 first (TestMain), which prints
// the tools it found, what the first run builds or installs into the test
// cache and about how long that takes, and stops with what to install when
// something is missing — rather than failing one test after another
// minutes later.

// preflightEnv, set to 1, makes TestMain run preflight instead of tests.
const preflightEnv = "AIRGAP_TEST_PREFLIGHT"

// systemTools are the programs the tests run from PATH, and where they
// come from on Debian (.ci/run installs them).
var systemTools = []struct{ name, from string }{
	{"terraform", "terraform 1.11 (HashiCorp's release; the machine image ships it in /usr/local/bin)"},
	{"git", "apt-get install -y git"},
	{"bash", "apt-get install -y bash"},
	{"xz", "apt-get install -y xz-utils"},
	{"tmux", "apt-get install -y tmux"},
	{"promtool", "apt-get install -y prometheus"},
	{"systemd-analyze", "apt-get install -y systemd"},
	{"haproxy", "apt-get install -y haproxy"},
	{"prlimit", "apt-get install -y util-linux"},
	{"chromium", "apt-get install -y chromium"},
	{"npm", "apt-get install -y npm"},
}

// cacheTools are what the tests build (from the Go module proxy) or
// install (npm) into the test cache the first time, the name each has
// there, and about how long each takes on 2 cores.
var cacheTools = []struct {
	what, name string
	minutes    float64
}{
	{"tofu " + tofuVersion, "tofu-" + tofuVersion, 4},
	{"tofu " + tofuNewVersion, "tofu-" + tofuNewVersion, 2},
	{"CNCF distribution registry " + distributionVersion, "registry-slim-" + distributionVersion, 4},
	{"trivy " + trivyVersion, "trivy-" + trivyVersion, 5.5},
	{"govulncheck " + govulncheckVersion, "govulncheck-" + govulncheckVersion, 1},
	{"axe-core " + axeVersion + " (npm)", "axe-core-" + axeVersion, 0.1},
}

// suiteMinutes is about how long 'make test' takes on 2 cores once the
// tools are cached: the tests, then the fuzz targets.
const suiteMinutes = 15

// preflight prints what the suite will use and returns 0, or what is
// missing and 1.
func preflight(w io.Writer) int {
	cache, err := testCacheDir()
	if err != nil {
		fmt.Fprintf(w, "make test: no test cache: %v\n", err)
		return 1
	}
	var found, missing []string
	for _, tool := range systemTools {
		if p, err := exec.LookPath(tool.name); err == nil {
			found = append(found, p)
		} else {
			missing = append(missing, fmt.Sprintf("  %s is not on PATH: %s", tool.name, tool.from))
		}
	}
	fmt.Fprintf(w, "make test: the end-to-end tests drive real tools.\n  on PATH: %s\n", strings.Join(found, " "))
	lookTerraformNew()
	if tfNewErr != "" {
		missing = append(missing, "  "+strings.ReplaceAll(tfNewErr, "\n", "\n  "))
	} else {
		from := "found in " + sharedClients + ", unpacked into the test cache"
		switch {
		case os.Getenv(terraformNewEnv) != "":
			from = "from " + terraformNewEnv
		case !fileExists(sharedClients + "/terraform-" + terraformNewVersion + "-linux-amd64.xz"):
			from = "from the test cache"
		}
		fmt.Fprintf(w, "  terraform %s: %s (%s)\n", terraformNewVersion, tfNewPath, from)
	}
	fmt.Fprintf(w, "  built from the Go module proxy or installed with npm into %s the first time:\n", cache)
	var todo []string
	var minutes float64
	for _, tool := range cacheTools {
		state := "cached"
		if !fileExists(cache + "/" + tool.name) {
			verb := "to build now: "
			if strings.HasSuffix(tool.what, "(npm)") {
				verb = "to install now: "
			}
			state = verb + aboutMinutes(tool.minutes)
			todo = append(todo, tool.what)
			minutes += tool.minutes
		}
		fmt.Fprintf(w, "    %-40s %s\n", tool.what, state)
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "Missing, so the suite would fail:\n%s\n", strings.Join(missing, "\n"))
		return 1
	}
	if len(todo) > 0 {
		fmt.Fprintf(w, "This first run builds %d tools before their tests (%s more on 2 cores); the suite then takes about %d minutes.\n",
			len(todo), aboutMinutes(minutes), suiteMinutes)
	} else {
		fmt.Fprintf(w, "Everything is cached: the suite takes about %d minutes on 2 cores.\n", suiteMinutes)
	}
	return 0
}

func aboutMinutes(m float64) string {
	switch {
	case m < 0.5:
		return "a few seconds"
	case m < 1.5:
		return "about a minute"
	}
	return fmt.Sprintf("about %.0f minutes", m)
}

// TestPreflight: what 'make test' prints first, from the test binary
// itself. With an empty test cache it lists every tool it will build and
// how long the first run takes; with a wrong Terraform 1.15.9 it stops
// (exit 1) saying what is missing and what to do.
func TestPreflight(t *testing.T) {
	work := t.TempDir()
	fake := func(version string) string {
		p := filepath.Join(work, "terraform-"+version)
		os.WriteFile(p, []byte("#!/bin/sh\necho '{\"terraform_version\":\""+version+"\"}'\n"), 0o755)
		return p
	}
	run := func(tf string) (string, int) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), preflightEnv+"=1", "AIRGAP_TEST_CACHE="+filepath.Join(work, "cache"), terraformNewEnv+"="+tf)
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}
	out, code := run(fake(terraformNewVersion))
	if code != 0 || !strings.Contains(out, "terraform "+terraformNewVersion+": "+filepath.Join(work, "terraform-"+terraformNewVersion)+" (from "+terraformNewEnv+")") ||
		!strings.Contains(out, fmt.Sprintf("This first run builds %d tools", len(cacheTools))) || strings.Count(out, " now: ") != len(cacheTools) {
		t.Errorf("preflight with an empty cache: exit %d\n%s", code, out)
	}
	out, code = run(fake("1.11.4"))
	if code != 1 || !strings.Contains(out, "Missing, so the suite would fail:") || !strings.Contains(out, "is Terraform 1.11.4, not "+terraformNewVersion) {
		t.Errorf("preflight with the wrong Terraform: exit %d\n%s", code, out)
	}
}
