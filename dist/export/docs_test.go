package export_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/export"
)

// A docs host that could not be reached is asked once per export, not once
// per provider: the convention's github.com, refused here by the proxy as a
// corporate proxy refuses it (or drops it: then after the first contact's
// bound), costs one failure for every provider version.
func TestDocsUnreachableHostTriedOnce(t *testing.T) {
	in := world(t)
	in.Block("github.com")
	req, err := export.ParseSpec(writeSpec(t, `platforms = ["linux_amd64"]
provider "hashicorp/random" { all = true }
provider "hashicorp/null" {}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	tried, skipped := 0, 0
	for _, m := range res.DocsMissing {
		switch {
		case strings.Contains(m, "not tried: github.com could not be reached earlier in this export (the repository's host could not be reached"):
			skipped++
		case strings.Contains(m, "the repository's host could not be reached") && strings.Contains(m, "CONNECT tunnel failed"):
			tried++
		default:
			t.Errorf("docs missing for another reason: %s", m)
		}
	}
	// Four versions, two fetches at once: the two first fail, the rest
	// are not tried.
	if tried+skipped != 4 || tried > 2 {
		t.Errorf("%d versions tried, %d not tried: %q", tried, skipped, res.DocsMissing)
	}
}
