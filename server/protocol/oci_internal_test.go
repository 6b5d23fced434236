package protocol

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/verify"
)

type catStore struct{ cat *dist.Catalog }

func (c catStore) Catalog() *dist.Catalog                   { return c.cat }
func (c catStore) OpenBlob(verify.Digest) (*os.File, error) { return nil, os.ErrNotExist }

// TestOCIStateBoundedByCatalog: requests for names, tags and digests that
// do not exist add nothing; the state holds one entry per repository of
// the catalog and builds documents only for repositories asked for.
func TestOCIStateBoundedByCatalog(t *testing.T) {
	d := verify.DigestBytes([]byte("zip"))
	cat := &dist.Catalog{}
	for i := 0; i < 50; i++ {
		cat.Providers = append(cat.Providers, dist.ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: fmt.Sprintf("p%d", i), Version: "1.0.0",
			Packages: []dist.Package{{OS: "linux", Arch: "amd64", Filename: "p.zip", Digest: d, Size: 3}}})
	}
	s := New(catStore{cat}, Options{})
	answer := s.Handlers().OCI
	for i := 0; i < 5000; i++ {
		for _, p := range []string{
			fmt.Sprintf("/v2/registry.terraform.io/hashicorp/nope%d/tags/list", i),
			fmt.Sprintf("/v2/registry.terraform.io/hashicorp/p1/manifests/9.%d.0", i),
			fmt.Sprintf("/v2/registry.terraform.io/hashicorp/p1/manifests/sha256:%064x", i),
			fmt.Sprintf("/v2/registry.terraform.io/hashicorp/p1/blobs/sha256:%064x", i),
		} {
			w := httptest.NewRecorder()
			answer(w, httptest.NewRequest(http.MethodGet, p, nil))
			if w.Code != http.StatusNotFound {
				t.Fatalf("%s: %d", p, w.Code)
			}
		}
	}
	st := s.oci.p.Load()
	if len(st.repos) != len(oci.Repositories(cat)) {
		t.Fatalf("%d repositories in the state, the catalog has %d", len(st.repos), len(oci.Repositories(cat)))
	}
	built := 0
	for _, r := range st.repos {
		if r.content != nil {
			built++
		}
	}
	if built != 1 {
		t.Fatalf("documents built for %d repositories, only p1 was asked for", built)
	}
}
