package harness

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
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
	{"tofu " + TofuVersion, "tofu-" + TofuVersion, 4},
	{"tofu " + TofuNewVersion, "tofu-" + TofuNewVersion, 2},
	{"CNCF distribution registry " + distributionVersion, "registry-slim-" + distributionVersion, 4},
	{"trivy " + TrivyVersion, "trivy-" + TrivyVersion, 5.5},
	{"govulncheck " + GovulncheckVersion, "govulncheck-" + GovulncheckVersion, 1},
	{"axe-core " + AxeVersion + " (npm)", "axe-core-" + AxeVersion, 0.1},
}

// suiteMinutes is about how long 'make test' takes on 2 cores once the
// tools are cached: the tests, then the fuzz targets.
const suiteMinutes = 15

// preflight prints what the suite will use and returns 0, or what is
// missing and 1.
func preflight(w io.Writer) int {
	cache, err := CacheDir()
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
		from := "found in " + SharedClients + ", unpacked into the test cache"
		switch {
		case os.Getenv(TerraformNewEnv) != "":
			from = "from " + TerraformNewEnv
		case !fileExists(SharedClients + "/terraform-" + TerraformNewVersion + "-linux-amd64.xz"):
			from = "from the test cache"
		}
		fmt.Fprintf(w, "  terraform %s: %s (%s)\n", TerraformNewVersion, tfNewPath, from)
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
