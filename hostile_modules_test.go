package main

// ATTACK TESTS against the real binary (security review of the os.Root
// extraction, branch atk-archive). A failing TestAttack* marks an open
// finding; do not delete it, fix the production code.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
)

func TestAttackExportHostileModules(t *testing.T) {
	in := registrytest.New(t)
	// A repository on the exporting laptop, at a path the attacker guesses.
	secret := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "x"}} {
		if args[0] == "add" {
			os.WriteFile(filepath.Join(secret, "credentials"), []byte("PRIVATE KEY OF THE EXPORTING LAPTOP"), 0o600)
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = secret
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	in.AddModule("registry.terraform.io", "evil", "local", "aws", "1.0.0", "git::file://"+secret)
	in.AddModule("registry.terraform.io", "evil", "path", "aws", "1.0.0", "git::"+secret)
	esc := "\x1b]0;owned\x07\x1b[2J"
	in.AddModule("registry.terraform.io", "evil", "names", "aws", "1.0.0", in.AddRawArchive(t, "names.tar.gz", registrytest.TarGz(t, []registrytest.Entry{
		{Name: "x" + esc, Body: "x"}, {Name: "x" + esc + "/y", Body: "y"}})))
	in.AddModule("registry.terraform.io", "evil", "warn", "aws", "1.0.0", in.AddRawArchive(t, "warn.tar.gz", registrytest.TarGz(t, []registrytest.Entry{
		{Name: "main.tf", Body: "# m\n"}, {Name: esc + ".tf", Body: "module \"x\" {\n  source = \"git::https://example.com/x.git\"\n}\n"}})))

	work := t.TempDir()
	mustRun(t, work, nil, airgapBin, "keygen", "--out", "k/site")
	env := append(in.Env(), "HOME="+work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	export := func(t *testing.T, module string) (string, string, error) {
		cache := filepath.Join(t.TempDir(), "cache")
		manifest := filepath.Join(work, "m.hcl")
		os.WriteFile(manifest, []byte("platforms = [\"linux_amd64\"]\nmodule \""+module+"\" {}\n"), 0o644)
		out, err := cmdRun(t, work, env, airgapBin, "export", "--manifest", manifest, "--sign-key", "k/site.key.asc",
			"--out", filepath.Join(t.TempDir(), "b.bundle"), "--cache", cache)
		return out, cache, err
	}
	for _, m := range []string{"evil/local/aws", "evil/path/aws"} {
		t.Run("local repository/"+m, func(t *testing.T) {
			out, cache, err := export(t, m)
			if err == nil && gzContains(t, cache, "PRIVATE KEY") {
				t.Errorf("FINDING: the registry's location made export clone a repository of this machine into the bundle:\n%s", out)
			}
		})
	}
	for _, m := range []string{"evil/names/aws", "evil/warn/aws"} {
		t.Run("control characters/"+m, func(t *testing.T) {
			out, _, _ := export(t, m)
			if strings.ContainsAny(out, "\x1b\x07") {
				t.Errorf("FINDING: export wrote raw control characters from a module archive to the terminal: %q", out)
			}
		})
	}
}

// gzContains reports whether any gzip'd tar under dir holds s.
func gzContains(t *testing.T, dir, s string) bool {
	found := false
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil
		}
		tr := tar.NewReader(gz)
		for {
			if _, err := tr.Next(); err != nil {
				return nil
			}
			b, _ := io.ReadAll(tr)
			if bytes.Contains(b, []byte(s)) {
				found = true
			}
		}
	})
	return found
}

// FINDING: extraction and Normalize do not watch the context, so Ctrl-C
// (SIGINT, caught by export's NotifyContext) does nothing while a slow
// archive unpacks (files 2,000 directories deep cost ~25 ms each), and a
// kill leaves the partial tree in <cache>/tmp, which no later run removes.
func TestAttackExportInterruptDuringExtraction(t *testing.T) {
	in := registrytest.New(t)
	dir := strings.Repeat("a/", 2000)
	var es []registrytest.Entry
	for i := range 3000 {
		es = append(es, registrytest.Entry{Name: fmt.Sprintf("%s%d", dir, i), Body: "x"})
	}
	in.AddModule("registry.terraform.io", "evil", "slow", "aws", "1.0.0", in.AddRawArchive(t, "slow.tar.gz", registrytest.TarGz(t, es)))
	work := t.TempDir()
	mustRun(t, work, nil, airgapBin, "keygen", "--out", "k/site")
	env := append(in.Env(), "HOME="+work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	manifest := filepath.Join(work, "m.hcl")
	os.WriteFile(manifest, []byte("platforms = [\"linux_amd64\"]\nmodule \"evil/slow/aws\" {}\n"), 0o644)
	cache := filepath.Join(work, "cache")
	cmd := exec.Command(airgapBin, "export", "--manifest", manifest, "--sign-key", "k/site.key.asc", "--out", "b.bundle", "--cache", cache)
	cmd.Dir, cmd.Env = work, append(baseEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(3 * time.Second)
	cmd.Process.Signal(os.Interrupt)
	start := time.Now()
	select {
	case <-done:
		t.Logf("exited %v after SIGINT", time.Since(start))
		return
	case <-time.After(10 * time.Second):
	}
	t.Errorf("FINDING: export still running 10 s after SIGINT (unpacking a module archive ignores the context)")
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(2 * time.Second)
	if cmd.ProcessState == nil {
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
	ents, _ := os.ReadDir(filepath.Join(cache, "tmp"))
	for _, e := range ents {
		t.Errorf("FINDING: left behind after the kill: %s (no run removes <cache>/tmp)", e.Name())
	}
	os.RemoveAll(filepath.Join(cache, "tmp"))
}
