package acl

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPatternMatch(t *testing.T) {
	for _, c := range []struct {
		pat, addr string
		want      bool
	}{
		{"registry.terraform.io/hashicorp/*", "registry.terraform.io/hashicorp/aws", true},
		{"registry.terraform.io/hashicorp/*", "registry.terraform.io/hashicorp", false},
		{"registry.terraform.io/hashicorp/*", "registry.terraform.io/hashicorp/aws/extra", false},
		{"registry.terraform.io/hashicorp/*", "registry.opentofu.org/hashicorp/aws", false},
		{"Registry.Terraform.IO/HashiCorp/AWS", "registry.terraform.io/hashicorp/aws", true},
		{"registry.terraform.io/hashicorp/aws", "registry.terraform.io/HashiCorp/AWS", true},
		{"*/*/*", "site.example/net/vpc/aws", false}, // three parts: providers only
		{"*/*/*/*", "site.example/net/vpc/aws", true},
		{"*/*/*/*", "site.example/net/vpc", false},
		{"site.example/net/**", "site.example/net/vpc/aws", true},
		{"site.example/net/**", "site.example/net/vpc", true},
		{"site.example/net/**", "site.example/netx/vpc", false},
		{"site.example/**", "site.example/net/vpc/aws", true},
		{"**", "registry.terraform.io/hashicorp/aws", true},
		{"*.example/n?t/[a-v]*", "site.example/net/vpc", true},
		{"*.example/n?t/[a-v]*", "site.example/net/web", false},
		{"*.example/n?t/[a-v]*", "site.example/NET/VPC", true},
		{"registry.terraform.io/hashicorp/a*", "registry.terraform.io/hashicorp/aws", true},
		{"localhost:8443/*/*", "localhost:8443/x/y", true},
	} {
		p, err := ParsePattern(c.pat)
		if err != nil {
			t.Fatalf("%s: %v", c.pat, err)
		}
		if got := p.Match(c.addr); got != c.want {
			t.Errorf("%q matching %q = %v, want %v", c.pat, c.addr, got, c.want)
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, pat := range []string{"", "a/b", "a/b/c/d/e", "a/**/c", "a//c", "a/b/[", "a/b/c d", "a/b/c/d/**", strings.Repeat("a", 600) + "/b/c", "a/b/c\n"} {
		if _, err := ParsePattern(pat); err == nil {
			t.Errorf("pattern %q accepted", pat)
		}
	}
}

const sample = `# hand-written comment that must survive edits
anonymous {
  allow = ["registry.terraform.io/hashicorp/*"]
}

token "ci" {
  sha256  = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  allow   = ["**"]
  expires = "2027-01-01T00:00:00Z"
}
`

func TestParse(t *testing.T) {
	f, err := Parse([]byte(sample), "access.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Anonymous.Allows("registry.terraform.io/hashicorp/aws") || f.Anonymous.Allows("site.example/a/b") {
		t.Error("anonymous rule")
	}
	tok := f.Find("CI")
	if tok == nil || !tok.Rules.Allows("site.example/a/b/c") || tok.Expires.Year() != 2027 {
		t.Fatalf("token: %+v", tok)
	}
	if !tok.Expired(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || tok.Expired(time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)) {
		t.Error("expiry boundary")
	}
	for _, c := range []struct{ src, want string }{
		{"token \"a\" {\n  sha256 = \"x\"\n  allow = [\"**\"]\n}\n", "access.hcl:1:1: token \"a\": sha256 must be 64"},
		{"token \"a\" {\n  sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  alow = [\"**\"]\n}\n", "Did you mean \"allow\"?"},
		{"token \"anonymous\" {\n  sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  allow = [\"**\"]\n}\n", "reserved"},
		{"token \"a\" {\n  sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  allow = [\"a/b\"]\n}\n", "access.hcl:1:1: token \"a\": pattern \"a/b\" has 2 parts"},
		{"token \"a\" {\n  sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  allow = [\"**\"]\n  expires = \"tomorrow\"\n}\n", "not an RFC 3339 time"},
		{"anonymous {\n allow = [\"**\"]\n}\nanonymous {\n allow = [\"**\"]\n}\n", "access.hcl:4:1: more than one anonymous block"},
		{"token \"a\" {\n  sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  allow = [\"**\"]\n}\ntoken \"A\" {\n  sha256 = \"0f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  allow = [\"**\"]\n}\n", "access.hcl:5:1: a second token named \"A\""},
		{"tokens \"a\" {}\n", "access.hcl:1:1"},
	} {
		_, err := Parse([]byte(c.src), "access.hcl")
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

func TestEditRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.hcl")
	os.WriteFile(path, []byte(sample), 0o600)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	secret, err := AddToken(path, "net-team", []string{"site.example/net/**"}, now.Add(24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if !LooksLikeSecret(secret) || len(secret) != 50 {
		t.Fatalf("secret %q", secret)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "# hand-written comment that must survive edits") {
		t.Errorf("the comment was lost:\n%s", b)
	}
	if strings.Contains(string(b), secret) || strings.Contains(string(b), strings.TrimPrefix(secret, SecretPrefix)) {
		t.Fatal("the secret is in the file")
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tok := f.Find("net-team")
	if tok == nil || tok.Hash != HashSecret(secret) || !tok.Expires.Equal(now.Add(24*time.Hour)) || !tok.Created.Equal(now) {
		t.Fatalf("token read back: %+v", tok)
	}
	if _, err := AddToken(path, "net-team", []string{"**"}, time.Time{}, now); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate name: %v", err)
	}
	if _, err := AddToken(path, "x", []string{"a/b"}, time.Time{}, now); err == nil {
		t.Error("bad pattern accepted")
	}
	if _, err := AddToken(path, "x", []string{"**"}, now.Add(-time.Second), now); err == nil {
		t.Error("past expiry accepted")
	}
	if err := SetAnonymous(path, nil); err != nil {
		t.Fatal(err)
	}
	if err := RemoveToken(path, "ci"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveToken(path, "ci"); !errors.Is(err, ErrNoToken) {
		t.Errorf("second revoke: %v", err)
	}
	f, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Anonymous != nil || len(f.Tokens) != 1 || f.Tokens[0].Name != "net-team" {
		t.Fatalf("after edits: %+v", f)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestCreateAndConcurrentEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.hcl")
	now := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := AddToken(path, "t"+string(rune('a'+i)), []string{"**"}, time.Time{}, now); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tokens) != 8 {
		t.Fatalf("%d tokens after 8 concurrent creates: an edit was lost", len(f.Tokens))
	}
}

func TestLoadRefusesOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.hcl")
	os.WriteFile(path, []byte(sample), 0o644)
	os.Chmod(path, 0o644)
	_, err := Load(path)
	if !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a file others may read: %v", err)
	}
	if _, err := AddToken(path, "x", []string{"**"}, time.Time{}, time.Now()); !errors.Is(err, ErrPermissions) {
		t.Fatalf("editing a file others may read: %v", err)
	}
	os.Chmod(path, 0o600)
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse: no input panics the parser or makes it accept a token
// without a valid hash and at least a valid rule set; whatever it accepts
// round-trips through an edit.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("anonymous {\n allow = [\"**\"]\n}\n"))
	f.Add([]byte("token \"a\" {\n sha256 = \"\"\n allow = []\n}\n"))
	f.Add([]byte(loginSample))
	f.Add([]byte("revoked \"a\" {\n sha256 = \"\"\n revoked = \"\"\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		af, err := Parse(src, "f.hcl")
		if err != nil {
			return
		}
		for _, tok := range af.Tokens {
			if ValidName(tok.Name) != nil || tok.Rules == nil {
				t.Fatalf("accepted token %+v", tok)
			}
		}
		if l := af.Login; l != nil {
			if CheckIssuer(l.Issuer) != nil || checkScopes(l.Scopes) != nil || l.TokenLifetime < time.Second || l.TokenLifetime > maxTokenLifetime || !printableName(l.ClientID) {
				t.Fatalf("accepted login block %+v", l)
			}
		} else if len(af.Groups)+len(af.Users) > 0 {
			t.Fatal("group or user blocks without a login block")
		}
	})
}

// FuzzPattern: compiled patterns never panic and agree with a reference
// matcher built from path.Match over the whole address.
func FuzzPattern(f *testing.F) {
	f.Add("registry.terraform.io/hashicorp/*", "registry.terraform.io/hashicorp/aws")
	f.Add("site.example/net/**", "site.example/net/vpc/aws")
	f.Add("*/*/*/*", "a/b/c/d")
	f.Add("a/[b-/c", "a/b/c")
	f.Fuzz(func(t *testing.T, pat, addr string) {
		p, err := ParsePattern(pat)
		if err != nil {
			return
		}
		got := p.Match(addr)
		want := refMatch(strings.ToLower(pat), strings.ToLower(addr))
		if got != want {
			t.Fatalf("%q matching %q: %v, reference %v", pat, addr, got, want)
		}
	})
}

func refMatch(pat, addr string) bool {
	ps, as := strings.Split(pat, "/"), strings.Split(addr, "/")
	rest := ps[len(ps)-1] == "**"
	if rest {
		ps = ps[:len(ps)-1]
		if len(as) < len(ps) {
			return false
		}
		as = as[:len(ps)]
	} else if len(as) != len(ps) {
		return false
	}
	for i := range ps {
		if as[i] == "" {
			return false
		}
		if ok, _ := path.Match(ps[i], as[i]); !ok {
			return false
		}
	}
	return true
}

// TestEditKeepsOwner: root editing the service user's access file leaves
// it the service user's (serve, running as that user, must still read it).
func TestEditKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file away")
	}
	path := filepath.Join(t.TempDir(), "access.hcl")
	if _, err := AddToken(path, "a", []string{"**"}, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := AddToken(path, "b", []string{"**"}, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid, _ := ownerOf(fi); uid != 65534 || gid != 65534 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after root's edit: owner %d:%d mode %v, want 65534:65534 0600", uid, gid, fi.Mode().Perm())
	}
}

// TestAllowsRelease: rules without a release pattern admit every product
// ("**" included, as before release patterns); with one, only the
// products it names.
func TestAllowsRelease(t *testing.T) {
	for _, c := range []struct {
		pats     []string
		tf, tofu bool
		provider bool
	}{
		{[]string{"registry.terraform.io/hashicorp/*"}, true, true, true},
		{[]string{"**"}, true, true, true},
		{[]string{"**", "cli.airgap.invalid/terraform"}, true, false, true},
		{[]string{"CLI.airgap.invalid/TERRAFORM"}, true, false, false},
		{[]string{"cli.airgap.invalid/t*"}, true, true, false},
		{[]string{"cli.airgap.invalid/**"}, true, true, false},
		{[]string{"cli.airgap.invalid/none"}, false, false, false},
	} {
		r, err := CompileRules(c.pats)
		if err != nil {
			t.Fatalf("%q: %v", c.pats, err)
		}
		if r.AllowsRelease("terraform") != c.tf || r.AllowsRelease("tofu") != c.tofu || r.Allows("registry.terraform.io/hashicorp/aws") != c.provider {
			t.Errorf("%q: terraform %v tofu %v provider %v, want %v %v %v", c.pats, r.AllowsRelease("terraform"), r.AllowsRelease("tofu"), r.Allows("registry.terraform.io/hashicorp/aws"), c.tf, c.tofu, c.provider)
		}
	}
	for _, bad := range []string{"cli.airgap.invalid/terraform/x", "cli.airgap.invalid/a/**"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
