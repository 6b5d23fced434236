package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestAccessFileOwnedByAnother: serve running as root reads an access
// file in a folder another user can write (a group-writable /etc/airgap,
// say). That user swaps in a file of their own, mode 0600, with a token
// they made: only its owner may read it, but its owner is not serve's
// user nor root, so serve must not take it (root reads every file, so
// "only its owner may read it" says nothing about who wrote it). serve
// keeps the tokens it had and logs why; --check-config refuses the file
// naming its owner and the rule; the same text owned by root is taken, so
// the refusal is the owner's.
func TestAccessFileOwnedByAnother(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs serve as root and hands a file to another user (chown): run it as root")
	}
	root, _, _ := harness.OpsStore(t)
	work := t.TempDir()
	tok := func(file, name string) (string, string) {
		secret := strings.TrimSpace(harness.MustRunStdout(t, "", "token", "create", "--access", file, "--name", name, "--allow", "**"))
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return secret, string(b)
	}
	a, _ := tok(filepath.Join(work, "first.hcl"), "a")
	b, theirs := tok(filepath.Join(work, "theirs.hcl"), "b")
	dir := filepath.Join(work, "etc")
	if err := os.Mkdir(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, 0, 4242) // the attacker's group may write it
	os.Chmod(dir, 0o775)
	file := filepath.Join(dir, "access.hcl")
	first, _ := os.ReadFile(filepath.Join(work, "first.hcl"))
	if err := os.WriteFile(file, first, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := harness.StartServe(t, root, "--access", file)
	cl, _, _ := harness.CAClient(t, root)
	code := func(secret string) int {
		resp, _ := harness.HTTPGet(t, cl, srv.Base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+secret)
		return resp.StatusCode
	}
	if ca, cb := code(a), code(b); ca != 200 || cb != 401 {
		t.Fatalf("before: a %d, b %d; want 200, 401", ca, cb)
	}
	// The other user (uid 4242) replaces the file with their own, 0600.
	swap := filepath.Join(dir, ".swap")
	if err := os.WriteFile(swap, []byte(theirs), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(swap, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swap, file); err != nil {
		t.Fatal(err)
	}
	// serve re-reads a changed file within a second: give it two and a
	// half (one try each: failed tokens are rate-limited per address).
	time.Sleep(2500 * time.Millisecond)
	if ca, cb := code(a), code(b); ca != 200 || cb != 401 {
		t.Errorf("after another user's file replaced the access file: a %d, b %d; want 200, 401 (serve took their file)", ca, cb)
	}
	out, err := harness.CmdRun(t, "", nil, harness.Bin, "serve", "--store", root, "--access", file, "--check-config")
	if err == nil || !strings.Contains(out, "owner 4242:4242") || !strings.Contains(out, "hint:") {
		t.Errorf("serve --check-config with an access file another user owns: %v\n%s", err, out)
	}
	// The same text, owned by root: taken.
	os.Chown(file, 0, 0)
	time.Sleep(2500 * time.Millisecond)
	if cb := code(b); cb != 200 {
		t.Errorf("the same file owned by root: b %d, want 200", cb)
	}
}
