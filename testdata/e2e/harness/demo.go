package harness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RunningDemo is the program behind 'make demo', started by StartDemo and
// serving.
type RunningDemo struct {
	Bin    string        // the demo program, built
	Dir    string        // its -dir
	Listen string        // its -listen
	Out    *LockedBuffer // what it printed
	Cmd    *exec.Cmd
	Done   chan error // its exit
}

// StartDemo builds the demo program, runs it in work/demo as 'make demo'
// does, and waits until it says serve is running. It is stopped with the
// test (Ctrl-C, as a user stops it).
func StartDemo(t *testing.T, work string) *RunningDemo {
	t.Helper()
	TerraformBin(t) // the demo runs terraform init: it must be there
	d := &RunningDemo{Bin: filepath.Join(work, "demo-bin"), Dir: filepath.Join(work, "demo"),
		Listen: fmt.Sprintf("127.0.0.1:%d", FreePort(t)), Out: &LockedBuffer{}, Done: make(chan error, 1)}
	build := exec.Command("go", "build", "-o", d.Bin, "./testdata/demo")
	build.Dir = Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	d.Cmd = exec.Command(d.Bin, "-airgap", Bin, "-dir", d.Dir, "-listen", d.Listen)
	d.Cmd.Dir, d.Cmd.Env = work, BaseEnv()
	d.Cmd.Stdout, d.Cmd.Stderr = d.Out, d.Out
	if err := d.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.Done <- d.Cmd.Wait() }()
	t.Cleanup(func() {
		d.Cmd.Process.Signal(os.Interrupt)
		select {
		case <-d.Done:
		case <-time.After(40 * time.Second):
			d.Cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(d.Out.String(), "airgap serve is running"); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-d.Done:
			t.Fatalf("the demo ended (%v):\n%s", err, d.Out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not come up in 3 minutes:\n%s", d.Out.String())
		}
	}
	return d
}

// port is the port the demo's appliance listens on.
func (d *RunningDemo) Port() string { return d.Listen[strings.LastIndex(d.Listen, ":")+1:] }

// ReadEnvFile reads the "export K='V'" lines of a file written for a shell.
func ReadEnvFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		env = append(env, k+"="+strings.Trim(v, "'"))
	}
	if len(env) == 0 {
		t.Fatalf("%s sets nothing", path)
	}
	return env
}
