package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
)

// runningDemo is the program behind 'make demo', started by startDemo and
// serving.
type runningDemo struct {
	bin    string      // the demo program, built
	dir    string      // its -dir
	listen string      // its -listen
	out    *syncBuffer // what it printed
	cmd    *exec.Cmd
	done   chan error // its exit
}

// startDemo builds the demo program, runs it in work/demo as 'make demo'
// does, and waits until it says serve is running. It is stopped with the
// test (Ctrl-C, as a user stops it).
func startDemo(t *testing.T, work string) *runningDemo {
	t.Helper()
	terraformBin(t) // the demo runs terraform init: it must be there
	d := &runningDemo{bin: filepath.Join(work, "demo-bin"), dir: filepath.Join(work, "demo"),
		listen: fmt.Sprintf("127.0.0.1:%d", freePort(t)), out: &syncBuffer{}, done: make(chan error, 1)}
	if out, err := exec.Command("go", "build", "-o", d.bin, "./testdata/demo").CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	d.cmd = exec.Command(d.bin, "-airgap", airgapBin, "-dir", d.dir, "-listen", d.listen)
	d.cmd.Dir, d.cmd.Env = work, baseEnv()
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Signal(os.Interrupt)
		select {
		case <-d.done:
		case <-time.After(40 * time.Second):
			d.cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(d.out.String(), "airgap serve is running"); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-d.done:
			t.Fatalf("the demo ended (%v):\n%s", err, d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not come up in 3 minutes:\n%s", d.out.String())
		}
	}
	return d
}

// port is the port the demo's appliance listens on.
func (d *runningDemo) port() string { return d.listen[strings.LastIndex(d.listen, ":")+1:] }

// TestDemo runs the program behind 'make demo' as a user would, twice:
//
//   - the first demo runs the journey (terraform init included) and keeps
//     'airgap serve' and the stand-in internet up; serve's lines go to the
//     log file the demo names, not between the client's; an export by hand
//     against the stand-in, with only the environment file it wrote, works
//     (the README's "Try it by hand" path);
//   - a second demo on the same port stops before it touches anything,
//     saying the port is taken and how to choose another; a second demo on
//     another port but the same directory refuses to empty the directory the
//     first one serves. The first one's files are unchanged and it still
//     answers;
//   - Ctrl-C (SIGINT) ends the first with one line and exit status 0, and
//     nothing of it answers any more.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	work := t.TempDir()
	d := startDemo(t, work)
	demo, dir, listen, out, cmd, done := d.bin, d.dir, d.listen, d.out, d.cmd, d.done
	if !strings.Contains(out.String(), "Terraform has been successfully initialized") {
		t.Errorf("the demo's terraform init did not succeed:\n%s", out.String())
	}
	logPath := filepath.Join(dir, "serve.log")
	if !strings.Contains(out.String(), "Its log: demo/serve.log") {
		t.Errorf("the demo does not name serve's log file %s:\n%s", logPath, out.String())
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "msg=serving") {
		t.Errorf("serve's lines are not in %s:\n%s", logPath, log)
	}
	if strings.Contains(out.String(), "msg=") || strings.Contains(out.String(), "level=") {
		t.Errorf("serve's log lines are mixed into the demo's output:\n%s", out.String())
	}

	// By hand, against the stand-in internet the demo keeps up.
	env := readEnvFile(t, filepath.Join(dir, "internet.env"))
	hand := filepath.Join(work, "hand")
	os.MkdirAll(hand, 0o755)
	mustRun(t, hand, nil, airgapBin, "keygen", "--out", "keys/site", "--no-passphrase")
	mustRun(t, hand, append(env, "TF_CLI_CONFIG_FILE="+filepath.Join(hand, "none.tfrc")), airgapBin, "export",
		"--manifest", filepath.Join(dir, "airgap.hcl"), "--sign-key", "keys/site.key.asc", "--out", "site.bundle", "--cache", "cache")
	if v := mustRun(t, hand, nil, airgapBin, "verify", "--keyring", "keys/site.pub.asc", "site.bundle"); !strings.Contains(v, "4 provider versions") {
		t.Errorf("verify of the export made by hand:\n%s", v)
	}
	mustRun(t, hand, nil, airgapBin, "import", "--keyring", "keys/site.pub.asc", "--store", "store", "site.bundle")
	base, caFile := startServe(t, filepath.Join(hand, "store"))
	rc := mustRunStdout(t, hand, "client-config", "--url", base, "--store", "store")
	os.WriteFile(filepath.Join(hand, "terraform.rc"), []byte(rc), 0o644)
	proj := filepath.Join(hand, "project")
	os.MkdirAll(proj, 0o755)
	mainTF, _ := os.ReadFile(filepath.Join(dir, "project", "main.tf"))
	os.WriteFile(filepath.Join(proj, "main.tf"), mainTF, 0o644)
	if o := mustRun(t, proj, []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(hand, "terraform.rc"), "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}, terraformBin(t), "init", "-input=false", "-no-color"); !strings.Contains(o, "successfully initialized") {
		t.Errorf("terraform init against the appliance made by hand:\n%s", o)
	}

	// The running demo's serve writes its download counts (the init
	// above) into store/state while the second demos run: that is not
	// theirs to change, and is left out.
	snapshot := func() map[string]string {
		m := bundletest.Snapshot(t, dir)
		for k := range m {
			if k == filepath.Join("store", "state") || strings.HasPrefix(k, filepath.Join("store", "state")+string(filepath.Separator)) {
				delete(m, k)
			}
		}
		return m
	}
	before := snapshot()
	second := func(listen, wantExit string, want ...string) {
		t.Helper()
		c := exec.Command(demo, "-airgap", airgapBin, "-dir", dir, "-listen", listen)
		c.Dir, c.Env = work, baseEnv()
		o, err := c.CombinedOutput()
		if exitCode(err) != 1 {
			t.Errorf("a second demo (%s) exited %d, want 1:\n%s", wantExit, exitCode(err), o)
		}
		for _, w := range want {
			if !strings.Contains(string(o), w) {
				t.Errorf("a second demo (%s) does not say %q:\n%s", wantExit, w, o)
			}
		}
		bundletest.SameTree(t, before, snapshot())
	}
	second(listen, "same port", "cannot listen on "+listen, "address already in use", "Nothing was changed", "make demo DEMO_PORT=")
	second(fmt.Sprintf("127.0.0.1:%d", freePort(t)), "same directory", "is being served by a running 'airgap serve'", "will not empty it", "DEMO_DIR=")
	mustRun(t, work, nil, airgapBin, "healthcheck", "--url", "https://localhost:"+d.port()+"/healthz", "--ca", filepath.Join(dir, "airgap-ca.pem"))
	if log, _ := os.ReadFile(logPath); strings.Contains(string(log), "provider_versions=0") {
		t.Errorf("the first demo's appliance lost its catalog:\n%s", log)
	}

	// Ctrl-C ends the demo, its appliance and the stand-in: one line, exit 0.
	printed := len(out.String())
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the demo ended with %v on Ctrl-C, want exit status 0", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("the demo did not end on Ctrl-C:\n%s", out.String())
	}
	if last := out.String()[printed:]; strings.Count(last, "\n") != 1 || !strings.HasPrefix(last, "demo: stopped airgap serve and the stand-in internet") {
		t.Errorf("on Ctrl-C the demo printed %q, want one line saying it stopped", last)
	}
	if err := exec.Command(airgapBin, "healthcheck", "--url", "https://localhost:"+d.port()+"/healthz", "--ca", filepath.Join(dir, "airgap-ca.pem"), "--timeout", "2s").Run(); err == nil {
		t.Error("the appliance still answers after the demo ended")
	}
}

// readEnvFile reads the "export K='V'" lines of a file written for a shell.
func readEnvFile(t *testing.T, path string) []string {
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

// TestDemoOnTerminal runs 'make demo' on a real terminal, as a user does,
// and presses Ctrl-C once it serves: the screen shows the journey and the
// client's output without serve's log lines, and Ctrl-C ends it with one
// line, no "make: ***" and exit status 0.
func TestDemoOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	terraformBin(t)
	work := t.TempDir()
	wd, _ := os.Getwd()
	// What make prints goes to a file too (tee), and its exit status
	// after it: the screen keeps only its last rows.
	script := fmt.Sprintf("cd %s && { make -s demo BIN=%s DEMO_DIR=%s DEMO_PORT=%d; echo MAKE=$?; } 2>&1 | tee %s",
		wd, filepath.Join(work, "airgap"), filepath.Join(work, "demo"), freePort(t), filepath.Join(work, "all.txt"))
	screen, keys := onTerminalKeys(t, 200, 50, script)
	all := func() string { b, _ := os.ReadFile(filepath.Join(work, "all.txt")); return string(b) }
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(all(), "Use the appliance from another shell"); time.Sleep(300 * time.Millisecond) {
		if strings.Contains(all(), "MAKE=") || time.Now().After(deadline) {
			t.Fatalf("make demo did not come up:\n%s", all())
		}
	}
	if !strings.Contains(all(), "Terraform has been successfully initialized") {
		t.Errorf("the demo's terraform init did not succeed:\n%s", all())
	}
	if strings.Contains(all(), "msg=") || strings.Contains(all(), "level=INFO") {
		t.Errorf("serve's log lines are on the screen:\n%s", all())
	}
	printed := len(all())
	keys("C-c")
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(all(), "MAKE="); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("make demo did not end on Ctrl-C:\n%s\nscreen:\n%s", all(), screen())
		}
	}
	last := strings.TrimSpace(all()[printed:])
	want := "demo: stopped airgap serve and the stand-in internet (serve's log: " + filepath.Join(work, "demo", "serve.log") + ")\r\nMAKE=0"
	if strings.ReplaceAll(last, "\r\n", "\n") != strings.ReplaceAll(want, "\r\n", "\n") {
		t.Errorf("after Ctrl-C make demo printed:\n%q\nwant:\n%q", last, want)
	}
	if strings.Contains(all(), "make: ***") {
		t.Errorf("make reports an error after Ctrl-C:\n%s", all())
	}
}
