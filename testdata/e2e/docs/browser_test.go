package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestCatalogInBrowser loads the catalog page of a real 'airgap serve'
// over TLS in headless Chromium (Debian's chromium, driven by chromedp):
// the DOM lists the store's providers and modules, the filter box hides
// what does not match, the copy-ready configuration is what client-config
// prints, the withdrawn version is listed with its reason, and a screenshot
// is written ($AIRGAP_TEST_ARTIFACTS, else the test's temp dir).
//
// Chromium trusts exactly the appliance's certificate: the test verifies the
// served chain against the appliance's CA in Go, then pins that leaf's key
// with --ignore-certificate-errors-spki-list (Chromium on Linux reads CAs
// only from an NSS database, which would need certutil).
func TestCatalogInBrowser(t *testing.T) {
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.Standard(t, filepath.Join(work, "set"), signer)
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "old"), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random", Version: "3.5.0",
		Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 4 << 10,
	}))
	b1 := filepath.Join(work, "first.bundle")
	set.WriteBundleFile(t, b1, signer, bundle.CompressionZstd)
	// A bundle that only withdraws random 3.5.0.
	const reason = "compromised build, see advisory SEC-0042"
	b2 := filepath.Join(work, "withdraw.bundle")
	harness.WriteWithdrawBundle(t, b2, signer, dist.Withdrawal{Kind: dist.KindProvider, Addr: "registry.terraform.io/hashicorp/random", Versions: []string{"3.5.0"}, Reason: reason})
	root := filepath.Join(work, "store")
	for _, b := range []string{b1, b2} {
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, b)
	}
	srv := harness.StartServe(t, root)
	base, caFile := srv.Base, srv.CAFile
	wantCfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base, "--mode", "registry")

	ctx, cancel := harness.NewChromium(t, base, caFile, work)
	defer cancel()

	eval := harness.JSEval(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#provider-table"))); err != nil {
		t.Fatalf("loading the catalog in chromium: %v", err)
	}
	provs := eval(`Array.from(document.querySelectorAll("tr.provider")).map(tr => tr.dataset.addr).join(",")`)
	mods := eval(`Array.from(document.querySelectorAll("tr.module")).map(tr => tr.dataset.addr).join(",")`)
	cfg := eval(`document.querySelector('pre.client-config[data-tool="terraform"][data-mode="registry"]').textContent`)
	withdrawn := eval(`document.querySelector("#withdrawn-table").innerText`)
	var wantProvs, wantMods []string
	for _, p := range set.Catalog.Providers {
		if !harness.Contains(wantProvs, p.Addr()) {
			wantProvs = append(wantProvs, p.Addr())
		}
	}
	for _, m := range set.Catalog.Modules {
		wantMods = append(wantMods, m.Addr())
	}
	sort.Strings(wantProvs)
	if provs != strings.Join(wantProvs, ",") || mods != strings.Join(wantMods, ",") {
		t.Errorf("the DOM lists providers %q and modules %q, want %q and %q", provs, mods, wantProvs, wantMods)
	}
	if cfg != wantCfg {
		t.Errorf("the page's terraform registry configuration differs from client-config:\n%s\nwant:\n%s", cfg, wantCfg)
	}
	if !strings.Contains(withdrawn, "3.5.0") || !strings.Contains(withdrawn, reason) {
		t.Errorf("the withdrawn version is not listed with its reason: %q", withdrawn)
	}

	// Screenshot before filtering: the whole page (quality 100: PNG).
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("AIRGAP_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	shotPath := filepath.Join(dir, "catalog.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the catalog page (%d bytes): %s", len(shot), shotPath)

	// The filter box hides every row that does not match as one types.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#q"), "null"), chromedp.Sleep(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if visible := eval(`Array.from(document.querySelectorAll("tr[data-addr]")).filter(tr => !tr.hidden).map(tr => tr.dataset.addr).join(",")`); visible != "registry.opentofu.org/hashicorp/null" {
		t.Errorf("after typing 'null' in the filter, visible rows: %q", visible)
	}
	// Submitting the filter asks the server for the whole catalog's matches.
	if err := chromedp.Do(ctx, chromedp.Submit(chromedp.CSS("#q")), chromedp.Sleep(500*time.Millisecond), chromedp.WaitVisible(chromedp.CSS("#provider-table"))); err != nil {
		t.Fatal(err)
	}
	if rows := eval(`location.search + " " + Array.from(document.querySelectorAll("tr[data-addr]")).map(tr => tr.dataset.addr).join(",")`); rows != "?q=null registry.opentofu.org/hashicorp/null" {
		t.Errorf("the submitted filter shows %q", rows)
	}

	// The home page's docs search box asks the docs search, by resource
	// name, across the providers.
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#docs-q")),
		chromedp.SendKeys(chromedp.CSS("#docs-q"), "random_string"), chromedp.Submit(chromedp.CSS("#docs-q")),
		// Wait for the search page itself: the home page's own h1 is
		// visible until the navigation lands.
		chromedp.WaitVisible(chromedp.Search(`//main/h1[normalize-space()="Find a resource"]`))); err != nil {
		t.Fatal(err)
	}
	if got := eval(`location.pathname + location.search + " " + document.querySelector("main h1").textContent`); got != "/ui/docs/search?q=random_string Find a resource" {
		t.Errorf("the home page's docs search went to %q", got)
	}

	// axe-core finds no accessibility violation on any page the appliance
	// serves: the catalog (filtered too), every provider's and module's
	// page it links to, and the page for what it does not serve.
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#provider-table"))); err != nil {
		t.Fatal(err)
	}
	// (Links with a download attribute are files, not pages: the SBOM.)
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(new Set(Array.from(document.querySelectorAll('a[href^="/ui/"]:not([download])')).map(a => a.getAttribute("href"))))`))
	if err != nil {
		t.Fatal(err)
	}
	if sbom := eval(`(document.querySelector("a#sbom[download]") || {}).pathname || ""`); sbom != "/ui/sbom.cdx.json" {
		t.Errorf("the catalog page's SBOM download link: %q", sbom)
	}
	pages := append([]string{"", "?q=null", "ui/providers/registry.terraform.io/nobody/nothing"}, links...)
	var provPages, modPages int
	for _, l := range links {
		provPages += btoi(strings.HasPrefix(l, "/ui/providers/"))
		modPages += btoi(strings.HasPrefix(l, "/ui/modules/"))
	}
	if provPages < 2 || modPages < 1 {
		t.Errorf("the catalog links to %d provider and %d module pages: %q", provPages, modPages, links)
	}
	// Each at the desktop size and at a phone's, where wide text (the
	// configuration blocks) scrolls inside its box.
	for _, size := range [][2]int64{{1280, 1000}, {375, 800}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1])); err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			u := base + strings.TrimPrefix(p, "/")
			if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
				t.Fatalf("loading %s: %v", u, err)
			}
			harness.AxeCheck(t, ctx, fmt.Sprintf("%s (%dx%d)", u, size[0], size[1]))
		}
	}
	t.Logf("axe-core %s: no violation on %d pages at two window sizes", harness.AxeVersion, len(pages))
}

// btoi counts a true as one (the CLI's own helper lives in package main).
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
