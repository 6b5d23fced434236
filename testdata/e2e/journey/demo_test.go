package journey

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

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
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	work := t.TempDir()
	d := harness.StartDemo(t, work)
	demo, dir, listen, out, cmd, done := d.Bin, d.Dir, d.Listen, d.Out, d.Cmd, d.Done
	if !strings.Contains(out.String(), "Terraform has been successfully initialized") {
		t.Errorf("the demo's terraform init did not succeed:\n%s", out.String())
	}
	// The first run shows what a real export brings: random's docs (4
	// pages at each version) and plugins with Go build information.
	if o := out.String(); !strings.Contains(o, "docs: 4 pages") || !strings.Contains(o, "carry Go build information") || strings.Contains(o, "read again: 0 carry Go build information") {
		t.Errorf("the demo's verify shows no provider docs or no Go build information:\n%s", o)
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
	env := harness.ReadEnvFile(t, filepath.Join(dir, "internet.env"))
	hand := filepath.Join(work, "hand")
	os.MkdirAll(hand, 0o755)
	harness.MustRun(t, hand, nil, harness.Bin, "keygen", "--out", "keys/site", "--no-passphrase")
	harness.MustRun(t, hand, append(env, "TF_CLI_CONFIG_FILE="+filepath.Join(hand, "none.tfrc")), harness.Bin, "export",
		"--manifest", filepath.Join(dir, "airgap.hcl"), "--sign-key", "keys/site.key.asc", "--out", "site.bundle", "--cache", "cache")
	if v := harness.MustRun(t, hand, nil, harness.Bin, "verify", "--keyring", "keys/site.pub.asc", "site.bundle"); !strings.Contains(v, "4 provider versions") {
		t.Errorf("verify of the export made by hand:\n%s", v)
	}
	harness.MustRun(t, hand, nil, harness.Bin, "import", "--keyring", "keys/site.pub.asc", "--store", "store", "site.bundle")
	srv := harness.StartServe(t, filepath.Join(hand, "store"))
	base, caFile := srv.Base, srv.CAFile
	rc := harness.MustRunStdout(t, hand, "client-config", "--url", base, "--store", "store")
	os.WriteFile(filepath.Join(hand, "terraform.rc"), []byte(rc), 0o644)
	proj := filepath.Join(hand, "project")
	os.MkdirAll(proj, 0o755)
	mainTF, _ := os.ReadFile(filepath.Join(dir, "project", "main.tf"))
	os.WriteFile(filepath.Join(proj, "main.tf"), mainTF, 0o644)
	if o := harness.MustRun(t, proj, []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(hand, "terraform.rc"), "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}, harness.TerraformBin(t), "init", "-input=false", "-no-color"); !strings.Contains(o, "successfully initialized") {
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
		c := exec.Command(demo, "-airgap", harness.Bin, "-dir", dir, "-listen", listen)
		c.Dir, c.Env = work, harness.BaseEnv()
		o, err := c.CombinedOutput()
		if harness.ExitCode(err) != 1 {
			t.Errorf("a second demo (%s) exited %d, want 1:\n%s", wantExit, harness.ExitCode(err), o)
		}
		for _, w := range want {
			if !strings.Contains(string(o), w) {
				t.Errorf("a second demo (%s) does not say %q:\n%s", wantExit, w, o)
			}
		}
		bundletest.SameTree(t, before, snapshot())
	}
	second(listen, "same port", "cannot listen on "+listen, "address already in use", "Nothing was changed", "make demo DEMO_PORT=")
	second(fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), "same directory", "is being served by a running 'airgap serve'", "will not empty it", "DEMO_DIR=")
	harness.MustRun(t, work, nil, harness.Bin, "healthcheck", "--url", "https://localhost:"+d.Port()+"/healthz", "--ca", filepath.Join(dir, "airgap-ca.pem"))
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
	if err := exec.Command(harness.Bin, "healthcheck", "--url", "https://localhost:"+d.Port()+"/healthz", "--ca", filepath.Join(dir, "airgap-ca.pem"), "--timeout", "2s").Run(); err == nil {
		t.Error("the appliance still answers after the demo ended")
	}
}

// TestDemoOnTerminal runs 'make demo' on a real terminal, as a user does,
// and presses Ctrl-C once it serves: the screen shows the journey and the
// client's output without serve's log lines, and Ctrl-C ends it with one
// line, no "make: ***" and exit status 0.
func TestDemoOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	harness.TerraformBin(t)
	work := t.TempDir()
	wd := harness.Root() // where the Makefile is
	// What make prints goes to a file too (tee), and its exit status
	// after it: the screen keeps only its last rows.
	script := fmt.Sprintf("cd %s && { make -s demo BIN=%s DEMO_DIR=%s DEMO_PORT=%d; echo MAKE=$?; } 2>&1 | tee %s",
		wd, filepath.Join(work, "airgap"), filepath.Join(work, "demo"), harness.FreePort(t), filepath.Join(work, "all.txt"))
	screen, keys := harness.OnTerminalKeys(t, 200, 50, script)
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

// TestDemoOnTerminalStoppedEarly presses Ctrl-C on 'make demo' while the
// journey still runs (during the export): the demo stops what it started
// and ends with one line and exit status 0, make reports no error, and the
// terminal is given back as it was (signal keys on).
func TestDemoOnTerminalStoppedEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	harness.TerraformBin(t)
	work := t.TempDir()
	script := fmt.Sprintf("cd %s && { make -s demo BIN=%s DEMO_DIR=%s DEMO_PORT=%d; echo MAKE=$?; stty -a | tr ' ' '\\n' | grep -x -- '-\\{0,1\\}isig'; } 2>&1 | tee %s",
		harness.Root(), filepath.Join(work, "airgap"), filepath.Join(work, "demo"), harness.FreePort(t), filepath.Join(work, "all.txt"))
	screen, keys := harness.OnTerminalKeys(t, 200, 50, script)
	all := func() string { b, _ := os.ReadFile(filepath.Join(work, "all.txt")); return string(b) }
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(all(), "$ airgap export"); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(all(), "MAKE=") || time.Now().After(deadline) {
			t.Fatalf("make demo did not reach its export:\n%s", all())
		}
	}
	printed := len(all())
	keys("C-c")
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(all(), "isig"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("make demo did not end on Ctrl-C:\n%s\nscreen:\n%s", all(), screen())
		}
	}
	last := strings.ReplaceAll(strings.TrimSpace(all()[printed:]), "\r\n", "\n")
	// The export may have printed its own lines before it was stopped.
	if !strings.HasSuffix(last, "demo: stopped before the journey ended (what it started is stopped)\nMAKE=0\nisig") {
		t.Errorf("after Ctrl-C during the export make demo printed:\n%q", last)
	}
	if strings.Contains(all(), "make: ***") || strings.Contains(all(), "demo failed") {
		t.Errorf("an error is reported after Ctrl-C:\n%s", all())
	}
}
