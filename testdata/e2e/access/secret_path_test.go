package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestClientSecretPathOthersCanWrite: serve reads the identity
// provider's client secret only on a path that no user but root and its
// own may change (OpenSSH's StrictModes). As root, a client_secret_file
// in a directory another user owns, where that user linked /etc/shadow
// (root's, readable by its group: the file's own rule takes it), is
// refused naming the directory and its owner; so is one in a directory
// anyone may write (no sticky bit), and one reached through a link into
// such a directory. A sticky /tmp-like directory and a root-owned one its
// group (this process's) may write, as a Kubernetes volume under an
// fsGroup, are accepted: serve goes on to the identity provider.
func TestClientSecretPathOthersCanWrite(t *testing.T) {
	rootOnly(t)
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	base := t.TempDir()
	check := func(secretFile string) (string, int) {
		t.Helper()
		access := filepath.Join(t.TempDir(), "access.hcl")
		os.WriteFile(access, []byte(loginAccess(dexIssuer(harness.FreePort(t), false), secretFile, "", "12h")), 0o600)
		_, stderr, code := harness.RunSplit(t, "", nil, "serve", "--store", root, "--access", access, "--listen", "127.0.0.1:8443", "--check-config")
		return stderr, code
	}
	mkdir := func(name string, mode os.FileMode, uid, gid int) string {
		d := filepath.Join(base, name)
		os.Mkdir(d, 0o700)
		os.Chown(d, uid, gid)
		os.Chmod(d, mode)
		return d
	}
	const nobody = 65534

	// Another user's directory, with /etc/shadow linked in as the secret.
	theirs := mkdir("theirs", 0o755, nobody, nobody)
	os.Symlink("/etc/shadow", filepath.Join(theirs, "secret"))
	os.Lchown(filepath.Join(theirs, "secret"), nobody, nobody)
	if stderr, code := check(filepath.Join(theirs, "secret")); code != 1 || !strings.Contains(stderr, theirs+" on the way to it is owned by uid 65534") ||
		!strings.Contains(stderr, "hint: keep it in a directory only root and the user airgap runs as") {
		t.Errorf("a client secret linked to /etc/shadow in another user's directory: %d\n%s", code, stderr)
	}

	// A directory anyone may write, named directly and through a link.
	open := mkdir("open", 0o777, 0, 0)
	os.WriteFile(filepath.Join(open, "secret"), []byte("s\n"), 0o600)
	if stderr, code := check(filepath.Join(open, "secret")); code != 1 || !strings.Contains(stderr, open+" on the way to it has mode 0777") {
		t.Errorf("a client secret in a directory anyone may write: %d\n%s", code, stderr)
	}
	os.Symlink(filepath.Join(open, "secret"), filepath.Join(base, "link"))
	if stderr, code := check(filepath.Join(base, "link")); code != 1 || !strings.Contains(stderr, open+" on the way to it has mode 0777") {
		t.Errorf("a client secret reached through a link into a directory anyone may write: %d\n%s", code, stderr)
	}

	// Accepted: sticky, and root's with a group this process is in. The
	// check then reaches the (absent) identity provider.
	sticky := mkdir("sticky", os.ModeSticky|0o777, 0, 0)
	group := mkdir("group", os.ModeSetgid|0o770, 0, os.Getegid())
	for _, d := range []string{sticky, group} {
		os.WriteFile(filepath.Join(d, "secret"), []byte("s\n"), 0o600)
		if stderr, code := check(filepath.Join(d, "secret")); code != 1 || strings.Contains(stderr, "on the way to it") || !strings.Contains(stderr, "login: discovery at") {
			t.Errorf("a client secret in %s: %d\n%s", d, code, stderr)
		}
	}
}
