package server_test

import (
	"testing"
	"time"

	"github.com/airgap/airgap/server/acl"
)

// Regression tests of the reviewer findings on serve's access control
// that need a controlled clock or file reloads (the end-to-end attacks on
// the real binary are in the root package's access_attack_test.go).

// TestSameNameGetsNoCachedAnswer: the answer cache was keyed by the
// token's name. A token revoked and created again under its name (with
// narrower rules) and presented before serve noticed the change (the
// first request with an unknown token re-reads the file) was answered
// from what the old token's requests had cached: an address outside its
// rules.
func TestSameNameGetsNoCachedAnswer(t *testing.T) {
	e := setupAccess(t, map[string][]string{"ci": {"**"}}, nil)
	const denied = "/v1/providers/hashicorp/null/versions"
	if resp, b := e.do(t, denied, "ci"); resp.StatusCode != 200 {
		t.Fatalf("the old token: %s %s", resp.Status, b)
	}
	if err := acl.RemoveToken(e.access, "ci"); err != nil {
		t.Fatal(err)
	}
	sec, err := acl.AddToken(e.access, "ci", []string{"registry.terraform.io/hashicorp/random"}, time.Time{}, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	e.tokens["ci"] = sec
	if resp, b := e.do(t, denied, "ci"); resp.StatusCode != 404 {
		t.Errorf("the new token named ci, on an address outside its rules: %s %s (want 404)", resp.Status, b)
	}
}
