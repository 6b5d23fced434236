package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestReleasesFromBucketStreamed: a replica of a store in object storage
// serves a release's zip as it serves a provider package, streamed and
// hashed on the way, its HEAD from the object's size: it leaves no copy
// in its directory. (Staged there, every release file any admitted
// client asked for, even by HEAD, stayed on the replica's disk until it
// stopped: a few GiB of Terraform zips filled a pod's ephemeral storage.)
// The bytes served are the publisher's; swapped in the bucket, they are
// cut off short.
func TestReleasesFromBucketStreamed(t *testing.T) {
	t.Parallel()
	work, site, keyring, _, _ := harness.TrustWorld(t)
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	var published *registrytest.CLIRelease
	for _, r := range in.CLIReleases("terraform") {
		if r.Version == "1.14.3" {
			published = r
		}
	}
	p := filepath.Join(work, "release.bundle")
	releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinManifest, nil).WriteBundleFile(t, p, site, bundle.CompressionAuto)
	s := harness.StartS3(t)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, p)

	tmp := t.TempDir()
	srv, cl := bucketReplica(t, s, addr, work, "TMPDIR="+tmp)
	zip := dist.ReleaseZipName("terraform", "1.14.3", "linux", "amd64")
	want, _ := os.ReadFile(published.Files[zip])
	url := srv.Base + "releases/terraform/1.14.3/" + zip
	for _, method := range []string{"HEAD", "GET"} {
		req, _ := http.NewRequest(method, url, nil)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(want)) || resp.Header.Get("Content-Type") != "application/zip" {
			t.Errorf("%s %s: %d, length %d %q; want 200, %d application/zip", method, zip, resp.StatusCode, resp.ContentLength, resp.Header.Get("Content-Type"), len(want))
		}
		if method == "GET" && string(body) != string(want) {
			t.Errorf("GET %s: %d bytes, not the publisher's zip", zip, len(body))
		}
	}
	hex := verify.DigestBytes(want).Hex()
	// The object's bytes swapped in the bucket: the download is cut off
	// short, never a whole wrong zip.
	swapped := append([]byte(nil), want...)
	swapped[len(swapped)/2] ^= 1
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/blobs/sha256/" + hex), Body: bytes.NewReader(swapped)}); err != nil {
		t.Fatal(err)
	}
	if resp, err := cl.Get(url); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(body) == len(swapped) {
			t.Errorf("GET of a swapped release zip: %d, all %d bytes served", resp.StatusCode, len(body))
		}
	}
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), hex) {
			t.Errorf("the replica kept a copy of the zip on its disk: %s", p)
		}
		return nil
	})
}

// TestBucketIndexGarbage: an index.json replaced in the bucket by bytes
// that are not an index (a writer's mistake, or a hostile one) changes
// nothing a running replica serves: it reads it, says so and keeps the
// catalog it had.
func TestBucketIndexGarbage(t *testing.T) {
	t.Parallel()
	work, site, keyring, _, _ := harness.TrustWorld(t)
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	var published *registrytest.CLIRelease
	for _, r := range in.CLIReleases("terraform") {
		if r.Version == "1.14.3" {
			published = r
		}
	}
	p := filepath.Join(work, "release.bundle")
	releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinManifest, nil).WriteBundleFile(t, p, site, bundle.CompressionAuto)
	s := harness.StartS3(t)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, p)
	srv, cl := bucketReplica(t, s, addr, work)
	// A store of releases alone is not empty: the replica says what it
	// serves, not that every request will be answered 404.
	if logs := srv.Logs.String(); strings.Contains(logs, "the store is empty") || !strings.Contains(logs, "releases=1") {
		t.Errorf("a replica over a store of one release, at start:\n%s", logs)
	}
	list := func() (int, string) {
		code, body, _ := harness.Fetch(cl, srv.Base+"releases/terraform/index.json")
		return code, string(body)
	}
	if code, body := list(); code != 200 || !strings.Contains(body, `"1.14.3"`) {
		t.Fatalf("before: %d %s", code, body)
	}
	for _, garbage := range []string{"{", `{"catalog": 7}`, strings.Repeat("[", 100000)} {
		if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/index.json"), Body: strings.NewReader(garbage)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond)
		if code, body := list(); code != 200 || !strings.Contains(body, `"1.14.3"`) {
			t.Errorf("after the index became %.20q: %d %s", garbage, code, body)
		}
	}
	if !strings.Contains(srv.Logs.String(), "still serving the previous catalog") {
		t.Errorf("the replica did not read the replaced index (or did not say it refused it):\n%s", srv.Logs.String())
	}
}

// bucketReplica starts serve over the bucket store addr and a client that
// trusts its shared CA.
func bucketReplica(t *testing.T, s *harness.S3, addr, work string, env ...string) (*harness.Served, *http.Client) {
	t.Helper()
	srv := harness.Serve(t, harness.ServeOptions{Store: addr, Env: append(s.Env(), env...), Args: []string{"--metrics-listen", "off"}})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if pemData, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "ca", "--store", addr); err == nil && strings.Contains(pemData, "-----BEGIN") {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(pemData[strings.Index(pemData, "-----BEGIN"):]))
			c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			if code, _, err := harness.Fetch(c, srv.Base+"healthz"); err == nil && code == 200 {
				return srv, c
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve over %s did not come up:\n%s", addr, srv.Logs.String())
	return nil, nil
}
