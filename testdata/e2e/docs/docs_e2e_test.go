package docs

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

var str = registrytest.Str

// docsWorld publishes, on the stand-in internet, providers whose
// repositories hold docs that differ per tag, and the hostile ones: over
// the bound (a huge file), a missing tag, links, names that fold into one,
// too many files; and a module with a README, inputs and outputs.
func docsWorld(t *testing.T) *registrytest.Internet {
	t.Helper()
	in := registrytest.World(t)
	plats := []string{"linux_amd64"}
	for _, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		in.AddProvider(t, "registry.terraform.io", "acme", "widget", v, plats, 2<<10)
	}
	for _, typ := range []string{"huge", "big", "notag", "links", "folding", "many", "off", "elsewhere"} {
		in.AddProvider(t, "registry.terraform.io", "acme", typ, "1.0.0", plats, 2<<10)
	}
	// The registry names widget's repository; the others follow the
	// convention github.com/NS/terraform-provider-TYPE.
	in.SetProviderSource("registry.terraform.io", "acme", "widget", "https://github.com/acme/terraform-provider-widget")
	guide := "---\nlayout: \"acme\"\npage_title: \"Getting started with widgets\"\nsubcategory: \"Guides\"\ndescription: |-\n  How to start.\n---\n\n# Getting started\n\nSee [the thing](../resources/thing.md) and the diagram:\n\n![diagram](../images/diagram.png)\n"
	in.AddTaggedRepo(t, "acme/terraform-provider-widget", []registrytest.Release{
		{Tag: "v1.0.0", Files: map[string]*string{
			"main.go":                   str(strings.Repeat("package main // not documentation\n", 3000)),
			"docs/index.md":             str("---\npage_title: \"Provider: Widget\"\n---\n\n# Widget provider\n\nThe widget provider.\n"),
			"docs/resources/thing.md":   str("---\nsubcategory: \"Things\"\npage_title: \"widget_thing\"\n---\n\n# widget_thing\n\nVersion one's thing.\n\n| Argument | Required |\n|---|---|\n| `name` | yes |\n"),
			"docs/data-sources/info.md": str("---\nsubcategory: \"Things\"\n---\n\n# widget_info\n\nReads info.\n"),
			"docs/guides/start.md":      str(guide),
			"docs/images/diagram.png":   str(docsPNG()),
			"docs/notes.txt":            str("not a page\n"),
		}},
		{Tag: "v2.0.0", Files: map[string]*string{
			// Hostile pages within the bound: nesting 10,000 deep, a table
			// of 60,000 cells.
			"docs/guides/deep.md":     str(strings.Repeat("> ", 10_000) + "deep\n"),
			"docs/guides/table.md":    str("| a | b |\n|---|---|\n" + strings.Repeat("| x | y |\n", 30_000)),
			"docs/resources/thing.md": str("---\nsubcategory: \"Things\"\npage_title: \"widget_thing\"\n---\n\n# widget_thing\n\nVersion two's thing. <script>alert('docs')</script>\n\n<img src=x onerror=\"alert(1)\"> [click](javascript:alert(1)) ![remote](https://evil.example/track.png) <img src=\"/ui/providers/registry.terraform.io/acme/widget/2.0.0/docs/-/../../../../../../../../healthz\" alt=\"up\">\n\nTerminal \x1b]0;pwned\x07 title.\n"),
		}},
		{Tag: "v3.0.0", Files: map[string]*string{"main.go": str("package main // v3: code only, the docs as in v2\n")}},
	}, nil)
	// Over the bound: a 100 MiB image the size watch stops git on
	// (streamed to the file: the test process stays small, for the tests
	// after it that measure the peak memory of the processes it starts,
	// which Linux reports as at least the test's own at fork).
	in.AddTaggedRepo(t, "acme/terraform-provider-huge", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{
		"docs/index.md": str("# huge\n")}}}, func(work, tag string) {
		os.MkdirAll(filepath.Join(work, "docs", "images"), 0o755)
		f, err := os.Create(filepath.Join(work, "docs", "images", "big.png"))
		if err == nil {
			_, err = io.CopyN(f, rand.Reader, 100<<20)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	// Over the bound, under what git may fetch: docs.Pack refuses it.
	in.AddTaggedRepo(t, "acme/terraform-provider-big", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{
		"docs/index.md": str("# big\n"), "docs/resources/big.md": str(strings.Repeat("a page far too long\n", 3<<20/20))}}}, nil)
	// The tag the version needs is missing.
	in.AddTaggedRepo(t, "acme/terraform-provider-notag", []registrytest.Release{{Tag: "v0.9.0", Files: map[string]*string{"docs/index.md": str("# notag\n")}}}, nil)
	// Links: to a file outside the repository, to a folder, and a page
	// that is a link: none is followed, the real pages are carried.
	in.AddTaggedRepo(t, "acme/terraform-provider-links", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{
		"docs/index.md": str("# links\n"), "docs/resources/real.md": str("# real\n")}}}, func(work, tag string) {
		os.Symlink("/etc/passwd", filepath.Join(work, "docs/resources/passwd.md"))
		os.Symlink("../..", filepath.Join(work, "docs/up"))
		os.Symlink("real.md", filepath.Join(work, "docs/resources/alias.md"))
	})
	// Two names that macOS and Windows take for one file.
	in.AddTaggedRepo(t, "acme/terraform-provider-folding", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{
		"docs/resources/Thing.md": str("# upper\n"), "docs/resources/thing.md": str("# lower\n")}}}, nil)
	// More files than a docs tree may hold.
	many := map[string]*string{}
	for i := range dist.MaxDocsFiles + 1 {
		many[fmt.Sprintf("docs/resources/r%05d.md", i)] = str("x\n")
	}
	in.AddTaggedRepo(t, "acme/terraform-provider-many", []registrytest.Release{{Tag: "v1.0.0", Files: many}}, nil)
	// docs = "git::…": another repository than the convention's.
	in.AddTaggedRepo(t, "acme/widget-docs", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{
		"website/docs/r/gadget.html.markdown": str("---\nlayout: \"acme\"\npage_title: \"acme_gadget\"\n---\n\n# acme_gadget\n\nLegacy layout page.\n")}}}, nil)
	in.AddTaggedRepo(t, "acme/terraform-aws-net", []registrytest.Release{{Tag: "v1.0.0", Files: map[string]*string{
		"README.md": str("# Net module\n\nBuilds a network. <script>alert('readme')</script>\n\n<img src=\"x\" onerror=\"alert(2)\">\n\n[docs](javascript:alert(3)) and [home](https://example.com/net)\n"),
		"main.tf": str(`variable "cidr" {
  type        = string
  description = "The network's CIDR block."
}
variable "zones" {
  type    = list(string)
  default = ["a", "b"]
}
output "id" {
  description = "The network's id."
  value       = "net-1"
}
terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~> 3.2" }
  }
}
`),
		"modules/subnet/main.tf": str("variable \"size\" {\n  default = 24\n}\noutput \"cidr\" {\n  value = \"x\"\n}\n"),
	}}}, nil)
	in.AddModule("registry.terraform.io", "acme", "net", "aws", "1.0.0", "git::https://github.com/acme/terraform-aws-net?ref=v1.0.0")
	// A module whose documentation is about as large as it may be (8 MiB
	// of JSON), of characters HTML escapes to five: a 15 MiB page.
	fat := map[string]*string{}
	for f := range 3 { // (a configuration file may be 4 MiB)
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "variable \"v%d_%d\" {\n  description = \"%s\"\n}\n", f, i, strings.Repeat(`\"`, 950))
		}
		fat[fmt.Sprintf("v%d.tf", f)] = str(b.String())
	}
	// And a 4 MiB README (cut at 1 MiB by export): the markdown goldmark
	// is slowest on, just under the render bounds, then terminal escapes.
	readme := "# Fat\n\n" + strings.Repeat("*a **b ", 19_000) + "\n\n" + strings.Repeat("[", 4_900) + strings.Repeat("](", 4_900) + "\n\n"
	readme += strings.Repeat("\x1b]0;pwned\x07\x1b[2J\u009b31m ", (4<<20-len(readme))/20)
	fat["README.md"] = str(readme)
	in.AddTaggedRepo(t, "acme/terraform-aws-fat", []registrytest.Release{{Tag: "v1.0.0", Files: fat}}, nil)
	// 8 MiB of documentation of a character JSON keeps as it is and HTML
	// escapes to five: a 40 MiB page, over the largest served.
	quotes := map[string]*string{}
	for f := range 3 {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "variable \"q%d_%d\" {\n  description = \"%s\"\n}\n", f, i, strings.Repeat("'", 2700))
		}
		quotes[fmt.Sprintf("q%d.tf", f)] = str(b.String())
	}
	in.AddTaggedRepo(t, "acme/terraform-aws-quotes", []registrytest.Release{{Tag: "v1.0.0", Files: quotes}}, nil)
	in.AddModule("registry.terraform.io", "acme", "quotes", "aws", "1.0.0", "git::https://github.com/acme/terraform-aws-quotes?ref=v1.0.0")
	in.AddModule("registry.terraform.io", "acme", "fat", "aws", "1.0.0", "git::https://github.com/acme/terraform-aws-fat?ref=v1.0.0")
	return in
}

const docsManifest = `platforms = ["linux_amd64"]
provider "acme/widget" {
  all = true
}
provider "acme/huge" {}
provider "acme/big" {}
provider "acme/notag" {}
provider "acme/links" {}
provider "acme/folding" {}
provider "acme/many" {}
provider "acme/off" {
  docs = false
}
provider "acme/elsewhere" {
  docs = "git::https://github.com/acme/widget-docs"
}
module "acme/net/aws" {}
module "acme/fat/aws" {}
module "acme/quotes/aws" {}
`

// TestDocsOffline (issue 33): export carries each provider version's docs
// from its repository at the version's tag (through the real git over
// smart HTTP) and each module's README, inputs and outputs; every hostile
// or oversized repository is bounded and reported while its provider
// still exports; verify shows the docs; offline, serve renders the served
// version's page, safely, within the access rules, and 'airgap docs'
// prints it escaped.
func TestDocsOffline(t *testing.T) {
	in := docsWorld(t)
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte(docsManifest), 0o644)
	bundleFile := filepath.Join(work, "docs.bundle")
	start := time.Now()
	out, rss, err := harness.CmdRunMeasured(t, work, online, harness.Bin, "export", "--manifest", "airgap.hcl", "--sign-key", "k/site.key.asc",
		"--out", bundleFile, "--cache", filepath.Join(work, "cache"), "--max-docs-size", "1MiB")
	took := time.Since(start)
	if err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	t.Logf("export with the hostile repositories: %v, peak RSS %d MiB\n%s", took, rss>>10, out)
	if took > 3*time.Minute || rss > 512<<10 {
		t.Errorf("export took %v and %d MiB: over the bound (3 min, 512 MiB)", took, rss>>10)
	}
	for _, want := range []string{
		"provider registry.terraform.io/acme/huge 1.0.0: no docs carried: over the docs bound",
		"provider registry.terraform.io/acme/big 1.0.0: no docs carried: over the docs bound (--max-docs-size 1.0 MiB): the docs are over the bound: more than 1.0 MiB of pages and images",
		"provider registry.terraform.io/acme/notag 1.0.0: no docs carried: no documentation: the repository has no tag v1.0.0 or 1.0.0",
		"provider registry.terraform.io/acme/folding 1.0.0: no docs carried:",
		"provider registry.terraform.io/acme/many 1.0.0: no docs carried:",
		"provider registry.terraform.io/acme/off 1.0.0: no docs carried: not exported (docs = false in the manifest)",
		"provider registry.terraform.io/acme/links 1.0.0 docs: left out 3 files that are not pages or images, or are links",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export output lacks %q", want)
		}
	}
	if !strings.Contains(out, "provider versions carried without their documentation (7):") {
		t.Errorf("the summary does not list the versions without docs:\n%s", out)
	}
	if !strings.Contains(out, `"docs/resources/Thing.md"`) || !strings.Contains(out, `"docs/resources/thing.md"`) {
		t.Errorf("the folding names are not named:\n%s", out)
	}

	// The manifest: widget 2.0.0 and 3.0.0 share one docs blob; 1.0.0
	// has its own; each failure is recorded with why.
	m := readManifest(t, bundleFile)
	docsOf := map[string]*dist.ProviderDocs{}
	for _, p := range m.Catalog.Providers {
		docsOf[p.Type+" "+p.Version] = p.Docs
	}
	w1, w2, w3 := docsOf["widget 1.0.0"], docsOf["widget 2.0.0"], docsOf["widget 3.0.0"]
	if w1 == nil || w2 == nil || w3 == nil || w1.Archive == "" || w2.Archive != w3.Archive || w1.Archive == w2.Archive {
		t.Fatalf("widget docs: %+v %+v %+v (want 2.0.0 and 3.0.0 to share one archive, 1.0.0 its own)", w1, w2, w3)
	}
	if w1.Pages != 4 || w1.Files != 5 || w1.Source != "https://github.com/acme/terraform-provider-widget" || w1.Ref != "v1.0.0" || w1.Dir != "docs" {
		t.Errorf("widget 1.0.0 docs: %+v", w1)
	}
	if l := docsOf["links 1.0.0"]; l == nil || l.Pages != 2 {
		t.Errorf("links: %+v (want index and real, not the links)", l)
	}
	if e := docsOf["elsewhere 1.0.0"]; e == nil || e.Dir != "website/docs" || e.Pages != 1 || e.Source != "https://github.com/acme/widget-docs" {
		t.Errorf("elsewhere: %+v", e)
	}
	if h := docsOf["huge 1.0.0"]; h == nil || !strings.Contains(h.Missing, "over the docs bound") {
		t.Errorf("huge: %+v", h)
	}
	if m.Format != 3 {
		t.Errorf("manifest format %d, want 3", m.Format)
	}

	// verify shows each version's docs line.
	vout := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", bundleFile)
	for _, want := range []string{
		"docs: 4 pages, ",
		"from github.com/acme/terraform-provider-widget at v1.0.0",
		"docs: missing: over the docs bound",
		"docs: missing: no documentation: the repository has no tag v1.0.0 or 1.0.0",
		"docs    sha256:",
	} {
		if !strings.Contains(vout, want) {
			t.Errorf("verify lacks %q:\n%s", want, vout)
		}
	}

	// show docs: the pages the bundle will publish, read before import
	// (escaped, as 'airgap docs' prints them from a store).
	showOut := harness.MustRunStdout(t, work, "show", "--keyring", "k/site.pub.asc", bundleFile, "docs", "acme/widget@2.0.0", "widget_thing")
	if !strings.Contains(showOut, "Version two's thing.") || strings.ContainsAny(showOut, "\x1b\x07") || !strings.Contains(showOut, `\x1b]0;pwned\x07`) {
		t.Errorf("show docs of a page:\n%q", showOut)
	}
	showOut = harness.MustRunStdout(t, work, "show", "--keyring", "k/site.pub.asc", bundleFile, "docs", "acme/widget@1.0.0")
	if !strings.Contains(showOut, "Resources (1):") || !strings.Contains(showOut, "  resources/thing") {
		t.Errorf("show docs of a provider version:\n%s", showOut)
	}
	showOut = harness.MustRunStdout(t, work, "show", "--keyring", "k/site.pub.asc", bundleFile, "docs", "acme/net/aws@1.0.0")
	if !strings.Contains(showOut, "# Net module") || !strings.Contains(showOut, "Inputs (2):") {
		t.Errorf("show docs of a module:\n%s", showOut)
	}

	store := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store, bundleFile)
	// gc keeps the docs blobs the catalog refers to.
	t.Log(harness.MustRun(t, work, nil, harness.Bin, "gc", "--store", store))

	// airgap docs: the page of the version asked for, escaped.
	page1 := harness.MustRun(t, work, nil, harness.Bin, "docs", "--store", store, "acme/widget@1.0.0", "widget_thing")
	page2 := harness.MustRun(t, work, nil, harness.Bin, "docs", "--store", store, "acme/widget@2.0.0", "resources/thing")
	if !strings.Contains(page1, "Version one's thing.") || !strings.Contains(page2, "Version two's thing.") {
		t.Errorf("airgap docs pages:\n%s\n---\n%s", page1, page2)
	}
	if strings.ContainsAny(page2, "\x1b\x07") || !strings.Contains(page2, `\x1b]0;pwned\x07`) {
		t.Errorf("airgap docs did not escape the terminal sequence:\n%q", page2)
	}
	list := harness.MustRun(t, work, nil, harness.Bin, "docs", "--store", store, "acme/widget")
	for _, want := range []string{"3.0.0", "Resources (1):", "  resources/thing", "Guides (3):", "guides/deep", "Data sources (1):"} {
		if !strings.Contains(list, want) {
			t.Errorf("airgap docs list lacks %q:\n%s", want, list)
		}
	}
	mod := harness.MustRun(t, work, nil, harness.Bin, "docs", "--store", store, "acme/net/aws")
	for _, want := range []string{"# Net module", "Inputs (2):", "  cidr  string, required", `  zones  list(string), default ["a","b"]`, "Outputs (1):", "Submodule modules/subnet"} {
		if !strings.Contains(mod, want) {
			t.Errorf("airgap docs of the module lacks %q:\n%s", want, mod)
		}
	}

	// serve, with an access file: a token for acme/widget only, one for everything.
	access := filepath.Join(work, "access.hcl")
	widget := token(t, access, "widget", "registry.terraform.io/acme/widget")
	all := token(t, access, "all", "**")
	srv := harness.StartServe(t, store, "--hostname", "registry.terraform.io", "--access", access)
	base, caFile, proc := srv.Base, srv.CAFile, srv.Proc
	get := docsClient(t, caFile)
	ui := base + "ui/providers/registry.terraform.io/acme/widget/"
	for v, want := range map[string]string{"1.0.0": "Version one&#39;s thing.", "2.0.0": "Version two&#39;s thing.", "3.0.0": "Version two&#39;s thing."} {
		code, body, h := get(ui+v+"/docs/resources/thing", widget)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s page: %d, lacks %q:\n%s", v, code, want, body)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "img-src 'self'") {
			t.Errorf("CSP of the docs page: %q", csp)
		}
		low := strings.ToLower(body)
		// (healthz: an image whose source, resolved, leaves the docs)
		for _, bad := range []string{"alert(", "onerror", "javascript:", "evil.example", "healthz"} {
			if strings.Contains(low, bad) {
				t.Errorf("%s page keeps %q:\n%s", v, bad, body)
			}
		}
	}
	// The hostile pages of 3.0.0 are shown as their source, at once.
	for _, p := range []string{"deep", "table"} {
		start := time.Now()
		code, body, _ := get(ui+"3.0.0/docs/guides/"+p, widget)
		if took := time.Since(start); code != 200 || !strings.Contains(body, "Shown as its source, not rendered") || took > 2*time.Second {
			t.Errorf("the hostile page %s: %d in %v:\n%.600s", p, code, took, body)
		}
	}
	code, body, _ := get(ui+"1.0.0/docs/", widget)
	for _, want := range []string{"Resources", "widget_thing", "Data sources", "widget_info", "Getting started with widgets", "Things", "4 pages"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("docs list (%d) lacks %q:\n%s", code, want, body)
		}
	}
	code, body, _ = get(ui+"1.0.0/docs/guides/start", widget)
	if code != 200 || !strings.Contains(body, `src="/ui/providers/registry.terraform.io/acme/widget/1.0.0/docs/-/images/diagram.png"`) ||
		!strings.Contains(body, `href="/ui/providers/registry.terraform.io/acme/widget/1.0.0/docs/resources/thing"`) {
		t.Errorf("the guide's image and link are not resolved inside the docs (%d):\n%s", code, body)
	}
	code, body, h := get(ui+"1.0.0/docs/-/images/diagram.png", widget)
	if code != 200 || h.Get("Content-Type") != "image/png" || body != docsPNG() {
		t.Errorf("the image: %d %s (%d bytes)", code, h.Get("Content-Type"), len(body))
	}
	if code, body, _ = get(base+"ui/docs/search?q=widget_thing", widget); code != 200 || !strings.Contains(body, "/acme/widget/3.0.0/docs/resources/thing") {
		t.Errorf("search (%d):\n%s", code, body)
	}
	// Outside the token's scope: answered as missing, and the search does
	// not find it.
	for _, p := range []string{"ui/providers/registry.terraform.io/acme/elsewhere/1.0.0/docs/", "ui/providers/registry.terraform.io/acme/elsewhere/1.0.0/docs/resources/gadget", "ui/modules/registry.terraform.io/acme/net/aws/1.0.0"} {
		if code, body, _ := get(base+p, widget); code != 404 || strings.Contains(body, "gadget") || strings.Contains(body, "Net module") {
			t.Errorf("%s with a token for acme/widget only: %d\n%s", p, code, body)
		}
	}
	if _, body, _ := get(base+"ui/docs/search?q=gadget", widget); strings.Contains(body, "acme_gadget") {
		t.Errorf("search found a page outside the token's scope:\n%s", body)
	}
	docsOverHTTPS(t, work, base, caFile, widget, all)
	if code, body, _ := get(base+"ui/providers/registry.terraform.io/acme/elsewhere/1.0.0/docs/resources/gadget", all); code != 200 || !strings.Contains(body, "Legacy layout page.") {
		t.Errorf("the legacy website/docs page (%d):\n%s", code, body)
	}
	code, body, _ = get(base+"ui/modules/registry.terraform.io/acme/net/aws/1.0.0", all)
	for _, want := range []string{"Net module", "Builds a network.", "cidr", "The network&#39;s CIDR block.", "list(string)", "[&#34;a&#34;,&#34;b&#34;]", "The network&#39;s id.", "hashicorp/null", "modules/subnet", `href="https://example.com/net"`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("module page (%d) lacks %q", code, want)
		}
	}
	for _, bad := range []string{"alert(", "onerror", "javascript:"} {
		if strings.Contains(strings.ToLower(body), bad) {
			t.Errorf("module page keeps %q:\n%s", bad, body)
		}
	}
	if code, body, _ := get(base+"ui/providers/registry.terraform.io/acme/huge/1.0.0/docs/", all); code != 404 || !strings.Contains(body, "over the docs bound") {
		t.Errorf("the docs page of a version without docs (%d):\n%s", code, body)
	}
	if n := fatPageMemory(t, base+"ui/modules/registry.terraform.io/acme/fat/aws/1.0.0", caFile, all, proc.Pid); n < 12<<20 {
		t.Errorf("the fat module's page is %d bytes", n)
	}
	// Over the largest page served (24 MiB): a notice, to every request.
	if n := fatPageMemory(t, base+"ui/modules/registry.terraform.io/acme/quotes/aws/1.0.0", caFile, all, proc.Pid); n > 64<<10 {
		t.Errorf("the quotes module's page is %d bytes, not the notice", n)
	}
	if _, body, _ := get(base+"ui/modules/registry.terraform.io/acme/quotes/aws/1.0.0", all); !strings.Contains(body, "over the 24.0 MiB this appliance serves") {
		t.Errorf("the quotes module's page:\n%.2000s", body)
	}
	// The same module for a terminal: the README (4 MiB, cut at 1 MiB)
	// escaped, within a bounded time and memory.
	start = time.Now()
	fatOut, rss, err := harness.CmdRunMeasured(t, work, nil, harness.Bin, "docs", "--store", store, "acme/fat/aws")
	t.Logf("airgap docs of the fat module: %v, peak RSS %d MiB, %d MiB out", time.Since(start).Round(time.Millisecond), rss>>10, len(fatOut)>>20)
	if err != nil || strings.ContainsAny(fatOut, "\x1b\x07\u009b") || !strings.Contains(fatOut, `\x1b]0;pwned`) || rss > 256<<10 {
		t.Errorf("airgap docs of the fat module: %v, peak RSS %d MiB, raw escapes: %v", err, rss>>10, strings.ContainsAny(fatOut, "\x1b\x07\u009b"))
	}
	t.Run("browser", func(t *testing.T) { docsInBrowser(t, store, work) })
}

// fatPageMemory asks for a module page on 32 connections at once, as one
// client address may hold 128, whose clients read the first 64 KiB and
// then wait until all 32 have (slow readers: a handler holds what it
// sends until its client takes it). serve builds the page once, in a
// render slot, and every request sends the one cached slice (or, over the
// largest page served, a notice), so serve's peak resident memory grows
// by well under 32 pages. It returns the size of the page.
func fatPageMemory(t *testing.T, u, caFile, tok string, pid int) int64 {
	pemCA, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	cl := &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxConnsPerHost: 64}}
	hwm := func() int64 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		_, v, _ := strings.Cut(string(b), "VmHWM:")
		var kb int64
		fmt.Sscan(v, &kb)
		return kb
	}
	before := hwm()
	start := time.Now()
	var wg, started sync.WaitGroup
	all := make(chan struct{})
	sizes := make([]int64, 32)
	started.Add(len(sizes))
	for i := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(started.Done)
			defer once()
			req, _ := http.NewRequest("GET", u, nil)
			req.SetBasicAuth("me", tok)
			resp, err := cl.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				return
			}
			n, _ := io.CopyN(io.Discard, resp.Body, 64<<10)
			once()
			<-all
			m, _ := io.Copy(io.Discard, resp.Body)
			sizes[i] = n + m
		}()
	}
	go func() {
		started.Wait()
		close(all)
	}()
	wg.Wait()
	after := hwm()
	t.Logf("32 slow requests at once for a %d KiB module page: %v, serve's peak RSS %d -> %d MiB", sizes[0]>>10, time.Since(start).Round(time.Millisecond), before>>10, after>>10)
	for i, n := range sizes {
		if n != sizes[0] || n == 0 {
			t.Fatalf("request %d got %d bytes of %s, request 0 %d", i, n, u, sizes[0])
		}
	}
	// (Building the 40 MiB page once, to find it is over the largest
	// served, takes ~200 MiB; 32 requests each holding theirs took 3.3 GiB.)
	if grew := after - before; grew > 320<<10 {
		t.Errorf("serve's peak RSS grew by %d MiB for 32 requests of one page (want under 320 MiB)", grew>>10)
	}
	return sizes[0]
}

// docsInBrowser loads a provider's doc page and a module's page in
// headless Chromium: screenshots of both (in $AIRGAP_TEST_ARTIFACTS when
// set), the page's own image loaded and no remote one, no script run, and
// axe-core at zero violations on the docs list, a page, the search and
// the module page.
func docsInBrowser(t *testing.T, store, work string) {
	srv := harness.StartServe(t, store, "--hostname", "registry.terraform.io")
	base, caFile := srv.Base, srv.CAFile
	ctx, cancel := harness.NewChromium(t, base, caFile, work)
	defer cancel()
	eval := harness.JSEval(t, ctx)
	dir := os.Getenv("AIRGAP_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	docsBase := base + "ui/providers/registry.terraform.io/acme/widget/"
	shots := map[string]string{
		"docs-page.png":   docsBase + "1.0.0/docs/resources/thing",
		"docs-list.png":   docsBase + "1.0.0/docs/",
		"docs-module.png": base + "ui/modules/registry.terraform.io/acme/net/aws/1.0.0",
	}
	for name, u := range shots {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatalf("loading %s: %v", u, err)
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), shot, 0o644)
		t.Logf("screenshot of %s: %s", u, filepath.Join(dir, name))
	}
	// The guide's diagram is the docs' own image, loaded; the page's text
	// is rendered markdown.
	if err := chromedp.Do(ctx, chromedp.Navigate(docsBase+"1.0.0/docs/guides/start"), chromedp.WaitVisible(chromedp.CSS("article img"))); err != nil {
		t.Fatal(err)
	}
	if w := eval(`String(document.querySelector("article img").naturalWidth)`); w != "24" {
		t.Errorf("the diagram did not load (naturalWidth %s)", w)
	}
	// The hostile page: nothing ran, no request was made but for the
	// docs' own files (not a remote image, nor one of this appliance's
	// other URLs that a source with ../ segments resolves to).
	if err := chromedp.Do(ctx, chromedp.Navigate(docsBase+"2.0.0/docs/resources/thing"), chromedp.WaitVisible(chromedp.CSS("article"))); err != nil {
		t.Fatal(err)
	}
	if got := eval(`JSON.stringify([document.querySelectorAll("article script, article [onerror]").length, performance.getEntriesByType("resource").map(e => e.name).filter(n => !n.startsWith(location.href.replace(/docs\/resources\/thing$/, "docs/-/")))])`); got != "[0,[]]" {
		t.Errorf("the hostile page: scripts or handlers, and requests beyond the docs' own files: %s", got)
	}
	for _, p := range []string{docsBase + "1.0.0/docs/", docsBase + "1.0.0/docs/guides/start", docsBase + "2.0.0/docs/resources/thing",
		base + "ui/docs/search?q=thing", base + "ui/modules/registry.terraform.io/acme/net/aws/1.0.0", base + "ui/providers/registry.terraform.io/acme/widget"} {
		for _, size := range [][2]int64{{1280, 1000}, {375, 800}} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(p), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
				t.Fatalf("loading %s: %v", p, err)
			}
			harness.AxeCheck(t, ctx, fmt.Sprintf("%s (%dx%d)", p, size[0], size[1]))
		}
	}
}

// docsPNG is a small real PNG, the diagram of widget's guide.
func docsPNG() string {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 24, 12))
	for x := range 24 {
		for y := range 12 {
			img.Set(x, y, color.RGBA{uint8(40 + 8*x), 90, 160, 255})
		}
	}
	png.Encode(&b, img)
	return b.String()
}

// docsOverHTTPS: 'airgap docs --url', as an engineer with a token and the
// CA but no store runs it against the served docs: with a token for
// acme/widget only, its page (escaped, as from a store), its list and the
// search by resource name; a provider outside the token's rules, and no
// token at all, are refused clearly. The token comes from --token-file or,
// as 'terraform login' leaves it, from the CLI configuration's credentials.
func docsOverHTTPS(t *testing.T, work, base, caFile, widget, all string) {
	t.Helper()
	tokFile := filepath.Join(work, "widget.token")
	os.WriteFile(tokFile, []byte(widget+"\n"), 0o600)
	run := func(env []string, args ...string) (string, string, int) {
		return harness.RunSplit(t, work, env, append([]string{"docs", "--url", base}, args...)...)
	}
	withCA := []string{"SSL_CERT_FILE=" + caFile}
	out, errOut, code := run(nil, "--ca", caFile, "--token-file", tokFile, "acme/widget@2.0.0", "widget_thing")
	if code != 0 || !strings.Contains(out, "Version two's thing.") || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b]0;pwned\x07`) {
		t.Errorf("docs --url, the widget page: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(withCA, "--token-file", tokFile, "acme/widget")
	for _, want := range []string{"registry.terraform.io/acme/widget 3.0.0", "Resources (1):", "  resources/thing", "Data sources (1):"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("docs --url, the widget list lacks %q: %d\n%s\n%s", want, code, out, errOut)
		}
	}
	out, errOut, code = run(withCA, "--token-file", tokFile, "--search", "widget_thing")
	if code != 0 || !strings.Contains(out, "widget_thing  registry.terraform.io/acme/widget@3.0.0 resources/thing\n") {
		t.Errorf("docs --url --search widget_thing: %d\n%s\n%s", code, out, errOut)
	}
	if out, _, _ := run(withCA, "--token-file", tokFile, "--search", "gadget"); strings.Contains(out, "gadget ") {
		t.Errorf("docs --url --search found a page outside the token's rules:\n%s", out)
	}
	_, errOut, code = run(withCA, "--token-file", tokFile, "acme/elsewhere", "gadget")
	if code != 1 || !strings.Contains(errOut, "refused: localhost:") || !strings.Contains(errOut, "no documented provider registry.terraform.io/acme/elsewhere that this request may read") || !strings.Contains(errOut, "hint: the access rules of your token") {
		t.Errorf("docs --url for a provider outside the token's rules: %d\n%s", code, errOut)
	}
	// A module: its README, inputs and outputs, as from a store; outside
	// the token's rules, refused as missing.
	allFile := filepath.Join(work, "all.token")
	os.WriteFile(allFile, []byte(all+"\n"), 0o600)
	out, errOut, code = run(withCA, "--token-file", allFile, "acme/net/aws")
	for _, want := range []string{"registry.terraform.io/acme/net/aws 1.0.0", "# Net module", "Inputs (2):", "  cidr  string, required", "Outputs (1):", "Submodule modules/subnet"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("docs --url of a module lacks %q: %d\n%s\n%s", want, code, out, errOut)
		}
	}
	if _, errOut, code = run(withCA, "--token-file", tokFile, "acme/net/aws@1.0.0"); code != 1 || !strings.Contains(errOut, "no documented module registry.terraform.io/acme/net/aws 1.0.0 that this request may read") {
		t.Errorf("docs --url of a module outside the token's rules: %d\n%s", code, errOut)
	}
	noCfg := append([]string{"TF_CLI_CONFIG_FILE=" + filepath.Join(work, "none.tfrc")}, withCA...)
	_, errOut, code = run(noCfg, "acme/widget", "widget_thing")
	if code != 1 || !strings.Contains(errOut, "asks for a token, and none was found\nhint: run 'terraform login'") || !strings.Contains(errOut, "hint: run 'terraform login'") {
		t.Errorf("docs --url without a token: %d\n%s", code, errOut)
	}
	// The token as the CLI configuration holds it (credentials block).
	rc := filepath.Join(work, "docs.tfrc")
	host := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	os.WriteFile(rc, []byte(fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, all)), 0o600)
	out, errOut, code = run(append([]string{"TF_CLI_CONFIG_FILE=" + rc}, withCA...), "acme/elsewhere", "gadget")
	if code != 0 || !strings.Contains(out, "Legacy layout page.") {
		t.Errorf("docs --url with the CLI configuration's token: %d\n%s\n%s", code, out, errOut)
	}
	// No --url: the appliance the client configuration names, and the
	// token 'terraform login' stored for an origin it redirects there.
	os.WriteFile(rc, []byte(fmt.Sprintf("host \"registry.terraform.io\" {\n  services = {\n    \"providers.v1\" = %q\n  }\n}\ncredentials \"registry.terraform.io\" {\n  token = %q\n}\n",
		base+"origin/registry.terraform.io/v1/providers/", all)), 0o600)
	out, errOut, code = harness.RunSplit(t, work, append([]string{"TF_CLI_CONFIG_FILE=" + rc}, withCA...), "docs", "--search", "gadget")
	if code != 0 || !strings.Contains(out, "elsewhere_gadget  registry.terraform.io/acme/elsewhere@1.0.0 resources/gadget\n") || !strings.Contains(errOut, "reading the docs at "+base+", the appliance your CLI configuration") {
		t.Errorf("docs --search with the CLI configuration's appliance and login token: %d\n%s\n%s", code, out, errOut)
	}
}

// token creates a token in the access file allowing pattern, and returns it.
func token(t *testing.T, access, name, pattern string) string {
	t.Helper()
	out := harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", access, "--name", name, "--allow", pattern)
	return strings.TrimSpace(out[:strings.Index(out, "\n")])
}

// docsClient returns a GET with a token as Basic credentials, as a browser
// would send it.
func docsClient(t *testing.T, caFile string) func(u, tok string) (int, string, http.Header) {
	pemCA, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return func(u, tok string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		if tok != "" {
			req.SetBasicAuth("me", tok)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
}

func readManifest(t *testing.T, file string) *bundle.Manifest {
	t.Helper()
	out := harness.MustRun(t, "", nil, harness.Bin, "verify", "--json", "--keyring", filepath.Join(filepath.Dir(file), "k/site.pub.asc"), file)
	var rep struct {
		Providers []struct {
			Address, Version string
			Docs             *dist.ProviderDocs
		}
		Format int
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify --json: %v\n%.2000s", err, out)
	}
	m := &bundle.Manifest{Format: rep.Format}
	for _, p := range rep.Providers {
		a, _ := dist.ParseProviderSource(p.Address)
		m.Catalog.Providers = append(m.Catalog.Providers, dist.ProviderVersion{Host: a.Host, Namespace: a.Namespace, Type: a.Type, Version: p.Version, Docs: p.Docs})
	}
	return m
}
