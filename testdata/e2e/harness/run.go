package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
)

// ExitCode is the exit status in err from running a command: 0 without
// an error, -1 when it did not run or exit.
func ExitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// RunSplit runs the real binary with stdout and stderr apart.
func RunSplit(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Bin, args...)
	cmd.Dir = dir
	cmd.Env = append(BaseEnv(), env...)
	cmd.Stdin = nil // no terminal
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.String(), e.String(), ExitCode(err)
}

// MustRunStdout runs airgap with args in dir and returns its stdout alone;
// a non-zero exit fails the test with its stderr.
func MustRunStdout(t *testing.T, dir string, args ...string) string {
	t.Helper()
	stdout, stderr, code := RunSplit(t, dir, nil, args...)
	if code != 0 {
		t.Fatalf("%v: %d %s", args, code, stderr)
	}
	return stdout
}

// CmdRun runs a command with env added to a clean base environment.
func CmdRun(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	out, _, err := CmdRunMeasured(t, dir, env, name, args...)
	return out, err
}

// CmdRunMeasured is CmdRun that also returns the peak resident memory, in
// KiB, of the program and every process it waited for (git, helpers).
func CmdRunMeasured(t *testing.T, dir string, env []string, name string, args ...string) (string, int64, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(BaseEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	resetPeakRSS()
	err := cmd.Run()
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	return out.String(), rss, err
}

// resetPeakRSS makes the peak memory wait4 reports for the next child its
// own, near enough: os/exec starts a child with vfork, sharing this
// process's memory until it execs, and Linux then records this process's
// peak as the child's (the test process may have grown earlier, building a
// hostile fixture). So this process hands back what it can and resets its
// own peak to what it holds now (/proc/self/clear_refs, 5); the child's
// figure is then at most this process's current size or its own peak.
func resetPeakRSS() {
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func MustRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := CmdRun(t, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// BaseEnv is the environment without proxy, CA and Terraform settings,
// plus the network guard's (registrytest.GuardEnv: every host off
// loopback goes to its sinkhole); a test's own env comes after it and
// wins (Internet.Env replaces every proxy variable).
func BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "TF_"), strings.HasPrefix(strings.ToUpper(k), "HTTP"), strings.HasPrefix(strings.ToUpper(k), "NO_PROXY"),
			strings.HasPrefix(k, "SSL_CERT"), k == "GIT_SSL_CAINFO":
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, registrytest.GuardEnv()...), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
}

func TerraformBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: the end-to-end tests drive the real client and must not be skipped; install terraform (v1.11) and run again")
	}
	return p
}

// FreePort returns a loopback port on which nothing listens, for a process
// the test starts (serve, HAProxy, a registry) or for a client to find
// closed. It is drawn from outside the kernel's ephemeral range, where no
// other listener or connection on the machine can take it before the
// process binds it (see registrytest.FreePort).
func FreePort(t *testing.T) int {
	t.Helper()
	return registrytest.FreePort(t)
}

// VMRSS reads a process's resident set size from /proc.
func VMRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// SamplePeakRSS samples pid's resident memory every 50 ms from now on;
// stop ends the sampling and returns the peak (at least from).
func SamplePeakRSS(t *testing.T, pid int, from int64) (stop func() int64) {
	var peak atomic.Int64
	peak.Store(from)
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				if r := VMRSS(t, pid); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	return func() int64 {
		close(done)
		<-sampled
		return peak.Load()
	}
}

// trustRSSLimit is the peak resident memory, in KiB, a verify or import
// of these small bundles may reach: the binary's own (about 35 MiB) plus
// what the stated bounds allow (one 8 MiB build information document per
// worker, buffers), with room for a loaded machine.
const trustRSSLimit = 200 << 10

// RunBounded runs airgap with args and fails the test if its peak
// resident memory exceeded trustRSSLimit; it returns the output and exit
// status.
func RunBounded(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return RunBoundedEnv(t, dir, BaseEnv(), trustRSSLimit, args...)
}

// RunBoundedEnv is RunBounded with an environment and a limit (KiB) of
// its own.
func RunBoundedEnv(t *testing.T, dir string, env []string, limit int64, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(Bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	resetPeakRSS()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := pollPeakRSS(cmd.Process.Pid)
	err := cmd.Wait()
	rss := <-peak
	if rss == 0 && cmd.ProcessState != nil { // too quick to poll: wait4's figure, at least this process's
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	t.Logf("airgap %s: peak memory %d MiB", args[0], rss>>10)
	if rss > limit {
		t.Errorf("airgap %s: peak memory %d MiB, over the %d MiB a bundle this size may cost", args[0], rss>>10, limit>>10)
	}
	return out.String(), ExitCode(err)
}

// pollPeakRSS reads the process's VmHWM (its own peak resident memory, in
// KiB) every 2 ms until it is gone, and sends the last value read. (wait4's
// ru_maxrss would do, but on Linux a child started by a large process
// inherits that process's peak: the test binary's, not airgap's.)
func pollPeakRSS(pid int) <-chan int64 {
	ch := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			_, hwm, ok := strings.Cut(string(b), "VmHWM:")
			if err != nil || !ok { // exited (a zombie has no memory left)
				ch <- peak
				return
			}
			var kb int64
			fmt.Sscan(hwm, &kb)
			peak = max(peak, kb)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return ch
}

// ExpectRefused runs verify and import of path; both must refuse it with
// every string of want and a hint, within trustRSSLimit, and leave the
// store at root as it was.
func ExpectRefused(t *testing.T, work, keyring, root, path string, want ...string) {
	t.Helper()
	before := bundletest.Snapshot(t, root)
	out, code := RunBounded(t, work, "verify", "--keyring", keyring, path)
	if code != 1 {
		t.Errorf("verify accepted it (exit %d):\n%s", code, out)
	}
	for _, s := range append(want, "hint:") {
		if !strings.Contains(out, s) {
			t.Errorf("verify's message lacks %q:\n%s", s, out)
		}
	}
	out, code = RunBounded(t, work, "import", "--keyring", keyring, "--store", root, path)
	if code != 1 {
		t.Errorf("import accepted it (exit %d):\n%s", code, out)
	}
	for _, s := range append(want, "hint:", "the store was not changed") {
		if !strings.Contains(out, s) {
			t.Errorf("import's message lacks %q:\n%s", s, out)
		}
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
}

// OnTerminal runs the shell command script on a real terminal of width x
// height (a tmux session, ended with the test) and returns a function that
// captures its screen; "EXIT=<status>" is printed when the command ends.
// tmux is required (.ci/run installs it).
func OnTerminal(t *testing.T, width, height int, script string) (screen func() string) {
	t.Helper()
	screen, _ = OnTerminalKeys(t, width, height, script)
	return screen
}

// OnTerminalKeys is OnTerminal that also returns a function typing keys
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
