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

// TestDemo runs the program behind 'make demo' as a user would, twice:
//
//   - the first demo runs the journey (terraform init included) and keeps
//     'airgap serve' and the stand-in internet up; an export by hand against
//     the stand-in, with only the environment file it wrote, works (the
//     README's "Try it by hand" path);
//   - a second demo on the same port stops before it touches anything,
//     saying the port is taken and how to choose another; a second demo on
//     another port but the same directory refuses to empty the directory the
//     first one serves. The first one's files are unchanged and it still
//     answers.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	terraformBin(t) // the demo runs terraform init: it must be there
	work := t.TempDir()
	demo := filepath.Join(work, "demo-bin")
	if out, err := exec.Command("go", "build", "-o", demo, "./testdata/demo").CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	dir := filepath.Join(work, "demo")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(demo, "-airgap", airgapBin, "-dir", dir, "-listen", listen)
	cmd.Dir, cmd.Env = work, baseEnv()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(out.String(), "airgap serve is running"); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the demo ended (%v):\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not come up in 3 minutes:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), "Terraform has been successfully initialized") {
		t.Errorf("the demo's terraform init did not succeed:\n%s", out.String())
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
	mustRun(t, work, nil, airgapBin, "healthcheck", "--url", "https://localhost:"+listen[strings.LastIndex(listen, ":")+1:]+"/healthz", "--ca", filepath.Join(dir, "airgap-ca.pem"))
	if strings.Contains(out.String(), "provider_versions=0") {
		t.Errorf("the first demo's appliance lost its catalog:\n%s", out.String())
	}

	// Ctrl-C ends the demo, its appliance and the stand-in.
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		t.Fatalf("the demo did not end on Ctrl-C:\n%s", out.String())
	}
	if err := exec.Command(airgapBin, "healthcheck", "--url", "https://localhost:"+listen[strings.LastIndex(listen, ":")+1:]+"/healthz", "--ca", filepath.Join(dir, "airgap-ca.pem"), "--timeout", "2s").Run(); err == nil {
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
