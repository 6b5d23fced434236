package kube

import (
	"archive/tar"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestImagePush: 'airgap push --image' puts the archive 'make image'
// writes into a real registry (CNCF distribution, TLS, htpasswd) under the
// tag given, and the registry then serves the image index with the digest
// make image printed; an archive that is not an image layout is refused
// before anything is sent.
func TestImagePush(t *testing.T) {
	reg := harness.StartRegistry(t)
	digest, archive := makeImage(t, t.TempDir(), "1764000000")
	env := []string{"SSL_CERT_FILE=" + reg.CAFile, oci.PasswordEnv + "=" + reg.Password, "DOCKER_CONFIG=" + t.TempDir()}
	target := reg.Host + "/airgap/airgap:1.2.3"
	out := harness.MustRun(t, "", env, harness.Bin, "push", "--image", archive, "--to", target, "--username", reg.User)
	if want := "pushed " + reg.Host + "/airgap/airgap:1.2.3@" + digest; strings.TrimSpace(out) != want {
		t.Fatalf("push --image printed %q, want %q", out, want)
	}
	req, _ := http.NewRequest("HEAD", "https://"+reg.Host+"/v2/airgap/airgap/manifests/1.2.3", nil)
	req.SetBasicAuth(reg.User, reg.Password)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json")
	resp, err := harness.CAFileClient(t, reg.CAFile).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Docker-Content-Digest"); resp.StatusCode != 200 || got != digest {
		t.Fatalf("the registry serves 1.2.3 as %d %s, make image printed %s", resp.StatusCode, got, digest)
	}
	// Again: the same digest, nothing wrong with pushing twice.
	harness.MustRun(t, "", env, harness.Bin, "push", "--image", archive, "--to", target, "--username", reg.User)

	// A tar that is not an image layout.
	bad := filepath.Join(t.TempDir(), "bad.tar")
	f, _ := os.Create(bad)
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "../../etc/cron.d/x", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	f.Close()
	o, err := harness.CmdRun(t, "", env, harness.Bin, "push", "--image", bad, "--to", target, "--username", reg.User)
	if err == nil || !strings.Contains(o, "not part of an OCI image layout") || !strings.Contains(o, "hint:") {
		t.Fatalf("push --image of a tar that is not a layout: %v\n%s", err, o)
	}
}
