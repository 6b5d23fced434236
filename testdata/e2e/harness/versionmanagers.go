package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The version managers the CLI release tests drive, from ../shared/clients
// (their modules are refused by the Go module proxy; its README says how
// each was built). .ci/run unpacks each and checks it against SHA256SUMS
// and names it in its variable; without the variable the tests unpack it
// themselves the same way. Missing or wrong fails the test: none is ever
// skipped.
const (
	TenvVersion     = "4.14.8"
	TfswitchVersion = "1.19.0"
	TfenvVersion    = "3.2.0"
	TenvEnv         = "AIRGAP_TEST_TENV"
	TfswitchEnv     = "AIRGAP_TEST_TFSWITCH"
	TfenvEnv        = "AIRGAP_TEST_TFENV" // the tfenv-3.2.0 directory (bin/tfenv inside)
)

var sharedTools sync.Map // name -> *sharedTool

type sharedTool struct {
	once      sync.Once
	path, err string
}

// sharedTool returns $env, or name unpacked from ../shared/clients into the
// test cache as bin (UnpackShared), once per test binary.
func sharedBin(t *testing.T, env, name, bin, what string) string {
	t.Helper()
	v, _ := sharedTools.LoadOrStore(name, &sharedTool{})
	st := v.(*sharedTool)
	st.once.Do(func() {
		if p := os.Getenv(env); p != "" {
			st.path = p
			return
		}
		cache, err := CacheDir()
		if err != nil {
			st.err = err.Error()
			return
		}
		p, err := UnpackShared(SharedClients, cache, name, bin)
		if err != nil {
			st.err = err.Error()
			return
		}
		st.path = p
	})
	if st.err != "" {
		t.Fatalf("%s is required by the CLI release tests: %s\nhint: set %s, or keep ../shared/clients/%s.xz and SHA256SUMS in place (.ci/run unpacks it)", what, st.err, env, name)
	}
	return st.path
}

// TenvBin is tenv (tofuutils/tenv).
func TenvBin(t *testing.T) string {
	return sharedBin(t, TenvEnv, "tenv-"+TenvVersion+"-linux-amd64", "tenv-"+TenvVersion, "tenv "+TenvVersion)
}

// TfswitchBin is tfswitch (warrensbox/terraform-switcher).
func TfswitchBin(t *testing.T) string {
	return sharedBin(t, TfswitchEnv, "tfswitch-"+TfswitchVersion+"-linux-amd64", "tfswitch-"+TfswitchVersion, "tfswitch "+TfswitchVersion)
}

// TfenvCopy is a fresh copy of tfenv (tfutils/tfenv, a bash script that
// installs into its own directory) in a directory of the test's, from
// $AIRGAP_TEST_TFENV or ../shared/clients/tfenv-3.2.0.tar.xz checked against
// SHA256SUMS; it returns the path of its bin/tfenv.
func TfenvCopy(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := os.Getenv(TfenvEnv)
	if src == "" {
		name := "tfenv-" + TfenvVersion + ".tar.xz"
		want, err := sharedSum(SharedClients, name)
		if err == nil {
			var got string
			if got, err = FileSHA256(filepath.Join(SharedClients, name)); err == nil && got != want {
				err = fmt.Errorf("%s is sha256 %s, SHA256SUMS says %s", name, got, want)
			}
		}
		if err != nil {
			t.Fatalf("tfenv %s is required by the CLI release tests: %v\nhint: set %s, or keep ../shared/clients/%s and SHA256SUMS in place (.ci/run unpacks it)", TfenvVersion, err, TfenvEnv, name)
		}
		if out, err := exec.Command("tar", "-xJf", filepath.Join(SharedClients, name), "-C", dst).CombinedOutput(); err != nil {
			t.Fatalf("unpacking %s: %v\n%s", name, err, out)
		}
		return filepath.Join(dst, "tfenv-"+TfenvVersion, "bin", "tfenv")
	}
	if out, err := exec.Command("cp", "-a", src, filepath.Join(dst, "tfenv")).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
	return filepath.Join(dst, "tfenv", "bin", "tfenv")
}
