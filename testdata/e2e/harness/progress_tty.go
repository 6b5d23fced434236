package harness

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// OnTerminal runs the shell command script on a real terminal of width x
// height (a tmux session, ended with the test) and returns a function that
// captures its screen; "EXIT=<status>" is printed when the command ends.
// tmux is required (.ci/run installs it).
func OnTerminal(t *testing.T, width, height int, script string) (screen func() string) {
	t.Helper()
	screen, _ = OnTerminalKeys(t, width, height, script)
	return screen
}

// OnTerminalKeys is onTerminal that also returns a function typing keys
// (tmux send-keys names: "C-c", "q", "Enter") into the terminal.
func OnTerminalKeys(t *testing.T, width, height int, script string) (screen func() string, keys func(...string)) {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is required for this test (apt-get install -y tmux)")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tm("new-session", "-d", "-s", "t", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "sh", "-c", script+"; echo EXIT=$?; sleep 60"); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { tm("kill-server") })
	return func() string { s, _ := tm("capture-pane", "-p", "-t", "t"); return s },
		func(k ...string) {
			if out, err := tm(append([]string{"send-keys", "-t", "t"}, k...)...); err != nil {
				t.Fatalf("tmux send-keys: %v %s", err, out)
			}
		}
}
