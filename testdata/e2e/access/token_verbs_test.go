package access

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestTokenCreateFrictions: what a new operator ran into with 'token
// create': '--out FILE' writes the secret to a new 0600 file (and nothing to
// stdout); "shown only this once" is said only when the secret goes to a
// terminal, and a redirect into a file others may read is warned about;
// tokens expire after 90 days unless '--expires never'; a pattern that
// matches nothing the store serves (a mistyped host) is warned about; the
// change goes into serve's audit log with --audit-log.
func TestTokenCreateFrictions(t *testing.T) {
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	access, audit := filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	out := filepath.Join(dir, "ci.token")
	stdout, stderr, code := harness.RunSplit(t, "", nil, "token", "create", "--access", access, "--name", "ci", "--allow", "registry.terraform.io/**",
		"--out", out, "--store", root, "--audit-log", audit)
	fi, err := os.Stat(out)
	secret, _ := os.ReadFile(out)
	if code != 0 || stdout != "" || err != nil || fi.Mode().Perm() != 0o600 || !strings.HasPrefix(string(secret), "airgap_") ||
		!strings.Contains(stderr, "The secret is in "+out+" (mode 0600)") || strings.Contains(stderr, "shown only this once") {
		t.Errorf("token create --out: %d %q %q %v %v", code, stdout, stderr, err, fi)
	}
	// --out never overwrites, and a token nobody holds is not kept.
	_, stderr, code = harness.RunSplit(t, "", nil, "token", "create", "--access", access, "--name", "ci2", "--allow", "**", "--out", out)
	if code != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("token create --out onto an existing file: %d %s", code, stderr)
	}
	// Redirected into a file its group may read (a umask of 022): warned.
	redirect := filepath.Join(dir, "redirected.token")
	f, _ := os.OpenFile(redirect, os.O_CREATE|os.O_WRONLY, 0o644)
	cmd := exec.Command(harness.Bin, "token", "create", "--access", access, "--name", "redirected", "--allow", "registry.terraform.io/**", "--expires", "never")
	cmd.Env, cmd.Stdout = harness.BaseEnv(), f
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !strings.Contains(errb.String(), "warning: the secret went to a file that other users may read") || strings.Contains(errb.String(), "shown only this once") {
		t.Errorf("token create > a 0644 file:\n%s", errb.String())
	}
	// A mistyped host, and a namespace the store does not have.
	_, stderr, code = harness.RunSplit(t, "", nil, "token", "create", "--access", access, "--name", "typo", "--allow", "registry.terrafrom.io/**",
		"--allow", "registry.terraform.io/nobody/*", "--store", root)
	if code != 0 || !strings.Contains(stderr, `warning: the pattern "registry.terrafrom.io/**" matches nothing`) || !strings.Contains(stderr, `did you mean the host "registry.terraform.io"?`) ||
		!strings.Contains(stderr, `warning: the pattern "registry.terraform.io/nobody/*" matches nothing`) {
		t.Errorf("patterns that match nothing: %d\n%s", code, stderr)
	}
	// Expiry: 90 days by default, never on request; token list shows it.
	var doc struct {
		Tokens []struct{ Name, Expires string }
	}
	json.Unmarshal([]byte(harness.MustRun(t, "", nil, harness.Bin, "token", "list", "--access", access, "--json")), &doc)
	for _, tok := range doc.Tokens {
		exp, _ := time.Parse(time.RFC3339, tok.Expires)
		switch tok.Name {
		case "ci", "typo":
			if d := time.Until(exp); d < 89*24*time.Hour || d > 90*24*time.Hour {
				t.Errorf("token %s expires %s, want in 90 days", tok.Name, tok.Expires)
			}
		case "redirected":
			if tok.Expires != "" {
				t.Errorf("--expires never: %s", tok.Expires)
			}
		}
	}
	if list := harness.MustRun(t, "", nil, harness.Bin, "token", "list", "--access", access); !strings.Contains(list, "redirected") || !strings.Contains(list, "never") {
		t.Errorf("token list:\n%s", list)
	}
	// On a terminal: the secret, and "shown only this once".
	screen := harness.OnTerminal(t, 160, 20, harness.Bin+" token create --access "+access+" --name tty --allow 'registry.terraform.io/**'")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(screen(), "EXIT=") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if s := screen(); !strings.Contains(s, "EXIT=0") || !strings.Contains(s, "airgap_") || !strings.Contains(s, "shown only this once") {
		t.Errorf("token create on a terminal:\n%s", s)
	}
	// Revoking keeps the name for the refusals; both are audit events.
	harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--access", access, "ci", "--audit-log", audit)
	b, _ := os.ReadFile(audit)
	for _, want := range []string{`"event":"token_created","token":"ci","allow":["registry.terraform.io/**"]`, `"event":"token_revoked","token":"ci"`, `"by":"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
	if text, _ := os.ReadFile(access); !strings.Contains(string(text), "revoked \"ci\" {") {
		t.Errorf("the access file keeps no revoked block:\n%s", text)
	}
}

// TestServeCheckConfigLogin: 'serve --check-config' with a login block
// prints the redirect URIs to register at the IdP and checks its discovery
// document (a real Dex), and fails with a hint when it cannot be read.
func TestServeCheckConfigLogin(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	dir, tlsDir := t.TempDir(), t.TempDir()
	port := harness.FreePort(t)
	caFile, _ := testCA(t, tlsDir, "127.0.0.1")
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s\n"), 0o600)
	access := filepath.Join(dir, "access.hcl")
	os.WriteFile(access, []byte(loginAccess(dexIssuer(port, true), secret, caFile, "12h")), 0o600)
	args := []string{"serve", "--store", root, "--access", access, "--hostname", "airgap.site.example", "--hostname", "registry.terraform.io", "--listen", ":8443", "--check-config"}
	_, stderr, code := harness.RunSplit(t, "", nil, args...)
	if code != 1 || !strings.Contains(stderr, "login: discovery at "+dexIssuer(port, true)) || !strings.Contains(stderr, "hint: check the login block's issuer") {
		t.Errorf("--check-config with the IdP down: %d\n%s", code, stderr)
	}
	startDex(t, dexOptions{port: port, tlsDir: tlsDir, redirectURIs: []string{"https://airgap.site.example:8443/oauth/callback"}})
	stdout, stderr, code := harness.RunSplit(t, "", nil, args...)
	t.Logf("serve --check-config says:\n%s", stderr)
	for _, want := range []string{`login: register the client "airgap" at the identity provider with these redirect URIs`,
		"  https://airgap.site.example:8443/oauth/callback\n", "  https://registry.terraform.io:8443/oauth/callback\n",
		// every address serve answers to as well (--listen :8443: the loopbacks)
		"  https://127.0.0.1:8443/oauth/callback\n", "  https://[::1]:8443/oauth/callback\n",
		"login: the identity provider at " + dexIssuer(port, true) + " answers: authorization " + dexIssuer(port, true) + "/auth, token " + dexIssuer(port, true) + "/token"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--check-config lacks %q", want)
		}
	}
	if code != 0 || !strings.Contains(stdout, "access") {
		t.Errorf("--check-config: %d\n%s", code, stdout)
	}
	os.Chmod(secret, 0o644)
	if _, stderr, code := harness.RunSplit(t, "", nil, args...); code != 1 || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("--check-config with a client secret file others may read: %d\n%s", code, stderr)
	}
}
