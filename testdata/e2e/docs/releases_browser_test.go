package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestReleasesPageInBrowser: axe-core finds no accessibility violation on
// /ui/releases holding terraform and tofu releases, with the download
// counts shown, at the desktop size and a phone's; it is reached from the
// catalog's link.
func TestReleasesPageInBrowser(t *testing.T) {
	work := t.TempDir()
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", keys, "--name", "Site Ops <ops@site.test>")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte(`platforms = ["linux_amd64", "darwin_arm64"]
cli "terraform" {
  versions      = "~> 1.14"
  latest        = 2
  publisher_key = "`+rel.HashiCorpKey+`"
}
cli "tofu" {
  versions      = "~> 1.11.0"
  publisher_key = "`+rel.OpenTofuKey+`"
}
`), 0o644)
	b := filepath.Join(work, "site.bundle")
	env := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))
	harness.MustRun(t, work, env, harness.Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", root, b)
	srv := harness.StartServe(t, root)
	cl := harness.CAFileClient(t, srv.CAFile)
	if resp, _ := harness.HTTPGet(t, cl, srv.Base+"releases/terraform/1.14.3/terraform_1.14.3_linux_amd64.zip"); resp.StatusCode != 200 {
		t.Fatalf("downloading a terraform zip: %d", resp.StatusCode)
	}

	ctx, cancel := harness.NewChromium(t, srv.Base, srv.CAFile, work)
	defer cancel()
	eval := harness.JSEval(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.Base), chromedp.WaitVisible(chromedp.CSS("#releases-link a"))); err != nil {
		t.Fatalf("the catalog's link to the releases: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#releases-link a")), chromedp.WaitVisible(chromedp.CSS("h2#tofu-1\\.11\\.2"))); err != nil {
		t.Fatalf("following the link to /ui/releases: %v", err)
	}
	if got := eval(`document.querySelector('[data-release="terraform-1.14.3"]').textContent`); got == "" || got[:10] != "1 download" {
		t.Errorf("the page shows terraform 1.14.3's downloads as %q", got)
	}
	for _, size := range [][2]int64{{1280, 1000}, {375, 800}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(srv.Base+"ui/releases"), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatal(err)
		}
		harness.AxeCheck(t, ctx, fmt.Sprintf("/ui/releases (%dx%d)", size[0], size[1]))
		// Reflow (WCAG 1.4.10): the page itself never scrolls sideways;
		// the digests wrap or scroll inside their own boxes.
		if w := eval(`String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`); w != "0" {
			t.Errorf("/ui/releases at %dx%d scrolls sideways by %s px", size[0], size[1], w)
		}
	}
}
