package acl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const loginSample = `login {
  issuer             = "https://idp.site.example/realms/eng"
  client_id          = "airgap"
  client_secret_file = "/etc/airgap/oidc-secret"
  token_lifetime     = "7d"
}

group "platform" { allow = ["registry.terraform.io/hashicorp/*", "site.example/**"] }
group "Network Team" { allow = ["site.example/net/**"] }
user  "Alice@Site.Example" { allow = ["registry.opentofu.org/**"] }
`

func TestParseLogin(t *testing.T) {
	f, err := Parse([]byte(loginSample), "access.hcl")
	if err != nil {
		t.Fatal(err)
	}
	l := f.Login
	if l.Issuer != "https://idp.site.example/realms/eng" || l.ClientID != "airgap" || l.TokenLifetime != 7*24*time.Hour ||
		l.GroupsClaim != "groups" || strings.Join(l.Scopes, " ") != "openid email profile groups" || l.CAFile != "" {
		t.Errorf("login: %+v", l)
	}
	for _, c := range []struct {
		groups   []string
		email    string
		verified bool
		want     string
		matched  string
	}{
		{[]string{"platform"}, "bob@site.example", true, "registry.terraform.io/hashicorp/* site.example/**", "platform"},
		{[]string{"PLATFORM", "network team", "other"}, "", true, "registry.terraform.io/hashicorp/* site.example/** site.example/net/**", "network team platform"},
		{nil, "alice@site.example", true, "registry.opentofu.org/**", ""},
		{nil, "alice@site.example", false, "", ""}, // an unverified address gets no user block
		{[]string{"platform", "platform"}, "ALICE@site.example", true, "registry.terraform.io/hashicorp/* site.example/** registry.opentofu.org/**", "platform"},
		{[]string{"visitors"}, "eve@site.example", true, "", ""},
	} {
		pats, matched := f.LoginRules(c.groups, c.email, c.verified)
		if strings.Join(pats, " ") != c.want || strings.Join(matched, " ") != c.matched {
			t.Errorf("LoginRules(%v, %s, %v) = %v %v, want %s / %s", c.groups, c.email, c.verified, pats, matched, c.want, c.matched)
		}
	}
}

func TestParseLoginErrors(t *testing.T) {
	login := func(attrs string) string {
		return "login {\n  issuer = \"https://idp.example\"\n  client_id = \"airgap\"\n" + attrs + "}\n"
	}
	for _, c := range []struct{ src, want string }{
		{"login {\n  issuer = \"http://idp.example\"\n  client_id = \"airgap\"\n}\n", "a.hcl:2:3: login: issuer \"http://idp.example\" must be https"},
		{"login {\n  issuer = \"https://idp.example/?x=1\"\n  client_id = \"airgap\"\n}\n", "a.hcl:2:3: login: issuer"},
		{"login {\n  issuer = \"https://idp.example\"\n  client_id = \"\"\n}\n", "a.hcl:3:3: login: client_id"},
		{"login {\n  issuer = \"https://idp.example\"\n}\n", `a.hcl:1:7: Missing required argument: The argument "client_id" is required`},
		{login("  scopes = [\"email\"]\n"), "a.hcl:4:3: login: scopes must include \"openid\""},
		{login("  scopes = [\"open id\"]\n"), "a.hcl:4:3: login: scope \"open id\""},
		{login("  token_lifetime = \"forever\"\n"), "a.hcl:4:3: login: token_lifetime \"forever\""},
		{login("  token_lifetime = \"400d\"\n"), "a.hcl:4:3: login: token_lifetime"},
		{login("  groups_claim = \"a\\u0007b\"\n"), "a.hcl:4:3: login: groups_claim"},
		{login("  tenant = \"x\"\n"), `a.hcl:4:3: Unsupported argument: An argument named "tenant" is not expected here`},
		{login("") + login(""), "a.hcl:5:1: more than one login block"},
		{"group \"g\" { allow = [\"**\"] }\n", "a.hcl:1:1: group blocks give people who sign in"},
		{"user \"a@b\" { allow = [\"**\"] }\n", "a.hcl:1:1: user blocks give people who sign in"},
		{login("") + "group \"g\" { allow = [\"**\"] }\ngroup \"G\" { allow = [\"**\"] }\n", "a.hcl:6:1: a second group block for \"G\""},
		{login("") + "user \"alice\" { allow = [\"**\"] }\n", "a.hcl:5:1: user \"alice\": name a person by the e-mail address"},
		{login("") + "group \"g\" { allow = [\"a/b\"] }\n", "a.hcl:5:1: group \"g\": pattern \"a/b\" has 2 parts"},
		{login("") + "group \"\" { allow = [\"**\"] }\n", "a.hcl:5:1: group name \"\""},
		{"revoked \"ci\" {\n  sha256 = \"00\"\n  revoked = \"2026-01-01T00:00:00Z\"\n}\n", "a.hcl:1:1: revoked \"ci\": sha256 must be 64"},
	} {
		_, err := Parse([]byte(c.src), "a.hcl")
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %q", c.src, err, c.want)
		}
	}
	// http on loopback (a test IdP) is fine.
	if _, err := Parse([]byte("login {\n  issuer = \"http://127.0.0.1:5556/dex\"\n  client_id = \"a\"\n}\n"), "a.hcl"); err != nil {
		t.Error(err)
	}
}

func TestReadSecretFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	os.WriteFile(p, []byte("  s3cret  \nignored\n"), 0o600)
	if s, err := ReadSecretFile(p); err != nil || s != "s3cret" {
		t.Errorf("ReadSecretFile: %q %v", s, err)
	}
	os.Chmod(p, 0o644)
	if _, err := ReadSecretFile(p); !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a secret file others may read: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600)
	if _, err := ReadSecretFile(filepath.Join(dir, "empty")); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty secret file: %v", err)
	}
	if _, err := ReadSecretFile(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing secret file")
	}
}

// TestRevokeKeepsName: a revoked token stays in the file as a revoked
// block (its name and hash), its name may be used again at once, and the
// file keeps the newest MaxRevoked.
func TestRevokeKeepsName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.hcl")
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	sec, err := AddToken(path, "ci", []string{"**"}, time.Time{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := RevokeToken(path, "ci", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil || len(f.Tokens) != 0 || len(f.Revoked) != 1 || f.Revoked[0].Name != "ci" || f.Revoked[0].Hash != HashSecret(sec) || !f.Revoked[0].Revoked.Equal(now.Add(time.Hour)) {
		t.Fatalf("after revoking: %v %+v", err, f)
	}
	if _, err := AddToken(path, "ci", []string{"**"}, time.Time{}, now); err != nil {
		t.Errorf("a new token under a revoked name: %v", err)
	}
	// At the limit, the oldest revoked block goes.
	var b strings.Builder
	b.WriteString(header)
	for i := range MaxRevoked {
		fmt.Fprintf(&b, "revoked \"old-%d\" {\n  sha256 = \"%064x\"\n  revoked = \"2026-01-01T00:00:00Z\"\n}\n", i, i+1)
	}
	os.WriteFile(path, []byte(b.String()), 0o600)
	if _, err := AddToken(path, "x", []string{"**"}, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	if err := RevokeToken(path, "x", now); err != nil {
		t.Fatal(err)
	}
	f, err = Load(path)
	if err != nil || len(f.Revoked) != MaxRevoked || f.Revoked[0].Name != "old-1" || f.Revoked[MaxRevoked-1].Name != "x" {
		t.Errorf("at the limit: %v, %d revoked, first %s", err, len(f.Revoked), f.Revoked[0].Name)
	}
}

// TestLoginRulesReleaseUnion: a person in a group whose rule names no
// release (so admits every release) and one that admits terraform's only
// still sees every release; in the narrowing group alone, terraform's only.
func TestLoginRulesReleaseUnion(t *testing.T) {
	f, err := Parse([]byte(loginSample+`group "tf" { allow = ["cli.airgap.invalid/terraform"] }
`), "access.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		groups []string
		tofu   bool
	}{{[]string{"tf"}, false}, {[]string{"tf", "platform"}, true}, {[]string{"platform"}, true}} {
		pats, _ := f.LoginRules(c.groups, "", true)
		r, err := CompileUnion(pats)
		if err != nil {
			t.Fatal(err)
		}
		if !r.AllowsRelease("terraform") || r.AllowsRelease("tofu") != c.tofu {
			t.Errorf("groups %v (%q): terraform %v tofu %v, want true %v", c.groups, pats, r.AllowsRelease("terraform"), r.AllowsRelease("tofu"), c.tofu)
		}
	}
}
