package access

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestTokenRevokeBeyondRecordBound: serve keeps at most 50,000 login
// records in memory, and a state can hold more (replicas issuing at once
// at the bound each count only what they read; a directory restored from
// a backup). 'airgap token revoke --user' must still revoke every live
// token of the person: one it did not read stays live, and every replica
// admits it (a token not in memory is read from its file). Here 60,000
// revoked records of another person and 101 live tokens of alice: the
// old verb read 50,000 of the 60,101 in directory order, so some of
// alice's stayed live (the chance that none did: about 1e-8).
func TestTokenRevokeBeyondRecordBound(t *testing.T) {
	const fillers, alices = 60000, 100
	storeDir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	rec := &access.LoginToken{User: "alice@site.example", Subject: "alice", Issuer: "https://idp.example",
		Via: "cli", Created: now, Expires: now.Add(24 * time.Hour)}
	if _, err := access.IssueLoginToken(storeDir, rec); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(storeDir, "state", "logins", "tokens")
	write := func(i int, who string, revoked bool) {
		h := sha256.Sum256([]byte(who + strconv.Itoa(i)))
		r := access.LoginToken{User: who + "@site.example", Subject: who, Issuer: "https://idp.example", Via: "cli",
			SHA256: hex.EncodeToString(h[:]), Created: now, Expires: now.Add(24 * time.Hour)}
		r.Name = access.LoginNamePrefix + r.SHA256[:16]
		ext := ".json"
		if revoked {
			r.Revoked, r.RevokedBy, ext = now, "test", ".revoked"
		}
		b, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(tokens, r.SHA256+ext), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range fillers {
		write(i, "bob", true)
	}
	for i := range alices {
		write(i, "alice", false)
	}
	start := time.Now()
	out := harness.MustRunStdout(t, "", "token", "revoke", "--store", storeDir, "--user", "alice@site.example", "--json")
	t.Logf("revoke took %s", time.Since(start).Round(time.Millisecond))
	var res struct{ Revoked []string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ents, err := os.ReadDir(tokens)
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			live = append(live, e.Name())
		}
	}
	if len(live) > 0 || len(res.Revoked) != alices+1 {
		t.Fatalf("revoke --user alice revoked %d of %d; %d live records remain (every replica admits them), such as %s",
			len(res.Revoked), alices+1, len(live), live[0])
	}
}

// writeLoginRecords writes n records of who into a store's login state,
// as serve writes them (revoked ones as .revoked), created a day before
// now.
func writeLoginRecords(t *testing.T, storeDir, who string, n int, revoked bool) {
	t.Helper()
	tokens := filepath.Join(storeDir, "state", "logins", "tokens")
	if err := os.MkdirAll(tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for i := range n {
		h := sha256.Sum256([]byte(who + strconv.Itoa(i)))
		r := access.LoginToken{User: who + "@site.example", Subject: who, Issuer: "https://idp.example", Via: "cli",
			SHA256: hex.EncodeToString(h[:]), Created: now.Add(-24 * time.Hour), Expires: now.Add(24 * time.Hour)}
		r.Name = access.LoginNamePrefix + r.SHA256[:16]
		ext := ".json"
		if revoked {
			r.Revoked, r.RevokedBy, ext = now.Add(-time.Hour), "test", ".revoked"
		}
		b, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(tokens, r.SHA256+ext), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSignInWithStateFullOfRevoked: a login state at its 50,000 records,
// every one revoked (people gone, an incident's mass revocation), lets
// the next person sign in: the oldest ended records make room. Before,
// revoked records counted as the bound's until the sweep removed them,
// 30 days after their revocation, so nobody could sign in for a month,
// and the refusal's hint (revoke unused tokens) freed nothing.
func TestSignInWithStateFullOfRevoked(t *testing.T) {
	t.Parallel()
	f := newLoginFixture(t, loginOptions{plainIdP: true, onlyMock: true, before: func(store string) {
		writeLoginRecords(t, store, "gone", 50000, true)
	}})
	resp, body := f.signIn(t, f.browser(), f.base+"oauth/signin?next=%2F", nil)
	if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, `id="person"`) {
		t.Fatalf("a sign-in with the state full of revoked records: %v\n%.600s", resp, stripTags(body))
	}
	ents, _ := os.ReadDir(filepath.Join(f.store, "state", "logins", "tokens"))
	if len(ents) > 50000 {
		t.Errorf("the state holds %d records, more than 50,000", len(ents))
	}
}
