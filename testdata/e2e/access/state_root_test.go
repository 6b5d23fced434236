package access

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// serveUID is the user serve runs as in these tests: not root, and owning
// no file the test leaves behind.
const serveUID, serveGID = 65534, 65534

// rootOnly skips a test of what a verb does as root when the tests do not
// run as root.
func rootOnly(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack is on a verb run as root")
	}
}

// loginStore makes a store directory whose state/logins holds n login
// tokens of alice (records as a completed sign-in writes them), all of it
// then given to serveUID, as serve, running as that user, would leave it.
func loginStore(t *testing.T, n int) (storeDir string, names []string) {
	t.Helper()
	storeDir = t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	for i := range n {
		rec := &access.LoginToken{User: "alice@site.example", Subject: "alice-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Issuer: "https://idp.example",
			Via: "cli", Created: now, Expires: now.Add(24 * time.Hour)}
		if _, err := access.IssueLoginToken(storeDir, rec); err != nil {
			t.Fatal(err)
		}
		names = append(names, rec.Name)
	}
	state := filepath.Join(storeDir, "state")
	filepath.Walk(state, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, serveUID, serveGID)
		}
		return err
	})
	return storeDir, names
}

// ownerOf is the uid owning path (not following a link).
func ownerOf(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// TestTokenRevokeAsRootFollowsNoLink: 'airgap token revoke --store' run as
// root while serve's user swaps the record it writes for a link to a
// root-owned file (and the tokens directory itself for a link to a root
// directory) never gives that file away, never writes into that
// directory, and leaves the records it wrote to serve's user.
func TestTokenRevokeAsRootFollowsNoLink(t *testing.T) {
	rootOnly(t)
	const rounds = 40
	storeDir, names := loginStore(t, rounds)
	tokens := filepath.Join(storeDir, "state", "logins", "tokens")
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:secret\n"), 0o600)
	rootDir := filepath.Join(t.TempDir(), "rootdir")
	os.Mkdir(rootDir, 0o700)

	recs, err := access.LoginTokens(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	hashOf := map[string]string{}
	for _, r := range recs {
		hashOf[r.Name] = r.SHA256
	}
	for i, name := range names {
		revoked := filepath.Join(tokens, hashOf[name]+".revoked")
		var stop atomic.Bool
		var wg sync.WaitGroup
		attack := func(g int) { // serve's user, swapping as fast as it can
			defer wg.Done()
			for j := 0; !stop.Load(); j++ {
				// A pool of links made ahead, so that each swap is one rename.
				pool := make([]string, 64)
				for k := range pool {
					pool[k] = filepath.Join(tokens, ".swap-"+strconv.Itoa(g)+"-"+strconv.Itoa(k))
					os.Remove(pool[k])
					os.Symlink(secret, pool[k])
				}
				for _, l := range pool {
					os.Rename(l, revoked)
				}
				if i%4 == 3 && g == 0 && j%20 == 0 { // now and then the directory itself
					os.Rename(tokens, tokens+".real")
					os.Symlink(rootDir, tokens)
					time.Sleep(time.Millisecond)
					os.Remove(tokens)
					os.Rename(tokens+".real", tokens)
				}
			}
		}
		wg.Add(2)
		go attack(0)
		go attack(1)
		_, out, code := harness.RunSplit(t, "", nil, "token", "revoke", "--store", storeDir, name)
		stop.Store(true)
		wg.Wait()
		if code != 0 {
			t.Logf("round %d: exit %d: %s", i, code, out)
		}
		if got := ownerOf(t, secret); got != 0 {
			t.Fatalf("round %d: token revoke (exit %d: %s) gave the root-owned file to uid %d", i, code, out, got)
		}
		// The attacker's own links land there too while the directory is
		// swapped; a regular file there is the verb's.
		ents, _ := os.ReadDir(rootDir)
		for _, e := range ents {
			if e.Type().IsRegular() {
				t.Fatalf("round %d: token revoke wrote %s into a root directory linked in place of the tokens directory", i, e.Name())
			}
		}
		if b, _ := os.ReadFile(secret); string(b) != "root:secret\n" {
			t.Fatalf("round %d: the root-owned file was changed: %q", i, b)
		}
	}
	// Without the attacker, a revoke as root leaves serve's user owning
	// the record it wrote (serve must read it).
	storeDir, names = loginStore(t, 1)
	harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--store", storeDir, names[0])
	ents, _ := os.ReadDir(filepath.Join(storeDir, "state", "logins", "tokens"))
	found := false
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".revoked") {
			found = true
			if got := ownerOf(t, filepath.Join(storeDir, "state", "logins", "tokens", e.Name())); got != serveUID {
				t.Errorf("the revoked record root wrote belongs to uid %d, not serve's user %d", got, serveUID)
			}
		}
	}
	if !found {
		t.Errorf("no revoked record after token revoke: %v", ents)
	}
}

// within runs fn and reports whether it returned within d (fn is left
// running when it did not: the test is failing then anyway).
func within(d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestLoginStateFIFO: a FIFO put among the login tokens (by serve's user,
// or anyone who can write the state) holds up nothing: serve keeps
// answering requests with a login token through its rescans (one on the
// directory's change, one full every 10 s), 'airgap token list' and
// 'token revoke' as root finish, and serve ends on SIGTERM.
func TestLoginStateFIFO(t *testing.T) {
	f := newLoginFixture(t, loginOptions{plainIdP: true, onlyMock: true})
	now := time.Now().UTC().Truncate(time.Second)
	rec := &access.LoginToken{User: kilgore, Subject: "kilgore", Issuer: f.dex.issuer, Groups: []string{"authors"},
		Via: "cli", Created: now, Expires: now.Add(time.Hour)}
	secret, err := access.IssueLoginToken(f.store, rec)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(f.store, "state", "logins", "tokens")
	for _, n := range []string{strings.Repeat("ab", 32) + ".json", strings.Repeat("cd", 32) + ".revoked"} {
		if err := syscall.Mkfifo(filepath.Join(tokens, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cl, _, _ := harness.CAClient(t, f.store)
	u := f.base + "v1/providers/hashicorp/random/versions"
	for i := 0; i < 14; i++ { // past the full rescan
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		var st int
		if !within(5*time.Second, func() {
			if resp, err := cl.Do(req); err == nil {
				st = resp.StatusCode
				resp.Body.Close()
			}
		}) {
			t.Fatalf("request %d with a login token: no answer within 5 s with a FIFO among the login tokens", i)
		}
		if st != 200 {
			t.Fatalf("request %d with a login token: status %d, want 200", i, st)
		}
		time.Sleep(time.Second)
	}
	// A sign-in (the catalog's, through Dex) completes: issuing its token
	// takes the state's lock, which a scan stuck on the FIFO held.
	var resp *http.Response
	if !within(20*time.Second, func() { resp, _ = f.signIn(t, f.browser(), f.base+"oauth/signin?next=%2F", nil) }) {
		t.Fatal("a sign-in did not finish within 20 s with a FIFO among the login tokens")
	}
	if resp == nil || resp.StatusCode != 200 || resp.Request.URL.Path != "/" {
		t.Fatalf("the sign-in with a FIFO among the login tokens ended at %v", resp)
	}
	for _, args := range [][]string{{"token", "list", "--store", f.store}, {"token", "revoke", "--store", f.store, rec.Name}} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		cmd := exec.CommandContext(ctx, harness.Bin, args...)
		cmd.Env = harness.BaseEnv()
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) } // its goroutines, to see where
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() == context.DeadlineExceeded
		cancel()
		if timedOut {
			t.Fatalf("airgap %s did not finish within 15 s with a FIFO among the login tokens:\n%.3000s", strings.Join(args, " "), out)
		}
		if err != nil || !strings.Contains(string(out), rec.Name) {
			t.Errorf("airgap %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	f.serve.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(15 * time.Second)
	for syscall.Kill(f.serve.Pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("serve did not end within 15 s of SIGTERM with a FIFO among the login tokens")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTokenAuditLogAsRootFollowsNoLink: 'airgap token create|revoke
// --audit-log FILE' run as root, where FILE's directory belongs to serve's
// user (/var/log/airgap, say) who made FILE a link to a root-owned file
// and FILE.lock a link to a name in a root directory, appends nothing to
// that file and creates nothing there; with no links, the log root
// created is serve's user's, who appends to it.
func TestTokenAuditLogAsRootFollowsNoLink(t *testing.T) {
	rootOnly(t)
	logDir := t.TempDir()
	os.Chown(logDir, serveUID, serveGID)
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:secret\n"), 0o600)
	rootDir := t.TempDir()
	audit := filepath.Join(logDir, "audit.jsonl")
	os.Symlink(secret, audit)
	accessFile := filepath.Join(t.TempDir(), "access.hcl")
	for i, name := range []string{"ci", "ci2"} {
		if i == 1 { // now the lock file too
			os.Remove(audit + ".lock")
			os.Symlink(filepath.Join(rootDir, "planted"), audit+".lock")
		}
		_, stderr, code := harness.RunSplit(t, "", nil, "token", "create", "--access", accessFile, "--name", name, "--allow", "registry.terraform.io/**",
			"--out", filepath.Join(t.TempDir(), "ci.token"), "--audit-log", audit)
		t.Logf("token create (exit %d): %s", code, stderr)
		if b, _ := os.ReadFile(secret); string(b) != "root:secret\n" {
			t.Errorf("token create --audit-log appended to the root-owned file a link named: %q", b)
		}
		if ents, _ := os.ReadDir(rootDir); len(ents) != 0 {
			t.Errorf("token create --audit-log created %s in a root directory through a link", ents[0].Name())
		}
		if !strings.Contains(stderr, "not recorded in the audit log") {
			t.Errorf("token create did not warn that the audit log was not written: %s", stderr)
		}
	}
	// Without links: the log and its lock are serve's user's.
	os.Remove(audit)
	os.Remove(audit + ".lock")
	harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--access", accessFile, "ci", "--audit-log", audit)
	for _, p := range []string{audit, audit + ".lock"} {
		if got := ownerOf(t, p); got != serveUID {
			t.Errorf("%s, created by root, belongs to uid %d, not serve's user %d", filepath.Base(p), got, serveUID)
		}
	}
}

// TestTokenAccessFileAsRootFollowsNoLink: 'airgap token create --access
// FILE' run as root, where FILE's directory is writable by serve's user
// who made FILE a link to a root-owned access file (and FILE.lock a link
// into a root directory), neither reads through the link nor creates the
// lock there, and changes nothing.
func TestTokenAccessFileAsRootFollowsNoLink(t *testing.T) {
	rootOnly(t)
	dir := t.TempDir()
	os.Chown(dir, serveUID, serveGID)
	rootDir := t.TempDir()
	real := filepath.Join(rootDir, "access.hcl")
	os.WriteFile(real, []byte("# root's own access file\n"), 0o600)
	accessFile := filepath.Join(dir, "access.hcl")
	os.Symlink(real, accessFile)
	os.Symlink(filepath.Join(rootDir, "planted"), accessFile+".lock")
	for _, lockLinked := range []bool{true, false} {
		if !lockLinked {
			os.Remove(accessFile + ".lock")
		}
		_, stderr, code := harness.RunSplit(t, "", nil, "token", "create", "--access", accessFile, "--name", "ci", "--allow", "registry.terraform.io/**",
			"--out", filepath.Join(t.TempDir(), "ci.token"))
		t.Logf("token create (exit %d): %s", code, stderr)
		if code == 0 {
			t.Errorf("token create through a link in a directory serve's user can write: exit 0")
		}
		if b, _ := os.ReadFile(real); string(b) != "# root's own access file\n" {
			t.Errorf("the root-owned file behind the link changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(rootDir, "planted")); err == nil {
			t.Errorf("token create made a lock file in a root directory through a link")
		}
	}
}

// TestTLSDirAsRootFollowsNoLink: the verbs root runs on STORE/tls, which
// belongs to serve's user. 'token rotate-url-key' leaves the key file
// serve's (serve must read it), creates no lock through a link, and
// reads no FIFO; 'airgap ca' reads the CA without waiting on a FIFO and
// does not make a CA serve could not read.
func TestTLSDirAsRootFollowsNoLink(t *testing.T) {
	rootOnly(t)
	storeDir := t.TempDir()
	tlsDir := filepath.Join(storeDir, "tls")
	os.Mkdir(tlsDir, 0o700)
	os.Chown(tlsDir, serveUID, serveGID)
	run := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, harness.Bin, args...).CombinedOutput()
		if ctx.Err() == context.DeadlineExceeded {
			t.Fatalf("airgap %s did not finish within 15 s", strings.Join(args, " "))
		}
		return string(out), harness.ExitCode(err)
	}

	// A first rotation: the new key file is serve's user's.
	if out, code := run("token", "rotate-url-key", "--store", storeDir); code != 0 {
		t.Fatalf("rotate-url-key: exit %d\n%s", code, out)
	}
	for _, n := range []string{"url-keys.json", "url-keys.json.lock"} {
		if got := ownerOf(t, filepath.Join(tlsDir, n)); got != serveUID {
			t.Errorf("%s, written by root, belongs to uid %d, not serve's user %d", n, got, serveUID)
		}
	}
	// The lock a link into a root directory, then the key file a FIFO.
	rootDir := t.TempDir()
	os.Remove(filepath.Join(tlsDir, "url-keys.json.lock"))
	os.Symlink(filepath.Join(rootDir, "planted"), filepath.Join(tlsDir, "url-keys.json.lock"))
	out, code := run("token", "rotate-url-key", "--store", storeDir)
	if _, err := os.Stat(filepath.Join(rootDir, "planted")); err == nil || code == 0 {
		t.Errorf("rotate-url-key with its lock a link into a root directory: exit %d, planted: %v\n%s", code, err == nil, out)
	}
	os.Remove(filepath.Join(tlsDir, "url-keys.json.lock"))
	os.Remove(filepath.Join(tlsDir, "url-keys.json"))
	syscall.Mkfifo(filepath.Join(tlsDir, "url-keys.json"), 0o600)
	if out, code := run("token", "rotate-url-key", "--store", storeDir); code == 0 || !strings.Contains(out, "hint:") {
		t.Errorf("rotate-url-key with its key file a FIFO: exit %d\n%s", code, out)
	}

	// airgap ca: no CA yet in serve's directory — refused with a hint, not
	// made by root; a FIFO for the certificate is refused at once.
	out, code = run("ca", "--store", storeDir)
	if code == 0 || !strings.Contains(out, "hint:") {
		t.Errorf("airgap ca as root with no CA in serve's tls directory: exit %d\n%s", code, out)
	}
	if _, err := os.Lstat(filepath.Join(tlsDir, "ca")); err == nil {
		t.Errorf("airgap ca as root made a CA in serve's tls directory")
	}
	os.Mkdir(filepath.Join(tlsDir, "ca"), 0o700)
	os.Chown(filepath.Join(tlsDir, "ca"), serveUID, serveGID)
	syscall.Mkfifo(filepath.Join(tlsDir, "ca", "ca.pem"), 0o600)
	if out, code := run("ca", "--store", storeDir); code == 0 {
		t.Errorf("airgap ca with its certificate a FIFO: exit 0\n%s", out)
	}
}

// TestTokenAuditLogAsRootHardLink: 'airgap token create|revoke
// --audit-log FILE' run as root, where FILE's directory is serve's user's,
// who made FILE and FILE.lock hard links to root-owned files (what a user
// can do where fs.protected_hardlinks is 0; the test, as root, makes the
// links itself): root neither appends to that file nor gives either of
// them to serve's user, and says the action was not recorded. (Root gave
// away any root-owned file it found there, taking it for one it had just
// created, and appended to it.)
func TestTokenAuditLogAsRootHardLink(t *testing.T) {
	rootOnly(t)
	logDir := t.TempDir()
	os.Chown(logDir, serveUID, serveGID)
	victims := t.TempDir()
	secret, lockVictim := filepath.Join(victims, "shadow"), filepath.Join(victims, "passwd")
	os.WriteFile(secret, []byte("root:secret\n"), 0o600)
	os.WriteFile(lockVictim, []byte("root:x:0:0\n"), 0o600)
	audit := filepath.Join(logDir, "audit.jsonl")
	if err := os.Link(lockVictim, audit+".lock"); err != nil {
		t.Fatal(err)
	}
	accessFile := filepath.Join(t.TempDir(), "access.hcl")
	check := func(what string) {
		t.Helper()
		for _, v := range []string{secret, lockVictim} {
			if got := ownerOf(t, v); got != 0 {
				t.Errorf("%s: the root-owned file %s, hard-linked into serve's user's log directory, now belongs to uid %d", what, filepath.Base(v), got)
			}
		}
		if b, _ := os.ReadFile(secret); string(b) != "root:secret\n" {
			t.Errorf("%s appended to the root-owned file a hard link named: %q", what, b)
		}
	}
	// The lock file alone a link: the log itself is new, serve's user's.
	harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", accessFile, "--name", "ci", "--allow", "registry.terraform.io/**",
		"--out", filepath.Join(t.TempDir(), "ci.token"), "--audit-log", audit)
	check("token create")
	if got := ownerOf(t, audit); got != serveUID {
		t.Errorf("the audit log root created belongs to uid %d, not serve's user %d", got, serveUID)
	}
	// The log a link too.
	os.Remove(audit)
	if err := os.Link(secret, audit); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := harness.RunSplit(t, "", nil, "token", "revoke", "--access", accessFile, "ci", "--audit-log", audit)
	t.Logf("token revoke (exit %d): %s", code, stderr)
	check("token revoke")
	if !strings.Contains(stderr, "not recorded in the audit log") || !strings.Contains(stderr, "more than one hard link") {
		t.Errorf("token revoke did not say the audit log was not written, and why: %s", stderr)
	}
}

// TestCAAsRootOnAnOpenedFolder: root making the local CA ('airgap ca')
// judges and writes through the tls directory it opened, never by path.
// In a store another user owns, a tls that is a link (even one root owns:
// the state a swap between a check and the writes would leave) is not
// followed, and nothing is made where it points; a tls directory another
// user owns, or one anyone may write, is refused with a hint; a store of
// root's gets its CA.
func TestCAAsRootOnAnOpenedFolder(t *testing.T) {
	rootOnly(t)
	t.Parallel()
	run := func(store string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, harness.Bin, "ca", "--store", store).CombinedOutput()
		return string(out), harness.ExitCode(err)
	}
	theirs := func() string {
		s := filepath.Join(t.TempDir(), "store")
		os.Mkdir(s, 0o755)
		os.Chown(s, serveUID, serveGID)
		return s
	}

	// tls a root-owned link, in a store another user owns, to a root folder.
	target := t.TempDir()
	linked := theirs()
	os.Symlink(target, filepath.Join(linked, "tls"))
	if out, code := run(linked); code == 0 || !strings.Contains(out, "hint:") {
		t.Errorf("airgap ca with tls a link in another user's store: exit %d\n%s", code, out)
	}
	if names, _ := os.ReadDir(target); len(names) != 0 {
		t.Errorf("airgap ca wrote through the link into %s: %v", target, names)
	}

	// tls another user's, and tls anyone may write.
	owned := theirs()
	os.Mkdir(filepath.Join(owned, "tls"), 0o700)
	os.Chown(filepath.Join(owned, "tls"), serveUID, serveGID)
	open := filepath.Join(t.TempDir(), "store")
	os.MkdirAll(filepath.Join(open, "tls"), 0o755)
	os.Chmod(filepath.Join(open, "tls"), 0o777)
	for what, s := range map[string]string{"owned by another user": owned, "anyone may write": open} {
		out, code := run(s)
		if code == 0 || !strings.Contains(out, "hint:") {
			t.Errorf("airgap ca with a tls folder %s: exit %d\n%s", what, code, out)
		}
		if _, err := os.Lstat(filepath.Join(s, "tls", "ca")); err == nil {
			t.Errorf("airgap ca made a CA in a tls folder %s", what)
		}
	}

	// A store of root's: the CA is made, its key 0600.
	ours := filepath.Join(t.TempDir(), "store")
	os.Mkdir(ours, 0o755)
	if out, code := run(ours); code != 0 || !strings.Contains(out, "BEGIN CERTIFICATE") {
		t.Fatalf("airgap ca in root's store: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(filepath.Join(ours, "tls", "ca", "ca.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the CA key: %v %v", fi, err)
	}
}
