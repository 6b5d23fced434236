package oci_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/verify"
)

func TestRepositories(t *testing.T) {
	d := verify.DigestBytes([]byte("x"))
	cat := &dist.Catalog{
		Providers: []dist.ProviderVersion{
			{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "5.0.0+ent",
				Packages: []dist.Package{{OS: "linux", Arch: "amd64", Digest: d, Size: 1, Filename: "a.zip"}}},
			{Host: "reg.example:8443", Namespace: "acme", Type: "x", Version: "1.0.0",
				Packages: []dist.Package{{OS: "linux", Arch: "amd64", Digest: d, Size: 1, Filename: "b.zip"}}},
		},
		Modules: []dist.ModuleVersion{
			{Host: "registry.terraform.io", Namespace: "Acme", Name: "VPC", System: "aws", Version: "1.0.0", Zip: d, ZipSize: 1},
			{Host: "registry.terraform.io", Namespace: "Acme", Name: "VPC", System: "aws", Version: "2.0.0-rc1", Zip: d, ZipSize: 1},
			{Host: "registry.terraform.io", Namespace: "Acme", Name: "VPC", System: "aws", Version: "1.1.0", Zip: d, ZipSize: 1},
			{Host: "registry.terraform.io", Namespace: "old", Name: "nozip", System: "aws", Version: "1.0.0"},
		},
	}
	var names []string
	for _, r := range oci.Repositories(cat) {
		var tags []string
		for _, tg := range r.Content().Tags {
			tags = append(tags, tg.Tag)
		}
		names = append(names, r.Name+" "+strings.Join(tags, ","))
	}
	want := "registry.terraform.io/hashicorp/aws 5.0.0_ent|registry.terraform.io/modules/acme/vpc/aws 1.0.0,1.1.0,2.0.0-rc1,latest"
	if got := strings.Join(names, "|"); got != want {
		t.Fatalf("repositories:\n got %s\nwant %s", got, want)
	}
	if left := strings.Join(oci.Left(cat), "\n"); !strings.Contains(left, "reg.example:8443/acme/x") || !strings.Contains(left, "old/nozip/aws 1.0.0: no zip") {
		t.Fatalf("left out:\n%s", left)
	}
	c := oci.Repositories(cat)[1].Content()
	latest, _ := c.Tag("latest")
	v110, _ := c.Tag("1.1.0")
	if latest.Root != v110.Root {
		t.Fatal("latest is not the newest release")
	}
}

// rejectingRegistry takes blobs but refuses every manifest, as registries
// that only accept container images do.
func rejectingRegistry(t *testing.T) *httptest.Server {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(200)
		case r.Method == http.MethodHead || r.Method == http.MethodGet:
			w.WriteHeader(404)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/"):
			w.Header().Set("Location", r.URL.Path+"u1")
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/"):
			w.Header().Set("Docker-Content-Digest", r.URL.Query().Get("digest"))
			w.WriteHeader(http.StatusCreated)
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"errors":[{"code":"MANIFEST_INVALID","message":"manifest invalid","detail":"unknown media type"}]}`))
		default:
			w.WriteHeader(500)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestPushRejectedArtifactTypes(t *testing.T) {
	set := bundletest.Standard(t, t.TempDir(), bundletest.Key(t, "site"))
	ts := rejectingRegistry(t)
	_, err := oci.Push(context.Background(), &set.Catalog, oci.PushOptions{
		Target:     strings.TrimPrefix(ts.URL, "https://") + "/site",
		Username:   "u",
		HTTPClient: ts.Client(),
		OpenBlob:   func(d verify.Digest) (io.ReadCloser, error) { return os.Open(set.Files[d]) },
	})
	if !errors.Is(err, oci.ErrRejected) || !strings.Contains(err.Error(), "hint:") || !strings.Contains(err.Error(), "custom artifact and media types") {
		t.Fatalf("a registry refusing the layout: %v", err)
	}
}

func TestPushBadTarget(t *testing.T) {
	for _, to := range []string{"", "/x", "reg.example/Bad_Prefix"} {
		if _, err := oci.Push(context.Background(), &dist.Catalog{}, oci.PushOptions{Target: to, Username: "u"}); err == nil {
			t.Errorf("--to %q accepted", to)
		}
	}
}
