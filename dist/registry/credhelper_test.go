package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCredentialsHelper runs real helper programs (shell scripts) the way
// Terraform does — ARGS get HOST, no stdin — and refuses every way a
// helper can misbehave, quickly, naming the helper and never repeating its
// stdout.
func TestCredentialsHelper(t *testing.T) {
	dir := t.TempDir()
	helper := func(body string) *CredentialsHelper {
		p := filepath.Join(dir, "terraform-credentials-t")
		os.Remove(p)
		writeFile(t, p, "#!/bin/sh\n"+body, 0o755)
		return &CredentialsHelper{Name: "t", Path: p, Args: []string{"--x"}, At: "rc:1", Timeout: time.Second}
	}
	ctx := context.Background()
	h := helper(`[ "$1 $2 $3" = "--x get reg.example" ] && read -r _ || true; printf '{"token":"s3cr3t","other":1}'`)
	if tok, err := h.Token(ctx, "reg.example"); err != nil || tok != "s3cr3t" {
		t.Fatalf("token %q %v", tok, err)
	}
	// Asked once per host.
	os.Remove(h.Path)
	if tok, err := h.Token(ctx, "reg.example"); err != nil || tok != "s3cr3t" {
		t.Errorf("not cached: %q %v", tok, err)
	}
	if tok, err := helper(`printf '{}'`).Token(ctx, "x.example"); err != nil || tok != "" {
		t.Errorf("{} means no token: %q %v", tok, err)
	}
	for name, c := range map[string]struct{ body, want string }{
		"hangs":            {"sleep 30", "no answer within 1s"},
		"child holds pipe": {"(sleep 30; echo) & printf '{\"token\":\"late\"}'; wait", "no answer within 1s"},
		"garbage":          {"echo token=SECRETVALUE", "is not a JSON object"},
		"array":            {"echo '[1]'", "is not a JSON object"},
		"floods":           {"yes SECRETVALUE", "printed more than"},
		"token not string": {`printf '{"token": 5}'`, "is not a JSON string"},
		"empty token":      {`printf '{"token": ""}'`, "empty"},
		"token newline":    {`printf '{"token": "a\\nb"}'`, "control character"},
		"token space":      {`printf '{"token": "a b"}'`, "space"},
		"token unicode":    {`printf '{"token": "a\u00e9"}'`, "non-ASCII"},
		"fails":            {"echo 'denied: SECRET is fine in stderr' >&2; exit 7", "exit status 7: denied"},
		"fails silently":   {"exit 1", "(it wrote no error message)"},
		"stderr escapes":   {"printf 'x\\033[2Jy' >&2; exit 1", `x\x1b[2Jy`},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := helper(c.body).Token(ctx, "reg.example")
			if !errors.Is(err, ErrCredentialsHelper) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "SECRETVALUE") {
				t.Errorf("the message repeats the helper's stdout: %v", err)
			}
			if !strings.Contains(err.Error(), "terraform-credentials-t") || !strings.Contains(err.Error(), "reg.example") {
				t.Errorf("the message does not name the helper and host: %v", err)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %s", el)
			}
		})
	}
}
