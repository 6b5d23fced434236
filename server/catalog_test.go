package server_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/protocol"
	"github.com/airgap/airgap/verify"
)

// indexStore is a server.Store over an in-memory index (with the Index
// method the catalog page reads imports and withdrawals from).
type indexStore struct{ ix *store.Index }

func (s indexStore) Catalog() *dist.Catalog { return &s.ix.Catalog }
func (s indexStore) Index() *store.Index    { return s.ix }
func (s indexStore) OpenBlob(d verify.Digest) (*os.File, error) {
	return nil, fmt.Errorf("%w: %s", store.ErrBlobMissing, d.Short())
}

func fakeDigest(s string) verify.Digest { return verify.DigestBytes([]byte(s)) }

func TestCatalogPage(t *testing.T) {
	e := setup(t)
	resp, body := e.get(t, "/")
	page := string(body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'sha256-") {
		t.Errorf("CSP: %q", csp)
	}
	for _, p := range e.set.Catalog.Providers {
		if !strings.Contains(page, p.Version) || !strings.Contains(page, `data-addr="`+p.Addr()+`"`) {
			t.Errorf("the page lacks provider %s", p)
		}
	}
	for _, m := range e.set.Catalog.Modules {
		if !strings.Contains(page, `data-addr="`+m.Addr()+`"`) {
			t.Errorf("the page lacks module %s", m)
		}
	}
	// No external resource of any kind.
	for _, bad := range []string{"http://", "src=\"http", "href=\"http", "@import", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page refers to something outside: %q", bad)
		}
	}
	// The configuration is exactly what client-config prints for this URL.
	base := e.ts.URL + "/"
	for _, c := range [][2]string{{"terraform", "registry"}, {"terraform", "mirror"}, {"tofu", "registry"}, {"tofu", "mirror"}, {"tofu", "oci"}} {
		var want strings.Builder
		protocol.WriteClientConfig(&want, protocol.ClientConfigOptions{URL: base, Origins: protocol.Origins(e.st.Catalog()), Tool: c[0], Mode: c[1]})
		re := regexp.MustCompile(`(?s)<pre class="client-config" data-tool="` + c[0] + `" data-mode="` + c[1] + `"[^>]*>(.*?)</pre>`)
		got := re.FindStringSubmatch(page)
		if got == nil || html.UnescapeString(got[1]) != want.String() {
			t.Errorf("the page's %s %s config differs from client-config:\n%v\nwant:\n%s", c[0], c[1], got, want.String())
		}
	}

	// A provider's page: every package's h1 and zh hashes and a snippet.
	p := e.set.Catalog.Providers[0]
	resp, body = e.get(t, "/ui/providers/"+p.Addr())
	if resp.StatusCode != 200 {
		t.Fatalf("provider page: %d", resp.StatusCode)
	}
	for _, pk := range p.Packages {
		if !strings.Contains(string(body), pk.H1) || !strings.Contains(string(body), pk.ZH()) {
			t.Errorf("provider page lacks the hashes of %s", pk.Platform())
		}
	}
	if !strings.Contains(string(body), "required_providers") {
		t.Error("provider page has no required_providers snippet")
	}
	m := e.set.Catalog.Modules[0]
	if resp, body := e.get(t, "/ui/modules/"+m.Addr()); resp.StatusCode != 200 || !strings.Contains(string(body), "module &#34;"+m.Name+"&#34;") {
		t.Errorf("module page: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := e.get(t, "/ui/providers/example.com/no/such"); resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("unknown provider page: %d", resp.StatusCode)
	}
}

// TestCatalogKeepsProtocols: the page takes nothing from the protocol
// endpoints: they answer JSON whatever the client accepts, and an unknown
// path is still a JSON 404.
func TestCatalogKeepsProtocols(t *testing.T) {
	e := setup(t)
	p := e.set.Catalog.Providers[0]
	for _, path := range []string{"/.well-known/terraform.json", "/v1/providers/" + p.Namespace + "/" + p.Type + "/versions", "/airgap/v1/origins"} {
		resp, _ := e.get(t, path, "Accept", "text/html,application/xhtml+xml")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with Accept: text/html: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/nothing", "/index.html", "/v1/", "/ui/"} {
		resp, _ := e.get(t, path, "Accept", "text/html")
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want a JSON 404", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

// TestCatalogEscapes: strings from bundles and the Host header cannot
// inject markup.
func TestCatalogEscapes(t *testing.T) {
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	ix := &store.Index{Catalog: dist.Catalog{
		Modules: []dist.ModuleVersion{{Host: "registry.terraform.io", Namespace: "evil", Name: "mod", System: "aws", Version: "1.0.0",
			Archive: fakeDigest("a"), Source: "git::https://example.com/x?ref=" + evil}},
	}, Withdrawn: []store.Withdrawn{{Kind: "provider", Addr: "registry.terraform.io/evil/p", Version: "1.0.0", Reason: evil,
		Signer: verify.Signer{Fingerprint: evil}, Time: time.Unix(0, 0)}},
		Imports: []store.ImportEntry{{Bundle: fakeDigest("b"), Signer: verify.Signer{Identity: evil, Fingerprint: "F"},
			Approvals:    []store.ApprovalRecord{{Blob: fakeDigest("d"), Station: verify.Signer{Identity: evil, Fingerprint: strings.Repeat("C", 40)}, Note: "note " + evil}},
			TrustChanges: []store.TrustChange{{Provider: "registry.terraform.io/evil/p 1.0.0", Change: "signature", After: verify.Signer{Identity: evil, Fingerprint: strings.Repeat("D", 40)}}}}},
		PublisherKeys: []dist.NamespaceKeys{{Namespace: "registry.terraform.io/evil", Keys: []dist.KeyPin{
			{Fingerprint: strings.Repeat("A", 40), Identity: evil, How: dist.PinFirstUse},
			{Fingerprint: strings.Repeat("B", 40), Identity: "Rotated <r@example.test>", How: dist.PinOperator, Bundle: fakeDigest("c")}}}}}
	ts := httptest.NewTLSServer(server.New(indexStore{ix}, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer ts.Close()
	for _, path := range []string{"/", "/?q=" + strings.ReplaceAll(evil, " ", "+"), "/ui/modules/registry.terraform.io/evil/mod/aws"} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Host = `evil"><script>alert(3)</script>`
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "<script>alert") || strings.Contains(string(b), "<img") {
			t.Errorf("%s: unescaped markup in the page:\n%s", path, b)
		}
		if path == "/" && (!strings.Contains(string(b), "&lt;script&gt;alert(1)") || !strings.Contains(string(b), "https://APPLIANCE-HOST/")) {
			t.Errorf("the withdrawal reason or the placeholder URL is missing:\n%s", b)
		}
		if path == "/" && (!strings.Contains(string(b), verify.GroupFingerprint(strings.Repeat("B", 40))) || !strings.Contains(string(b), "accepted at import") || !strings.Contains(string(b), "2 keys")) {
			t.Errorf("the publisher key history is missing:\n%s", b)
		}
		if path == "/" && (!strings.Contains(string(b), "note &lt;script&gt;alert(1)") || !strings.Contains(string(b), verify.GroupFingerprint(strings.Repeat("C", 40))) ||
			!strings.Contains(string(b), verify.GroupFingerprint(strings.Repeat("D", 40)))) {
			t.Errorf("the approval or the trust change is missing from the bundles imported:\n%s", b)
		}
	}
}

// bigIndex is a catalog of n providers × versions × platforms packages.
func bigIndex(providers, versions int, plats []string) *store.Index {
	ix := &store.Index{}
	for i := 0; i < providers; i++ {
		for v := 0; v < versions; v++ {
			pv := dist.ProviderVersion{Host: "registry.terraform.io", Namespace: fmt.Sprintf("ns%04d", i/10), Type: fmt.Sprintf("type%05d", i),
				Version: fmt.Sprintf("1.%d.0", v), Protocols: []string{"5.0"}, Shasums: fakeDigest(fmt.Sprint("s", i, v)), ShasumsSig: fakeDigest(fmt.Sprint("g", i, v)),
				SigningKeys: []dist.SigningKey{{KeyID: "34365D9472D7468F"}}}
			for _, p := range plats {
				os, arch, _ := strings.Cut(p, "_")
				pv.Packages = append(pv.Packages, dist.Package{OS: os, Arch: arch, Filename: "f.zip", Digest: fakeDigest(fmt.Sprint(i, v, p)), H1: "h1:" + strings.Repeat("A", 43) + "="})
			}
			ix.Catalog.Providers = append(ix.Catalog.Providers, pv)
		}
	}
	ix.Catalog.Sort()
	return ix
}

// TestCatalogScale: at 50,000 packages the first byte of the page comes in
// well under 100 ms (the model is built once per snapshot; a page is a
// filter over the address list and one page of rows).
func TestCatalogScale(t *testing.T) {
	t.Run("5000x2x5", func(t *testing.T) {
		catalogScale(t, bigIndex(5000, 2, []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"}))
	})
	t.Run("50000x1x1", func(t *testing.T) { catalogScale(t, bigIndex(50000, 1, []string{"linux_amd64"})) })
}

// catalogScale measures the page over a catalog of 50,000 packages.
func catalogScale(t *testing.T, ix *store.Index) {
	ts := httptest.NewTLSServer(server.New(indexStore{ix}, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer ts.Close()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}
	cl := &http.Client{Transport: tr}
	firstByte := func(path string) (time.Duration, int) {
		start := time.Now()
		resp, err := cl.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if _, err := br.Peek(1); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		n, _ := io.Copy(io.Discard, br)
		return d, int(n) + 1
	}
	cold, size := firstByte("/")
	t.Logf("50,000 packages: first byte of / on a new snapshot (model built) %v, %d bytes", cold.Round(time.Microsecond), size)
	for _, path := range []string{"/", "/?page=50", "/?q=type0499", "/?q=no-such-thing", "/ui/providers/registry.terraform.io/ns0001/type00010"} {
		var ds []time.Duration
		for i := 0; i < 7; i++ {
			d, _ := firstByte(path)
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("50,000 packages: %s first byte median %v (min %v, max %v)", path, ds[3].Round(time.Microsecond), ds[0].Round(time.Microsecond), ds[6].Round(time.Microsecond))
		if ds[3] > 100*time.Millisecond {
			t.Errorf("%s: median first byte %v at 50,000 packages, want < 100 ms", path, ds[3])
		}
	}
	if cold > 500*time.Millisecond {
		t.Errorf("building the page model for 50,000 packages took %v", cold)
	}
}
