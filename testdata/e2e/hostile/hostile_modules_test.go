package hostile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

func TestHostileExportModules(t *testing.T) {
	t.Parallel()
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
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	env := append(in.Env(), "HOME="+work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	export := func(t *testing.T, module string) (string, string, error) {
		cache := filepath.Join(t.TempDir(), "cache")
		manifest := filepath.Join(work, "m.hcl")
		os.WriteFile(manifest, []byte("platforms = [\"linux_amd64\"]\nmodule \""+module+"\" {}\n"), 0o644)
		out, err := harness.CmdRun(t, work, env, harness.Bin, "export", "--manifest", manifest, "--sign-key", "k/site.key.asc",
			"--out", filepath.Join(t.TempDir(), "b.bundle"), "--cache", cache)
		return out, cache, err
	}
	for _, m := range []string{"evil/local/aws", "evil/path/aws"} {
		t.Run("local repository/"+m, func(t *testing.T) {
			out, cache, err := export(t, m)
			if err == nil || gzContains(t, cache, "PRIVATE KEY") {
				t.Errorf("the registry's location made export clone a repository of this machine (err %v):\n%s", err, out)
			}
			t.Logf("%s", out)
			if !strings.Contains(out, "never from the exporting machine") {
				t.Errorf("the error does not say why:\n%s", out)
			}
		})
	}
	for _, m := range []string{"evil/names/aws", "evil/warn/aws"} {
		t.Run("control characters/"+m, func(t *testing.T) {
			out, _, err := export(t, m)
			t.Logf("%q", out)
			if strings.ContainsAny(out, "\x1b\x07") {
				t.Errorf("export wrote raw control characters from a module archive to the terminal: %q", out)
			}
			if err == nil || !strings.Contains(out, `has control characters`) || !strings.Contains(out, `\x1b`) {
				t.Errorf("export did not refuse the name, escaped (err %v): %q", err, out)
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

// slowArchive is a tar.bz2 of one file of zeros just under MaxArchiveBytes
// (concatenated bzip2 streams, a few KB): unpacking it takes seconds.
func slowArchive(t *testing.T) []byte {
	dir := t.TempDir()
	const chunk = 8 << 20
	if err := os.WriteFile(filepath.Join(dir, "zeros"), make([]byte, chunk), 0o644); err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	const chunks = 127 // < 1 GiB
	tw.WriteHeader(&tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: chunks*chunk - 1024})
	tw.Flush()
	os.WriteFile(filepath.Join(dir, "hdr"), hdr.Bytes()[:512], 0o644)
	for _, f := range []string{"zeros", "hdr"} {
		if out, err := exec.Command("bzip2", "-9", filepath.Join(dir, f)).CombinedOutput(); err != nil {
			t.Fatalf("bzip2: %v\n%s", err, out)
		}
	}
	h, _ := os.ReadFile(filepath.Join(dir, "hdr.bz2"))
	z, _ := os.ReadFile(filepath.Join(dir, "zeros.bz2"))
	// The tar's end (1,024 zero bytes) is the end of the last chunk.
	return append(h, bytes.Repeat(z, chunks)...)
}

// Ctrl-C (SIGINT, caught by export's NotifyContext) stops export while a
// module archive unpacks, and removes the partial tree; a killed export's
// tree is removed by the next export that shares the cache.
func TestHostileExportInterruptDuringExtraction(t *testing.T) {
	in := registrytest.New(t)
	in.AddModule("registry.terraform.io", "evil", "slow", "aws", "1.0.0", in.AddRawArchive(t, "slow.tar.bz2", slowArchive(t)))
	in.AddModule("registry.terraform.io", "good", "small", "aws", "1.0.0", in.AddRawArchive(t, "small.tar.gz", registrytest.TarGz(t, []registrytest.Entry{{Name: "main.tf", Body: "# m\n"}})))
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	env := append(in.Env(), "HOME="+work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	cache := filepath.Join(work, "cache")
	manifest := func(m string) string {
		p := filepath.Join(work, strings.ReplaceAll(m, "/", "-")+".hcl")
		os.WriteFile(p, []byte("platforms = [\"linux_amd64\"]\nmodule \""+m+"\" {}\n"), 0o644)
		return p
	}
	// start runs an export of the slow module and returns once it is
	// unpacking (the partial tree exists).
	start := func() (*exec.Cmd, chan error, *bytes.Buffer) {
		cmd := exec.Command(harness.Bin, "export", "--manifest", manifest("evil/slow/aws"), "--sign-key", "k/site.key.asc", "--out", "b.bundle", "--cache", cache)
		cmd.Dir, cmd.Env = work, append(harness.BaseEnv(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ms, _ := filepath.Glob(filepath.Join(cache, "tmp", "module-*", "src", "zeros"))
			if len(ms) > 0 {
				return cmd, done, &out
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("export never started unpacking:\n%s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	leftovers := func() []string { ms, _ := filepath.Glob(filepath.Join(cache, "tmp", "module-*")); return ms }

	cmd, done, out := start()
	cmd.Process.Signal(os.Interrupt)
	sent := time.Now()
	select {
	case err := <-done:
		t.Logf("exited (%v) %v after SIGINT", err, time.Since(sent))
		if err == nil {
			t.Errorf("an interrupted export exited 0:\n%s", out)
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		t.Fatalf("export still running 5 s after SIGINT (unpacking ignores the context)")
	}
	if l := leftovers(); len(l) > 0 {
		t.Errorf("an interrupted export left %v", l)
	}

	cmd, done, _ = start()
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	if len(leftovers()) == 0 {
		t.Fatal("the killed export left nothing: the test does not test the cleanup")
	}
	harness.MustRun(t, work, env, harness.Bin, "export", "--manifest", manifest("good/small/aws"), "--sign-key", "k/site.key.asc", "--out", "c.bundle", "--cache", cache)
	if l := leftovers(); len(l) > 0 {
		t.Errorf("the next export did not remove the killed one's tree: %v", l)
	}
}
