package station

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestShowSpoolPrivateAndRemoved: 'airgap show files' copies the module
// archive out of the bundle before it is checked against the signed
// manifest. While it copies (the bundle comes through a FIFO, fed up to
// the middle of the archive and then held), the copy is in a directory of
// its own under $TMPDIR, mode 0700, the file 0600 and no larger than the
// manifest declares; Ctrl-C then ends show with 130 and a hint, and
// nothing is left in $TMPDIR.
func TestShowSpoolPrivateAndRemoved(t *testing.T) {
	t.Parallel()
	work, site, keyring, _, set := harness.TrustWorld(t)
	noise := make([]byte, 3<<20)
	rand.Read(noise)
	mod := filepath.Join(work, "big.tar.gz")
	bundletest.WriteModuleArchive(t, mod, map[string]string{"main.tf": "variable \"x\" {}\n", "noise.txt": hex.EncodeToString(noise)})
	fi, _ := os.Stat(mod)
	set.AddModule(t, dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "acme", Name: "big", System: "aws", Version: "1.0.0"}, mod)
	path := filepath.Join(work, "show.bundle")
	set.WriteBundleFile(t, path, site, bundle.CompressionNone)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The archive's bytes in the bundle (stored, not compressed): feed up
	// to their middle.
	arch, _ := os.ReadFile(mod)
	at := strings.Index(string(data), string(arch[:4096]))
	if at < 0 {
		t.Fatal("the module archive is not stored as is in the bundle")
	}
	fifo := filepath.Join(work, "show.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(harness.Bin, "show", "--keyring", keyring, fifo, "files", "acme/big/aws@1.0.0")
	cmd.Env = append(harness.BaseEnv(), "TMPDIR="+tmp)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open: show waits for more, mid-archive
	if _, err := w.Write(data[:at+len(arch)/2]); err != nil {
		t.Fatal(err)
	}
	var spooled string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(tmp, "*", "*"))
		if len(m) == 1 {
			if st, err := os.Stat(m[0]); err == nil && st.Size() >= int64(len(arch)/4) {
				spooled = m[0]
				break
			}
		}
	}
	if spooled == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no spool file in $TMPDIR while show read the archive\n%s", stderr.String())
	}
	dirInfo, _ := os.Stat(filepath.Dir(spooled))
	fileInfo, _ := os.Stat(spooled)
	t.Logf("spooling to %s (%04o) / %s (%04o), %d of %d bytes", filepath.Base(filepath.Dir(spooled)), dirInfo.Mode().Perm(), filepath.Base(spooled), fileInfo.Mode().Perm(), fileInfo.Size(), fi.Size())
	if dirInfo.Mode().Perm() != 0o700 || fileInfo.Mode().Perm() != 0o600 || fileInfo.Size() > fi.Size() {
		t.Errorf("the spool: directory %04o, file %04o of %d bytes (declared %d); want 0700, 0600, at most the declared size", dirInfo.Mode().Perm(), fileInfo.Mode().Perm(), fileInfo.Size(), fi.Size())
	}

	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("show did not end within 10 s of Ctrl-C")
	}
	if code := harness.ExitCode(err); code != 130 || !strings.Contains(stderr.String(), "interrupted (SIGINT)") || !strings.Contains(stderr.String(), "hint:") {
		t.Errorf("show after Ctrl-C: exit %d (%v), want 130 with a hint\n%s", code, err, stderr.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("show left %d entries in $TMPDIR after Ctrl-C: %v", len(left), left)
	}
	if stdout.Len() != 0 {
		t.Errorf("show printed before the archive was checked:\n%.300s", stdout.String())
	}
}
