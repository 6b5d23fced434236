package access

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airgap/airgap/server/acl"
)

// BenchmarkAuthenticate is the token check alone (no HTTP, no answer), for
// an access-file token and a login token of the same rules: the login
// token is looked up in the access file's table first (a miss), then in
// the login principals (atomic loads and a map lookup).
func BenchmarkAuthenticate(b *testing.B) {
	dir := b.TempDir()
	access := filepath.Join(dir, "access.hcl")
	os.WriteFile(access, []byte("login {\n  issuer = \"https://idp.invalid\"\n  client_id = \"airgap\"\n}\ngroup \"g\" {\n  allow = [\"**\"]\n}\n"), 0o600)
	now := time.Now().UTC().Truncate(time.Second)
	file, err := acl.AddToken(access, "bench", []string{"**"}, time.Time{}, now)
	if err != nil {
		b.Fatal(err)
	}
	ac, err := NewAccessControl(AccessOptions{File: access, TLSDir: filepath.Join(dir, "tls"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		b.Fatal(err)
	}
	login, err := ac.logins.Load().issue(&LoginToken{User: "b@site.example", Subject: "b", Issuer: "https://idp.invalid", Groups: []string{"g"},
		Via: "cli", Created: now, Expires: now.Add(time.Hour)}, now)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, token string }{{"access-file", file}, {"login", login}} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/v1/providers/hashicorp/random/versions", nil)
			r.Header.Set("Authorization", "Bearer "+c.token)
			set := ac.set.Load()
			if p, fail := ac.authenticate(r, set); fail != nil || p == nil {
				b.Fatalf("%s: %v", c.name, fail)
			}
			b.ReportAllocs()
			for b.Loop() {
				ac.authenticate(r, set)
			}
		})
	}
}
