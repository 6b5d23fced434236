package server_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/verify"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// ociRepo is oras-go's client (the one OpenTofu uses) for one repository
// of the test server.
func (e *env) ociRepo(t *testing.T, name string) *remote.Repository {
	t.Helper()
	u, _ := url.Parse(e.ts.URL)
	reg, err := remote.NewRegistry(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	reg.Client = e.cl
	// OpenTofu pings /v2/ before it uses a registry.
	if err := reg.Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	repo, err := reg.Repository(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return repo.(*remote.Repository)
}

func (e *env) provider(t *testing.T, typ string) dist.ProviderVersion {
	for _, p := range e.st.Catalog().Providers {
		if p.Type == typ {
			return p
		}
	}
	t.Fatalf("no provider %s in the fixture", typ)
	return dist.ProviderVersion{}
}

func fetchJSON(t *testing.T, repo *remote.Repository, desc ocispec.Descriptor, v any) []byte {
	t.Helper()
	b, err := content.FetchAll(context.Background(), repo, desc)
	if err != nil {
		t.Fatalf("fetch %s: %v", desc.Digest, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOCIProviderMirror walks a provider the way OpenTofu's oci_mirror
// source does (tags, HEAD tag, index, platform manifest, layer) with
// oras-go, and checks every layer is the publisher's zip.
func TestOCIProviderMirror(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	pv := e.provider(t, "random")
	repo := e.ociRepo(t, "registry.terraform.io/hashicorp/random")
	var tags []string
	if err := repo.Tags(ctx, "", func(ts []string) error { tags = append(tags, ts...); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(tags, ",") != "3.6.0" {
		t.Fatalf("tags: %v", tags)
	}
	desc, err := repo.Resolve(ctx, "3.6.0") // HEAD, as OpenTofu does
	if err != nil {
		t.Fatal(err)
	}
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("tag resolves to %q", desc.MediaType)
	}
	var idx ocispec.Index
	fetchJSON(t, repo, desc, &idx)
	if idx.MediaType != ocispec.MediaTypeImageIndex || idx.ArtifactType != oci.ArtifactProvider || len(idx.Manifests) != len(pv.Packages) {
		t.Fatalf("index: %+v", idx)
	}
	for i, md := range idx.Manifests {
		pk := pv.Packages[i]
		if md.MediaType != ocispec.MediaTypeImageManifest || md.ArtifactType != oci.ArtifactProviderTarget ||
			md.Platform == nil || md.Platform.OS != pk.OS || md.Platform.Architecture != pk.Arch || md.Platform.OSVersion != "" {
			t.Fatalf("index entry %d: %+v", i, md)
		}
		var m ocispec.Manifest
		fetchJSON(t, repo, md, &m)
		if m.MediaType != md.MediaType || m.ArtifactType != md.ArtifactType || len(m.Layers) != 1 || m.Config.Digest != ocispec.DescriptorEmptyJSON.Digest {
			t.Fatalf("manifest %s: %+v", pk.Platform(), m)
		}
		l := m.Layers[0]
		if l.MediaType != oci.MediaTypeZip || string(l.Digest) != string(pk.Digest) || l.Size != pk.Size {
			t.Fatalf("layer of %s: %+v, want the zip %s", pk.Platform(), l, pk.Digest)
		}
		got, err := content.FetchAll(ctx, repo, l) // verifies digest and size
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(store.BlobPath(e.root, pk.Digest))
		if !bytes.Equal(got, want) {
			t.Fatalf("layer of %s is not the publisher's zip", pk.Platform())
		}
		// The config (the empty descriptor) is served as {}.
		if cfg, err := content.FetchAll(ctx, repo.Blobs(), m.Config); err != nil || string(cfg) != "{}" {
			t.Fatalf("config blob: %q %v", cfg, err)
		}
	}
	// A byte range of a layer, as a resumed download asks.
	pk := pv.Packages[0]
	resp, body := e.get(t, "/v2/registry.terraform.io/hashicorp/random/blobs/"+string(pk.Digest), "Range", "bytes=10-19")
	want, _ := os.ReadFile(store.BlobPath(e.root, pk.Digest))
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, want[10:20]) || resp.Header.Get("Docker-Content-Digest") != string(pk.Digest) {
		t.Fatalf("range: %s %q", resp.Status, body)
	}
}

func TestOCIModulePackage(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	mv := e.set.Catalog.Modules[0]
	name := oci.ModuleRepo(mv.Host, mv.Namespace, mv.Name, mv.System)
	if name != "registry.terraform.io/modules/example/vpc/aws" {
		t.Fatalf("module repository name %q", name)
	}
	repo := e.ociRepo(t, name)
	d1, err := repo.Resolve(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	latest, err := repo.Resolve(ctx, "latest") // oci:// without ?tag=
	if err != nil || latest.Digest != d1.Digest || d1.MediaType != ocispec.MediaTypeImageManifest {
		t.Fatalf("latest %+v %v, 1.0.0 %+v", latest, err, d1)
	}
	var m ocispec.Manifest
	fetchJSON(t, repo, d1, &m)
	if m.ArtifactType != oci.ArtifactModule || len(m.Layers) != 1 || m.Layers[0].MediaType != oci.MediaTypeZip || string(m.Layers[0].Digest) != string(mv.Zip) {
		t.Fatalf("module manifest: %+v", m)
	}
	zb, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "README.md,modules/vpc/README.md,modules/vpc/main.tf" {
		t.Fatalf("zip entries: %v", names)
	}
	// By digest, as oci://…?digest=sha256:… asks.
	if got, err := repo.Resolve(ctx, string(d1.Digest)); err != nil || got.Digest != d1.Digest {
		t.Fatalf("resolve by digest: %+v %v", got, err)
	}
}

// TestOCIErrors: what a client must read as "not found" is a 404 with the
// OCI error code, and nothing else leaks across repositories.
func TestOCIErrors(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	code := func(err error) string {
		var er *errcode.ErrorResponse
		if errors.As(err, &er) && len(er.Errors) > 0 {
			return er.Errors[0].Code
		}
		return ""
	}
	// An unknown repository: NAME_UNKNOWN (OpenTofu: provider not found).
	err := e.ociRepo(t, "registry.terraform.io/hashicorp/aws").Tags(ctx, "", func([]string) error { return nil })
	if code(err) != "NAME_UNKNOWN" {
		t.Fatalf("unknown repository: %v", err)
	}
	repo := e.ociRepo(t, "registry.terraform.io/hashicorp/random")
	if _, err := repo.Resolve(ctx, "9.9.9"); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}
	// The null provider's zip is not a blob of the random repository.
	other := e.provider(t, "null").Packages[0]
	resp, body := e.get(t, "/v2/registry.terraform.io/hashicorp/random/blobs/"+string(other.Digest))
	if resp.StatusCode != 404 || !strings.Contains(string(body), "BLOB_UNKNOWN") {
		t.Fatalf("foreign blob: %s %s", resp.Status, body)
	}
	// SHA256SUMS is in the store but is no layer: not served under /v2/.
	resp, body = e.get(t, "/v2/registry.terraform.io/hashicorp/random/blobs/"+string(e.provider(t, "random").Shasums))
	if resp.StatusCode != 404 {
		t.Fatalf("SHA256SUMS as a blob: %s %s", resp.Status, body)
	}
	for _, p := range []string{"/v2/Bad_Name/tags/list", "/v2/registry.terraform.io/hashicorp/random/blobs/sha256:zz", "/v2/x/y/z"} {
		resp, body := e.get(t, p)
		if resp.StatusCode < 400 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"code"`) {
			t.Errorf("%s: %s %s", p, resp.Status, body)
		}
	}
}

// TestOCITagPagination: n and last page through tags, Link names the next page.
func TestOCITagPagination(t *testing.T) {
	e := setup(t)
	var page struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	resp := e.getJSON(t, "/v2/registry.terraform.io/modules/example/vpc/aws/tags/list?n=1", &page)
	if strings.Join(page.Tags, ",") != "1.0.0" || page.Name != "registry.terraform.io/modules/example/vpc/aws" {
		t.Fatalf("page 1: %+v", page)
	}
	link := resp.Header.Get("Link")
	if link != `</v2/registry.terraform.io/modules/example/vpc/aws/tags/list?last=1.0.0&n=1>; rel="next"` {
		t.Fatalf("Link: %q", link)
	}
	resp = e.getJSON(t, "/v2/registry.terraform.io/modules/example/vpc/aws/tags/list?last=1.0.0&n=1", &page)
	if strings.Join(page.Tags, ",") != "latest" || resp.Header.Get("Link") != "" {
		t.Fatalf("page 2: %+v %q", page, resp.Header.Get("Link"))
	}
	if r, _ := e.get(t, "/v2/registry.terraform.io/modules/example/vpc/aws/tags/list?n=-1"); r.StatusCode != 400 {
		t.Fatalf("n=-1: %s", r.Status)
	}
}

// TestOCIDeterministic: two appliances built independently from the same
// packages (replicas, restarts) serve the same manifests and digests.
func TestOCIDeterministic(t *testing.T) {
	var got [2][]string
	for i := range got {
		e := setup(t)
		for _, r := range oci.Repositories(e.st.Catalog()) {
			for _, tg := range r.Content().Tags {
				resp, body := e.get(t, "/v2/"+r.Name+"/manifests/"+tg.Tag)
				if resp.StatusCode != 200 || resp.Header.Get("Docker-Content-Digest") != string(verify.DigestBytes(body)) {
					t.Fatalf("%s:%s: %s, digest header %q", r.Name, tg.Tag, resp.Status, resp.Header.Get("Docker-Content-Digest"))
				}
				got[i] = append(got[i], r.Name+":"+tg.Tag+"@"+resp.Header.Get("Docker-Content-Digest"))
			}
		}
	}
	if len(got[0]) != 4 || strings.Join(got[0], " ") != strings.Join(got[1], " ") {
		t.Fatalf("digests differ between two appliances:\n%v\n%v", got[0], got[1])
	}
	t.Log(got[0])
}

// TestOCIHead: HEAD answers carry what oras-go's Resolve requires.
func TestOCIHead(t *testing.T) {
	e := setup(t)
	req, _ := http.NewRequest(http.MethodHead, e.ts.URL+"/v2/registry.opentofu.org/hashicorp/null/manifests/3.2.2", nil)
	resp, err := e.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 0 || resp.Header.Get("Content-Type") != ocispec.MediaTypeImageIndex ||
		!strings.HasPrefix(resp.Header.Get("Docker-Content-Digest"), "sha256:") || resp.ContentLength <= 0 {
		t.Fatalf("HEAD: %s %v", resp.Status, resp.Header)
	}
}
