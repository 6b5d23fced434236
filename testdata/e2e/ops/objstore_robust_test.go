package ops

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreReplicaStartLog: a bucket replica says "the store is
// empty" at start only when the bucket holds no index: over an imported
// store it logs the catalog it serves instead.
func TestObjectStoreReplicaStartLog(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, _ := harness.OpsStore(t)
	work := filepath.Dir(root)
	empty, _ := startS3Replica(t, s, s.Addr("empty"))
	if !strings.Contains(empty.Logs.String(), "the store is empty") {
		t.Errorf("a replica over a prefix with no index does not say the store is empty:\n%s", empty.Logs.String())
	}
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	r, _ := startS3Replica(t, s, addr)
	logs := r.Logs.String()
	if strings.Contains(logs, "the store is empty") || !strings.Contains(logs, "msg=serving") || strings.Contains(logs, "provider_versions=0 ") {
		t.Errorf("a replica over an imported store:\n%s", logs)
	}
}

// TestObjectStoreForgedLease: a lease object written by hand with an
// expiry in 2099 does not block imports: the next import takes it over,
// says whose it was and why it was not honoured, and lands. A live lease
// within the term an import sets is refused naming its holder and how to
// break it; broken as the refusal says, the import lands. gc, too, takes
// over a forged lease.
func TestObjectStoreForgedLease(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	addr := s.Addr("site")
	putLease := func(holder string, expires time.Time) {
		t.Helper()
		body := fmt.Sprintf(`{"holder":%q,"started":"2026-01-01T00:00:00Z","expires":%q}`, holder, expires.UTC().Format(time.RFC3339))
		if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	putLease("mallory", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	if !strings.Contains(out, "took over the lease of mallory") || !strings.Contains(out, "2099-01-01T00:00:00Z") || !strings.Contains(out, "not honoured") {
		t.Errorf("import over a lease forged to 2099 does not say so:\n%s", out)
	}
	if keys := bucketList(t, s, "site/lease.json"); len(keys) != 0 {
		t.Errorf("the lease is left after the import: %v", keys)
	}

	// Just within what an importer with a clock a few minutes ahead sets:
	// honoured, and the refusal says how to break it.
	putLease("ops@importer-7 (pid 42)", time.Now().Add(objstore.LeaseTTL+objstore.LeaseSkew-time.Minute))
	two := extra("two")
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, two)
	if err == nil || !strings.Contains(out, "ops@importer-7 (pid 42) holds its lease") ||
		!strings.Contains(out, "break the lease by deleting the object s3://"+s.Bucket+"/site/lease.json") || !strings.Contains(out, "not changed") {
		t.Errorf("import under a live lease: %v\n%s", err, out)
	}
	if _, err := s.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json")}); err != nil {
		t.Fatal(err)
	}
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, two)

	putLease("mallory", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	harness.MustRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr)
	if keys := bucketList(t, s, "site/lease.json"); len(keys) != 0 {
		t.Errorf("the forged lease is left after gc: %v", keys)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
	harness.CheckConsistent(t, dir)
}
