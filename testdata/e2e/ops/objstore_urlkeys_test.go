package ops

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreURLKeyRotation: 'token create --store s3://…' warns of a
// pattern that matches nothing in the bucket's catalog. 'airgap token
// rotate-url-key --store s3://…' rotates the URL keys two replicas share. Two rotations run at
// once both land (the object holds both new keys: each is written with
// If-Match on the version it read, retried on 412); within the bound both
// replicas sign with the newest key, each verifies the other's URLs, and
// a URL signed with the key the rotations pushed out is refused by both.
func TestObjectStoreURLKeyRotation(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	accessFile := filepath.Join(work, "access.hcl")
	ci := harness.CreateToken(t, accessFile, "ci", "**")
	// 'token create --store s3://…' judges its patterns against the
	// bucket's catalog, as against a directory's.
	other := filepath.Join(work, "other.hcl")
	for pat, warned := range map[string]bool{"registry.terraform.io/hashicorp/*": false, "registry.terraform.io/hashicorp/randon": true} {
		out := harness.MustRun(t, work, s.Env(), harness.Bin, "token", "create", "--access", other, "--name", "p"+map[bool]string{true: "1", false: "0"}[warned],
			"--allow", pat, "--store", addr, "--json")
		var doc struct{ Warnings []string }
		json.Unmarshal([]byte(out), &doc)
		if got := len(doc.Warnings) > 0 && strings.Contains(doc.Warnings[0], "matches nothing"); got != warned {
			t.Errorf("token create --allow %s --store s3://: warnings %q", pat, doc.Warnings)
		}
	}
	var reps []*harness.Served
	var cl *http.Client
	for range 2 {
		// A short URL lifetime: answers are cached for a quarter of it
		// (2 s), so a new key shows in them soon after it is taken.
		r, c := startS3Replica(t, s, addr, "--access", accessFile, "--download-url-ttl", "8s")
		reps, cl = append(reps, r), c
	}
	const dl = "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	signed := func(r *harness.Served) (u, keyID string) {
		t.Helper()
		resp, body := harness.HTTPGet(t, cl, r.Base+dl, "Authorization", "Bearer "+ci)
		var d struct {
			DownloadURL string `json:"download_url"`
		}
		json.Unmarshal(body, &d)
		if resp.StatusCode != 200 || !strings.Contains(d.DownloadURL, "sig=") {
			t.Fatalf("download answer from :%d: %d %s", r.Port, resp.StatusCode, body)
		}
		u = harness.ResolveRef(r.Base+dl, d.DownloadURL)
		pu, _ := url.Parse(u)
		keyID, _, _ = strings.Cut(pu.Query().Get("sig"), ".")
		return u, keyID
	}
	old, oldKey := signed(reps[0])

	// Two rotations at once.
	ids := make([]string, 2)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "token", "rotate-url-key", "--store", addr, "--json")
			var doc struct {
				URLKey string `json:"url_key"`
			}
			if err != nil || json.Unmarshal([]byte(out), &doc) != nil || doc.URLKey == "" {
				t.Errorf("token rotate-url-key --store s3://: %v\n%s", err, out)
			}
			ids[i] = doc.URLKey
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	obj, err := s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("site/tls/url-keys.json")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.LimitReader(obj.Body, 1<<16))
	obj.Body.Close()
	var f struct{ Keys []struct{ ID string } }
	json.Unmarshal(b, &f)
	var inBucket []string
	for _, k := range f.Keys {
		inBucket = append(inBucket, k.ID)
	}
	if len(inBucket) != 2 || !(inBucket[0] == ids[0] && inBucket[1] == ids[1] || inBucket[0] == ids[1] && inBucket[1] == ids[0]) {
		t.Fatalf("after two rotations at once (%v) the bucket holds the keys %v (was %s): one rotation was lost", ids, inBucket, oldKey)
	}

	// Both replicas take the newest within the bound: a poll interval to
	// see it, a second to load it, the 2 s an answer is cached.
	const bound = 5 * time.Second
	start := time.Now()
	for i, r := range reps {
		for {
			if _, k := signed(r); k == inBucket[0] {
				t.Logf("replica %d signs with the rotated key after %v", i, time.Since(start).Round(time.Millisecond))
				break
			}
			if time.Since(start) > bound {
				t.Fatalf("replica %d still signs with an older key %v after the rotation", i, bound)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, r := range reps {
		pu, _ := url.Parse(old)
		pu.Host = r.Base[len("https://") : len(r.Base)-1]
		if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 403 {
			t.Errorf("a URL signed with the rotated-out key %s, at :%d: %s", oldKey, r.Port, resp.Status)
		}
		u, _ := signed(r)
		for _, to := range reps {
			pu, _ := url.Parse(u)
			pu.Host = to.Base[len("https://") : len(to.Base)-1]
			if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 200 {
				t.Errorf("a URL signed by :%d with the new key, at :%d: %s", r.Port, to.Port, resp.Status)
			}
		}
	}
}
