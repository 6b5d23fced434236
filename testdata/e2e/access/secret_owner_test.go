package access

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestAccessFileOwnedByAnother: serve running as root finds its access
// file replaced by a file another user owns, mode 0600, with a token they
// made (a folder that user could write is refused outright:
// TestSecretPathsOthersCanWrite; here the file is renamed in by root, as
// a restore that kept owners would). Only its owner may read it, but its
// owner is not serve's user nor root, so serve must not take it (root
// reads every file, so "only its owner may read it" says nothing about
// who wrote it). serve keeps the tokens it had and logs why;
// --check-config refuses the file naming its owner and the rule; the same
// text owned by root is taken, so the refusal is the owner's.
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
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
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
	// The other user's file (uid 4242), 0600, replaces the access file.
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
	if err == nil || !strings.Contains(out, "is owned by uid 4242") || !strings.Contains(out, "hint:") {
		t.Errorf("serve --check-config with an access file another user owns: %v\n%s", err, out)
	}
	// The same text, owned by root: taken.
	os.Chown(file, 0, 0)
	time.Sleep(2500 * time.Millisecond)
	if cb := code(b); cb != 200 {
		t.Errorf("the same file owned by root: b %d, want 200", cb)
	}
}

// TestURLKeysAsRootOverAnothersStore: serve run as root over a store
// whose tls folder belongs to another user (the store's owner) makes its
// URL keys, hands them to that owner as every file root writes there, and
// still takes them: a signed download URL downloads. The store's owner is
// trusted with the store already; the secret-file rule's "this process's
// user or root" does not refuse the owner of the keys' own folder.
func TestURLKeysAsRootOverAnothersStore(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs serve as root over a folder another user owns (chown): run it as root")
	}
	root, _, _ := harness.OpsStore(t)
	tlsDir := filepath.Join(root, "tls")
	// The CA and the URL keys made, then the folder handed to its owner
	// as a root-run verb hands what it writes there.
	harness.MustRun(t, "", nil, harness.Bin, "ca", "--store", root)
	harness.MustRun(t, "", nil, harness.Bin, "token", "rotate-url-key", "--store", root)
	filepath.WalkDir(tlsDir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			os.Lchown(p, 4242, 4242)
		}
		return nil
	})
	access := filepath.Join(t.TempDir(), "access.hcl")
	ci := harness.CreateToken(t, access, "ci", "**")
	srv := harness.StartServe(t, root, "--access", access)
	cl, _, _ := harness.CAClient(t, root)
	u := signedURL(t, cl, srv.Base[:len(srv.Base)-1], "Authorization", "Bearer "+ci)
	if resp, body := harness.HTTPGet(t, cl, u); resp.StatusCode != 200 || len(body) == 0 {
		t.Errorf("the signed download URL: %s (%d bytes)\n%s", resp.Status, len(body), srv.Logs.String())
	}
	fi, err := os.Stat(filepath.Join(tlsDir, "url-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	if uid, _, _ := osfileOwner(fi); uid != 4242 {
		t.Errorf("the URL keys are owned by %d, not the folder's owner 4242 (the test no longer tests what it says)", uid)
	}
}

func osfileOwner(fi os.FileInfo) (int, int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}

// TestTokenListAsRootOfServesFile: root lists (and edits) the access file
// of the user serve runs as, 0600 and theirs: the owner is serve's to
// judge, so the owner rule does not turn root away from the file.
func TestTokenListAsRootOfServesFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test hands the access file to another user (chown): run it as root")
	}
	access := filepath.Join(t.TempDir(), "access.hcl")
	harness.CreateToken(t, access, "ci", "**")
	if err := os.Chown(access, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	harness.CreateToken(t, access, "deploy", "**")
	out := harness.MustRunStdout(t, "", "token", "list", "--access", access)
	if !strings.Contains(out, "ci") || !strings.Contains(out, "deploy") {
		t.Errorf("token list as root of serve's file:\n%s", out)
	}
}
