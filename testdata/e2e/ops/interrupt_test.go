package ops

import (
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/airgap/airgap/verify"
)

// bigImportFixture is a keyring, a small seed bundle and a bundle of about
// 300 MiB of incompressible provider packages.
type bigImportFixture struct {
	work, keyring, seed, big string
}

func newBigImportFixture(t *testing.T) bigImportFixture {
	t.Helper()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	f := bigImportFixture{work: work, keyring: filepath.Join(work, "site.pub.asc"),
		seed: filepath.Join(work, "seed.bundle"), big: filepath.Join(work, "big.bundle")}
	os.WriteFile(f.keyring, []byte(pub), 0o644)
	bundletest.Standard(t, filepath.Join(work, "seed"), signer).WriteBundleFile(t, f.seed, signer, bundle.CompressionZstd)
	big := bundletest.NewSet()
	for i := 0; i < 6; i++ {
		dir := filepath.Join(work, "big", fmt.Sprint(i))
		big.AddProvider(bundletest.BuildProvider(t, dir, bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: fmt.Sprintf("big%d", i), Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 50 << 20,
		}))
	}
	big.WriteBundleFile(t, f.big, signer, bundle.CompressionZstd)
	os.RemoveAll(filepath.Join(work, "big"))
	return f
}

// tmpFiles counts the files under STORE/tmp and their bytes.
func tmpFiles(t *testing.T, root string) (n int, size int64) {
	t.Helper()
	filepath.Walk(filepath.Join(root, "tmp"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n, size = n+1, size+fi.Size()
		}
		return nil
	})
	return n, size
}

// startImport starts 'airgap import' of bundle into root and waits until
// it has staged at least one blob of at least minStaged bytes in
// STORE/tmp.
func startImport(t *testing.T, f bigImportFixture, root, bundlePath string, minStaged int64) (*exec.Cmd, *harness.LockedBuffer, chan error) {
	t.Helper()
	cmd := exec.Command(harness.Bin, "import", "--keyring", f.keyring, "--store", root, bundlePath)
	cmd.Env = harness.BaseEnv()
	var out harness.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, size := tmpFiles(t, root); size >= minStaged {
			return cmd, &out, done
		}
		select {
		case err := <-done:
			t.Fatalf("the import ended (%v) before it staged %d bytes, so the signal would test nothing:\n%s", err, minStaged, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the import staged nothing in 60 s:\n%s", out.String())
		}
	}
}

// TestImportInterrupted: Ctrl-C (SIGINT) or SIGTERM in the middle of a
// 300 MiB import says it was interrupted, that the store was not changed and
// to run the same command again, exits 128+signal, and removes the
// import's temporary files on its way out: the store is byte for byte as it
// was. The SIGINT case feeds the bundle through a pipe that stops half-way,
// so the signal lands while the import waits for input; the SIGTERM case
// reads the file at full speed.
func TestImportInterrupted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	f := newBigImportFixture(t)
	root := filepath.Join(f.work, "store")
	harness.MustRun(t, f.work, nil, harness.Bin, "import", "--keyring", f.keyring, "--store", root, f.seed)
	before := bundletest.Snapshot(t, root)

	check := func(name string, out string, err error, wantCode int) {
		t.Helper()
		if code := harness.ExitCode(err); code != wantCode {
			t.Errorf("%s: exit %d, want %d\n%s", name, code, wantCode, out)
		}
		for _, w := range []string{"interrupted (" + name + ")", "the store was not changed", "the import's temporary files were removed", "hint: run the same command again"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the message lacks %q:\n%s", name, w, out)
			}
		}
		if n, size := tmpFiles(t, root); n != 0 {
			t.Errorf("%s: %d file(s) (%d bytes) left in STORE/tmp", name, n, size)
		}
		bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
		t.Logf("%s:\n%s", name, out)
	}

	// SIGINT while the import waits on a pipe that delivered half the bundle.
	fifo := filepath.Join(f.work, "bundle.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(f.big)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fi, _ := src.Stat()
	stopWriter := make(chan struct{})
	defer close(stopWriter)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		io.CopyN(w, src, fi.Size()/2)
		<-stopWriter // hold the pipe open, delivering nothing more
	}()
	signal := func(sig syscall.Signal, name string, code int, cmd *exec.Cmd, out *harness.LockedBuffer, done chan error) {
		t.Helper()
		cmd.Process.Signal(sig)
		select {
		case err := <-done:
			check(name, out.String(), err, code)
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("import still running 20 s after %s:\n%s", name, out.String())
		}
	}
	cmd, out, done := startImport(t, f, root, fifo, 32<<20)
	time.Sleep(300 * time.Millisecond) // let it drain the pipe and wait for more
	signal(syscall.SIGINT, "SIGINT", 130, cmd, out, done)

	// SIGTERM while it reads the file at full speed.
	cmd, out, done = startImport(t, f, root, f.big, 1)
	signal(syscall.SIGTERM, "SIGTERM", 143, cmd, out, done)
}

// TestKilledImportLeftovers: what a kill -9 leaves in STORE/tmp, 'gc
// --dry-run' reports exactly as 'gc' then removes it (files and bytes, text
// and JSON, and the store untouched by the dry run); after a second kill the
// next import removes the leftovers itself, says how much, and completes.
func TestKilledImportLeftovers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	f := newBigImportFixture(t)
	root := filepath.Join(f.work, "store")
	harness.MustRun(t, f.work, nil, harness.Bin, "import", "--keyring", f.keyring, "--store", root, f.seed)
	kill := func() (int, int64) {
		cmd, _, done := startImport(t, f, root, f.big, 8<<20)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		n, size := tmpFiles(t, root)
		if n == 0 {
			t.Fatal("the killed import left nothing in STORE/tmp: the test tests nothing")
		}
		return n, size
	}
	type gcDoc struct {
		OK        bool     `json:"ok"`
		DryRun    bool     `json:"dry_run"`
		Blobs     []string `json:"blobs_removed"`
		Temps     int      `json:"temps_removed"`
		TempBytes int64    `json:"temp_bytes_removed"`
	}
	gcJSON := func(args ...string) gcDoc {
		t.Helper()
		stdout := harness.MustRunStdout(t, f.work, append([]string{"gc", "--store", root, "--json"}, args...)...)
		var d gcDoc
		if err := json.Unmarshal([]byte(stdout), &d); err != nil || !d.OK || d.Blobs == nil {
			t.Fatalf("gc --json %v: %v\n%s", args, err, stdout)
		}
		return d
	}

	n, size := kill()
	t.Logf("the killed import left %d file(s), %d bytes", n, size)
	snap := bundletest.Snapshot(t, root)
	dry := gcJSON("--dry-run")
	text := harness.MustRunStdout(t, f.work, "gc", "--store", root, "--dry-run")
	bundletest.SameTree(t, snap, bundletest.Snapshot(t, root))
	if dry.Temps != n || dry.TempBytes != size || !dry.DryRun {
		t.Errorf("gc --dry-run --json reports %d temporary file(s), %d bytes; STORE/tmp holds %d, %d bytes", dry.Temps, dry.TempBytes, n, size)
	}
	if want := fmt.Sprintf("would remove 0 unreferenced blob(s) (0 B) and %d temporary file(s) of interrupted runs (%s)", n, dist.HumanSize(size)); !strings.Contains(text, want) {
		t.Errorf("gc --dry-run says %q, want %q", text, want)
	}
	done := gcJSON()
	if done.Temps != dry.Temps || done.TempBytes != dry.TempBytes || done.DryRun {
		t.Errorf("gc removed %d file(s), %d bytes; the dry run said %d, %d", done.Temps, done.TempBytes, dry.Temps, dry.TempBytes)
	}
	if left, _ := tmpFiles(t, root); left != 0 {
		t.Errorf("gc left %d file(s) in STORE/tmp", left)
	}
	if inv := harness.MustRunStdout(t, f.work, "inventory", "--store", root); !strings.Contains(inv, fmt.Sprintf("and %d temporary files (%s) removed", n, dist.HumanSize(size))) {
		t.Errorf("the history does not record the temporary files gc removed:\n%s", inv)
	}

	n, size = kill()
	out := harness.MustRunStdout(t, f.work, "import", "--keyring", f.keyring, "--store", root, f.big)
	if want := fmt.Sprintf("removed %d temporary file(s) (%s) an interrupted import had left", n, dist.HumanSize(size)); !strings.Contains(out, want) || !strings.Contains(out, "imported bundle") {
		t.Errorf("the next import says:\n%s\nwant %q and the import done", out, want)
	}
	if left, _ := tmpFiles(t, root); left != 0 {
		t.Errorf("the import left %d file(s) in STORE/tmp", left)
	}
}
