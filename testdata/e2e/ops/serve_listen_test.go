package ops

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestServePortInUse: a port held by another program fails serve at once,
// before anything is set up or logged, naming the listener (main or
// metrics), the setting that chose the address (flag or variable) and what
// to do; the store is left as it was.
func TestServePortInUse(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	os.RemoveAll(filepath.Join(root, "tls")) // so that "nothing set up" shows
	before := bundletest.Snapshot(t, root)
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"main", nil, []string{"--listen", addr},
			[]string{"cannot open the main HTTPS listener on " + addr + " (--listen): address already in use", "hint: another program holds the port", "give --listen another address"}},
		{"main from the environment", []string{"AIRGAP_LISTEN=" + addr}, nil,
			[]string{"the main HTTPS listener on " + addr + " (AIRGAP_LISTEN)", "give AIRGAP_LISTEN another address"}},
		{"metrics", nil, []string{"--listen", "127.0.0.1:0", "--metrics-listen", addr},
			[]string{"cannot open the metrics listener on " + addr + " (--metrics-listen): address already in use", "give --metrics-listen another address"}},
	}
	for _, c := range cases {
		stdout, stderr, code := harness.RunSplit(t, t.TempDir(), c.env, append([]string{"serve", "--store", root}, c.args...)...)
		if code != 1 || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q", c.name, code, stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, stderr)
			}
		}
		if strings.Contains(stderr, "level=") || strings.Count(strings.TrimSpace(stderr), "\n") != 1 {
			t.Errorf("%s: want the two lines of the message and nothing before them:\n%s", c.name, stderr)
		}
		bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
	}
}
