package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/verify"
)

// TestFetchTerraform runs the fetch against a loopback stand-in of
// releases.hashicorp.com (the real site is not reachable from the tests)
// with a key of its own pinned by fingerprint: a good release lands in the
// cache; a key of another fingerprint, a SHA256SUMS signed by another key
// and a zip that is not the one SHA256SUMS names are each refused, and
// nothing is left in the cache.
func TestFetchTerraform(t *testing.T) {
	const version, platform = "1.15.9", "linux_amd64"
	publisher, other := bundletest.Key(t, "publisher"), bundletest.Key(t, "other")
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	w, _ := zw.Create("terraform")
	w.Write([]byte("#!/bin/sh\necho terraform\n"))
	zw.Close()
	files := map[string][]byte{}
	release := func(zipData []byte, signer, keyOwner *openpgp.Entity) {
		name := "terraform_" + version + "_" + platform + ".zip"
		sum := sha256.Sum256(zbuf.Bytes())
		sums := []byte(fmt.Sprintf("%x  %s\n%x  terraform_%s_darwin_arm64.zip\n", sum, name, sha256.Sum256(nil), version))
		var sig bytes.Buffer
		verify.SignDetached(&sig, signer, bytes.NewReader(sums))
		pub, _ := verify.PublicArmor(keyOwner)
		files["/key.txt"] = []byte(pub)
		files["/terraform/"+version+"/terraform_"+version+"_SHA256SUMS"] = sums
		files["/terraform/"+version+"/terraform_"+version+"_SHA256SUMS.sig"] = sig.Bytes()
		files["/terraform/"+version+"/"+name] = zipData
	}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := files[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer ts.Close()
	fetch := func(fpr string) (string, error) {
		cache := t.TempDir()
		bin, err := fetchTerraform(context.Background(), ts.Client(), ts.URL+"/terraform", ts.URL+"/key.txt", fpr, version, platform, cache)
		if err != nil {
			if ents, _ := os.ReadDir(cache); len(ents) != 0 {
				t.Errorf("a refused fetch left %v in the cache", ents)
			}
		}
		return bin, err
	}

	release(zbuf.Bytes(), publisher, publisher)
	bin, err := fetch(verify.Fingerprint(publisher))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(bin); string(b) != "#!/bin/sh\necho terraform\n" || filepath.Base(bin) != "terraform-"+version {
		t.Errorf("unpacked %s: %q", bin, b)
	}
	if st, _ := os.Stat(bin); st.Mode().Perm() != 0o755 {
		t.Errorf("%s has mode %v", bin, st.Mode())
	}
	for _, c := range []struct {
		what          string
		zipData       []byte
		signer, owner *openpgp.Entity // of SHA256SUMS.sig, of the key served
		wantText      string
	}{
		{"a key of another fingerprint", zbuf.Bytes(), other, other, "no key with the fingerprint"},
		{"SHA256SUMS signed by another key", zbuf.Bytes(), other, publisher, "is not signed by HashiCorp's key"},
		{"another zip", append(bytes.Clone(zbuf.Bytes()), 0), publisher, publisher, "the signed terraform_1.15.9_SHA256SUMS says"},
	} {
		release(c.zipData, c.signer, c.owner)
		if _, err := fetch(verify.Fingerprint(publisher)); err == nil || !strings.Contains(err.Error(), c.wantText) {
			t.Errorf("%s: %v, want %q", c.what, err, c.wantText)
		}
	}
}
