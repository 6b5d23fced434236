package ops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestServeLogFile: serve's buffered log (--log-file) loses no access
// line across a logrotate-style rotation (mv, then SIGHUP) and SIGTERM:
// every request made before the rotation is in the rotated file, every one
// after in the new file, each line whole.
func TestServeLogFile(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	port := harness.FreePort(t)
	logPath := filepath.Join(t.TempDir(), "serve.log")
	srv := harness.Serve(t, harness.ServeOptions{Store: root, Port: port, Args: []string{"--log-file", logPath}})
	cmd, stderr := srv.Cmd, srv.Logs
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("serve log:\n%s", b)
		}
	})
	base := fmt.Sprintf("https://localhost:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "msg=serving") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not log that it is serving")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl, _, _ := harness.CAClient(t, root)
	requests := func(tag string, n int) {
		var wg sync.WaitGroup
		for c := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c; i < n; i += 4 {
					if resp, _ := harness.HTTPGet(t, cl, fmt.Sprintf("%s/v1/providers/hashicorp/random/versions?%s", base, tag), "User-Agent", fmt.Sprintf("%s-%d", tag, i)); resp.StatusCode != 200 {
						t.Errorf("%s request %d: %s", tag, i, resp.Status)
					}
				}
			}()
		}
		wg.Wait()
	}
	const n = 400
	requests("before", n)
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	for {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "SIGHUP: configuration reloaded") {
			break
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatal("no reload line in the reopened log")
		}
		time.Sleep(50 * time.Millisecond)
	}
	requests("after", n)
	cmd.Process.Signal(syscall.SIGTERM)
	waitExited(t, srv)
	for _, c := range []struct {
		file, tag, other string
	}{{logPath + ".1", "before", "after"}, {logPath, "after", "before"}} {
		b, _ := os.ReadFile(c.file)
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !strings.HasPrefix(l, "time=") {
				t.Fatalf("%s: a cut or mixed line: %q", c.file, l)
			}
			if strings.Contains(l, "user_agent="+c.other+"-") {
				t.Errorf("%s holds a line of the requests made %s the rotation: %s", c.file, c.other, l)
			}
			if _, ua, ok := strings.Cut(l, "user_agent="+c.tag+"-"); ok && strings.Contains(l, "msg=request") {
				seen[ua] = true
			}
		}
		if len(seen) != n {
			t.Errorf("%s: %d access lines of the %d requests made %s the rotation", c.file, len(seen), n, c.tag)
		}
	}
	if s := stderr.String(); strings.TrimSpace(s) != "" {
		t.Errorf("serve wrote to stderr with --log-file: %s", s)
	}
}
