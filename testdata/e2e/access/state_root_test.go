package access

import (
	"os"
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
