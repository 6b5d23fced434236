package ops

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreCheck: 'airgap store check' passes against a real S3
// server (versitygw, which checks signatures: a wrong secret is refused
// as such), and refuses a loopback stand-in that stores objects but
// ignores If-None-Match and If-Match, naming what failed and the servers
// known to work.
func TestObjectStoreCheck(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work := t.TempDir()
	addr := s.Addr("site")
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "store", "check", addr)
	if !strings.Contains(out, "honours conditional writes") {
		t.Errorf("store check: %s", out)
	}
	wrong := append(s.Env(), "AWS_SECRET_ACCESS_KEY=0000"+s.Secret[4:])
	out, err := harness.CmdRun(t, work, wrong, harness.Bin, "store", "check", addr)
	if err == nil || !strings.Contains(out, "refused the credentials") || !strings.Contains(out, "hint: ") {
		t.Errorf("store check with a wrong secret: %v\n%s", err, out)
	}
	out, err = harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "check", strings.Replace(addr, s.Bucket, "no-such-bucket", 1))
	if err == nil || !strings.Contains(out, "does not exist") {
		t.Errorf("store check of a missing bucket: %v\n%s", err, out)
	}

	careless := carelessS3(t)
	out, err = harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "check", "s3://bkt/site?use_path_style=true&endpoint="+careless)
	if err == nil || !strings.Contains(out, "does not honour conditional writes") || !strings.Contains(out, "second write-if-absent") ||
		!strings.Contains(out, "versitygw") || !strings.Contains(out, "SeaweedFS") {
		t.Errorf("store check of a server that ignores conditions: %v\n%s", err, out)
	}
	// The copy checks first too, and writes nothing there.
	root, _, _ := harness.OpsStore(t)
	out, err = harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "copy", root, "s3://bkt/site?use_path_style=true&endpoint="+careless)
	if err == nil || !strings.Contains(out, "does not honour conditional writes") {
		t.Errorf("store copy to a server that ignores conditions: %v\n%s", err, out)
	}
}

// carelessS3 is a loopback stand-in for an S3-compatible server that
// ignores conditional headers (and signatures): every PUT succeeds.
func carelessS3(t *testing.T) string {
	var mu sync.Mutex
	objs := map[string][]byte{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			objs[r.URL.Path] = b
			sum := md5.Sum(b)
			w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		case http.MethodDelete:
			delete(objs, r.URL.Path)
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet, http.MethodHead:
			b, ok := objs[r.URL.Path]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.Write(b)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestObjectStoreCopy: a store copied from a directory to a bucket and
// back lists and hashes the same as the original, and real terraform
// init installs through 'airgap serve' over the copy. A copy into a
// prefix that holds objects is refused, and a blob swapped in the bucket
// stops a copy out of it, leaving no directory behind.
func TestObjectStoreCopy(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", root, bundles[0])

	addr := s.Addr("copied")
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", root, addr)
	if !strings.Contains(out, "then the index") {
		t.Errorf("store copy: %s", out)
	}
	back := filepath.Join(work, "back")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, back)
	want, got := storeFiles(t, root), storeFiles(t, back)
	if len(want) < 3 || fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("the copy differs from the original:\n got %v\nwant %v", got, want)
	}
	harness.CheckConsistent(t, back)

	// Into a prefix with a store in it already: refused, nothing changed.
	before := bucketList(t, s, "copied/")
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "copy", root, addr)
	if err == nil || !strings.Contains(out, "the prefix is not empty") {
		t.Errorf("copy into a store: %v\n%s", err, out)
	}
	if after := bucketList(t, s, "copied/"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused copy changed the bucket:\n%v\n%v", before, after)
	}

	// Real terraform init through serve over the copy.
	srv := harness.StartServe(t, back)
	if out, err := terraformInit(t, srv.Base, srv.CAFile, "3.6.2"); err != nil || !strings.Contains(out, "3.6.2") {
		t.Errorf("terraform init through serve over the copied store: %v\n%s", err, out)
	}

	// A blob damaged in a directory store (same size, other bytes): the
	// copy into a bucket stops naming it, and the prefix gets no index.
	damaged := filepath.Join(work, "damaged")
	harness.MustRun(t, work, nil, "cp", "-a", root, damaged)
	ents, _ := os.ReadDir(filepath.Join(damaged, "blobs", "sha256"))
	bp := filepath.Join(damaged, "blobs", "sha256", ents[len(ents)-1].Name())
	os.Chmod(bp, 0o644)
	bdata, _ := os.ReadFile(bp)
	bdata[len(bdata)-1] ^= 1
	os.WriteFile(bp, bdata, 0o444)
	out, err = harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "copy", damaged, s.Addr("damaged"))
	if err == nil || !strings.Contains(out, "do not match the blob's name") {
		t.Errorf("copy of a damaged directory store: %v\n%s", err, out)
	}
	if keys := fmt.Sprint(bucketList(t, s, "damaged/index.json")); keys != "[]" {
		t.Errorf("a failed copy wrote the index: %s", keys)
	}
	if keys := fmt.Sprint(bucketList(t, s, "damaged/blobs/sha256/"+ents[len(ents)-1].Name())); keys != "[]" {
		t.Errorf("the damaged blob reached the bucket: %s", keys)
	}

	// A blob swapped in the bucket (same size, other bytes): the copy out
	// stops naming it, and leaves no directory.
	var victim string
	for _, o := range bucketList(t, s, "copied/blobs/sha256/") {
		victim, _, _ = strings.Cut(o, " ")
		break
	}
	ctx := context.Background()
	g, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String(victim)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(g.Body)
	g.Body.Close()
	data[len(data)/2] ^= 1
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(victim), Body: strings.NewReader(string(data))}); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(work, "bad")
	out, err = harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, bad)
	if err == nil || !strings.Contains(out, "do not match the blob's name") {
		t.Errorf("copy of a bucket with a swapped blob: %v\n%s", err, out)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a failed copy left %s: %v", bad, err)
	}
}

// storeFiles lists a store directory's index and blobs with their sha256.
func storeFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, rel := range []string{"index.json"} {
		out = append(out, rel+" "+fileSum(t, filepath.Join(root, rel)))
	}
	ents, err := os.ReadDir(filepath.Join(root, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		out = append(out, e.Name()+" "+fileSum(t, filepath.Join(root, "blobs", "sha256", e.Name())))
	}
	return out
}

func fileSum(t *testing.T, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// bucketList lists the keys under prefix in the test's bucket, with their
// ETags.
func bucketList(t *testing.T, s *harness.S3, prefix string) []string {
	t.Helper()
	out, err := s.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key)+" "+aws.ToString(o.ETag))
	}
	return keys
}

// TestObjectStoreImport: 'airgap import --store s3://…' against versitygw:
// an import and a second one land (a copy out of the bucket is a
// consistent store holding both); a live lease is refused naming its
// holder and an expired one taken over; a damaged bundle and a refused
// import leave the bucket exactly as it was (every key and ETag); two
// imports at once: each lands or is refused naming the lease holder or
// the changed index, and the index stays valid.
func TestObjectStoreImport(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	site := filepath.Join(work, "site.bundle")
	addr := s.Addr("site")
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, site)
	if !strings.Contains(out, "s3://") || strings.Contains(out, "airgap-import-") {
		t.Errorf("import output names the scratch directory, not the store:\n%s", out)
	}
	// A new store over someone else's objects: refused, nothing written.
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("other/reports/q3.csv"), Body: strings.NewReader("a,b\n")}); err != nil {
		t.Fatal(err)
	}
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", s.Addr("other"), site)
	if err == nil || !strings.Contains(out, `holds an object that is not the store's: "reports/q3.csv"`) || !strings.Contains(out, "not changed") {
		t.Errorf("import into a prefix with foreign objects: %v\n%s", err, out)
	}
	if keys := bucketList(t, s, "other/"); len(keys) != 1 {
		t.Errorf("a refused import wrote into the prefix: %v", keys)
	}
	out, err = harness.CmdRun(t, work, s.Env(), harness.Bin, "store", "copy", s.Addr("other"), filepath.Join(t.TempDir(), "x"))
	if err == nil || !strings.Contains(out, "no index") {
		t.Errorf("copy out of a prefix with no store: %v\n%s", err, out)
	}
	two := extra("two")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, two)
	copyOut := func(name string) string {
		dir := filepath.Join(t.TempDir(), name)
		harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
		harness.CheckConsistent(t, dir)
		return dir
	}
	c1 := copyOut("c1")
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", c1)
	// The inventory read from the bucket is the copy's, but for the name.
	if direct := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--store", addr); strings.Replace(direct, addr, c1, 1) != inv {
		t.Errorf("inventory --store s3://… differs from the copy's:\n%s\n----\n%s", direct, inv)
	}
	want := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", root)
	if !strings.Contains(inv, "example/two") {
		t.Errorf("inventory of the bucket's store lacks the second import:\n%s", inv)
	}
	for _, line := range strings.Split(want, "\n") {
		if strings.Contains(line, "registry.terraform.io/") && !strings.Contains(inv, strings.TrimSpace(line)) {
			t.Errorf("inventory of the bucket's store lacks %q:\n%s", line, inv)
		}
	}
	// The site bundle's blobs are the directory import's, byte for byte.
	dirBlobs := storeFiles(t, root)[1:]
	got := strings.Join(storeFiles(t, c1), "\n")
	for _, b := range dirBlobs {
		if !strings.Contains(got, b) {
			t.Errorf("blob %s of the directory import is not in the bucket's store", b)
		}
	}

	ctx := context.Background()
	putLease := func(holder string, expires time.Time) {
		t.Helper()
		body := fmt.Sprintf(`{"holder":%q,"started":"2026-01-01T00:00:00Z","expires":%q}`, holder, expires.UTC().Format(time.RFC3339))
		if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	refusedUnchanged := func(bundle string, want ...string) {
		t.Helper()
		before := bucketList(t, s, "site/")
		out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, bundle)
		if err == nil {
			t.Errorf("import of %s succeeded:\n%s", bundle, out)
		}
		for _, w := range append(want, "not changed") {
			if !strings.Contains(out, w) {
				t.Errorf("import of %s: want %q in:\n%s", filepath.Base(bundle), w, out)
			}
		}
		if after := bucketList(t, s, "site/"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused import changed the bucket:\nbefore %v\nafter  %v", before, after)
		}
	}
	three := extra("three")
	putLease("ops@importer-7 (pid 42)", time.Now().Add(5*time.Minute))
	refusedUnchanged(three, "ops@importer-7 (pid 42) holds its lease")
	putLease("ops@importer-7 (pid 42)", time.Now().Add(-time.Minute))
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, three)
	if keys := fmt.Sprint(bucketList(t, s, "site/lease.json")); keys != "[]" {
		t.Errorf("the lease is left after an import: %s", keys)
	}

	// A damaged bundle: refused, the bucket as it was.
	data, err := os.ReadFile(extra("four"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	damaged := filepath.Join(work, "damaged.bundle")
	os.WriteFile(damaged, data, 0o644)
	refusedUnchanged(damaged)

	// Two imports at once.
	b5, b6 := extra("five"), extra("six")
	var wg sync.WaitGroup
	outs, errs := make([]string, 2), make([]error, 2)
	for i, b := range []string{b5, b6} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, b)
		}()
	}
	wg.Wait()
	won := 0
	for i := range errs {
		switch {
		case errs[i] == nil:
			won++
		case strings.Contains(outs[i], "holds its lease") && strings.Contains(outs[i], "airgap import of"):
		case strings.Contains(outs[i], "another writer replaced the index"):
		default:
			t.Errorf("concurrent import %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	if won == 0 {
		t.Errorf("neither concurrent import landed:\n%s\n%s", outs[0], outs[1])
	}
	c2 := copyOut("c2")
	inv = harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", c2)
	for i, name := range []string{"example/five", "example/six"} {
		if (errs[i] == nil) != strings.Contains(inv, name) {
			t.Errorf("import %d (%s) landed=%v, but the inventory says:\n%s", i, name, errs[i] == nil, inv)
		}
	}
}

// randomBundles exports one bundle of hashicorp/random per version from
// the stand-in world, signed by a new site key; it returns the work
// directory, the site's public key and the bundles.
func randomBundles(t *testing.T, versions ...string) (work, pub string, bundles []string) {
	t.Helper()
	return randomBundlesFrom(t, registrytest.World(t), versions...)
}

// randomBundlesFrom is randomBundles from the stand-in world in.
func randomBundlesFrom(t *testing.T, in *registrytest.Internet, versions ...string) (work, pub string, bundles []string) {
	t.Helper()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"))
	work = t.TempDir()
	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--no-passphrase")
	for _, v := range versions {
		mf := filepath.Join(work, "airgap-"+v+".hcl")
		os.WriteFile(mf, []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \""+v+"\"\n}\n"), 0o644)
		b := filepath.Join(work, "random-"+v+".bundle")
		harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
		bundles = append(bundles, b)
	}
	return work, keys + ".pub.asc", bundles
}

// terraformInit runs real terraform init of a project that requires
// hashicorp/random at version through the appliance at base, offline.
func terraformInit(t *testing.T, base, caFile, version string) (string, error) {
	t.Helper()
	return terraformInitWith(t, harness.TerraformBin(t), base, caFile, version)
}

// terraformInitWith is terraformInit with the terraform binary tf.
func terraformInitWith(t *testing.T, tf, base, caFile, version string) (string, error) {
	t.Helper()
	_, out, err := terraformInitIn(t, tf, base, caFile, version)
	return out, err
}

// randomProject is the project terraformInitIn initializes.
func randomProject(version string) string {
	return "terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"" + version + "\"\n    }\n  }\n}\n"
}

// terraformInitIn is terraformInitWith, also saying the project's
// directory (its .terraform.lock.hcl).
func terraformInitIn(t *testing.T, tf, base, caFile, version string) (string, string, error) {
	t.Helper()
	work := t.TempDir()
	cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"))
	rc := filepath.Join(work, "airgap.tfrc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	dir := filepath.Join(work, "p")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(randomProject(version)), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	out, err := harness.CmdRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
	return dir, out, err
}

// startS3Replica starts 'airgap serve --store s3://…' and waits for it;
// its CA is the replicas' shared local CA, as 'airgap ca --store s3://…'
// prints it (the first replica creates it).
func startS3Replica(t *testing.T, s *harness.S3, addr string, extra ...string) (*harness.Served, *http.Client) {
	t.Helper()
	srv := harness.Serve(t, harness.ServeOptions{Store: addr, Env: s.Env(), Args: append([]string{"--metrics-listen", "off"}, extra...)})
	srv.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if pemData, err := harness.CmdRun(t, t.TempDir(), s.Env(), harness.Bin, "ca", "--store", addr); err == nil {
			os.WriteFile(srv.CAFile, []byte(pemData[strings.Index(pemData, "-----BEGIN"):]), 0o644)
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(pemData[strings.Index(pemData, "-----BEGIN"):]))
			cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			for {
				if code, _, err := harness.Fetch(cl, srv.Base+"healthz"); err == nil && code == 200 {
					return srv, cl
				}
				select {
				case <-srv.Done:
					t.Fatalf("serve over %s exited:\n%s", addr, srv.Logs.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("serve over %s did not come up with the shared CA:\n%s", addr, srv.Logs.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shared CA for %s:\n%s", addr, srv.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestObjectStoreServe: two 'airgap serve' replicas over one bucket (no
// shared file system): real terraform init installs through each; a new
// import is served by both within a few seconds (each polls the index's
// ETag); an object swapped in the bucket (same size, other bytes) is cut
// off short of its Content-Length, logged and counted, never served whole.
func TestObjectStoreServe(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2", "3.6.0")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	mport := harness.FreePort(t)
	r1, cl1 := startS3Replica(t, s, addr, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport))
	r2, cl2 := startS3Replica(t, s, addr)
	// Mismatches are a metric of their own on the replica that saw one.
	mismatches := func() string {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "airgap_store_object_mismatches_total ") {
				return l
			}
		}
		return "no airgap_store_object_mismatches_total in /metrics"
	}
	if got := mismatches(); got != "airgap_store_object_mismatches_total 0" {
		t.Errorf("before any mismatch: %s", got)
	}
	for _, r := range []*harness.Served{r1, r2} {
		if out, err := terraformInit(t, r.Base, r.CAFile, "3.6.2"); err != nil || !strings.Contains(out, "3.6.2") {
			t.Errorf("terraform init through the replica on :%d: %v\n%s", r.Port, err, out)
		}
	}

	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[1])
	versions := func(cl *http.Client, r *harness.Served) string {
		_, body, _ := harness.Fetch(cl, r.Base+"origin/registry.terraform.io/v1/providers/hashicorp/random/versions")
		return string(body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(versions(cl1, r1), "3.6.0") || !strings.Contains(versions(cl2, r2), "3.6.0") {
		if time.Now().After(deadline) {
			t.Fatalf("the second import is not served by both replicas within 10 s:\n%s\n%s", versions(cl1, r1), versions(cl2, r2))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := terraformInitWith(t, harness.TerraformNewBin(t), r2.Base, r2.CAFile, "3.6.0"); err != nil || !strings.Contains(out, "3.6.0") {
		t.Errorf("terraform %s init of the second import's version: %v\n%s", harness.TerraformNewVersion, err, out)
	}

	// Swap the 3.6.2 package's bytes in the bucket.
	dl := r1.Base + "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	_, body, err := harness.Fetch(cl1, dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
		Shasum      string `json:"shasum"`
	}
	if err := json.Unmarshal(body, &d); err != nil || d.Shasum == "" {
		t.Fatalf("download answer %s: %v", body, err)
	}
	key := "site/blobs/sha256/" + d.Shasum
	ctx := context.Background()
	g, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(g.Body)
	g.Body.Close()
	// A range request (a resumed download) is answered from the blob
	// fetched, verified, into the replica's own directory.
	pkgURL := harness.ResolveRef(dl, d.DownloadURL)
	rangeGet := func(cl *http.Client, r *harness.Served) (int, []byte) {
		u, _ := url.Parse(pkgURL)
		u.Host = fmt.Sprintf("localhost:%d", r.Port)
		req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
		req.Header.Set("Range", "bytes=0-9")
		resp, err := cl.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := rangeGet(cl2, r2); code != http.StatusPartialContent || string(b) != string(data[:10]) {
		t.Errorf("range request through a replica: %d %q, want 206 %q", code, b, data[:10])
	}
	data[len(data)-1] ^= 1 // the last byte: caught only at the end
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(key), Body: strings.NewReader(string(data))}); err != nil {
		t.Fatal(err)
	}
	resp, err := cl1.Get(harness.ResolveRef(dl, d.DownloadURL))
	if err != nil {
		t.Fatal(err)
	}
	got, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr == nil || len(got) >= len(data) {
		t.Errorf("a swapped object was served: status %d, %d of %d bytes, read error %v", resp.StatusCode, len(got), len(data), rerr)
	}
	// Nor is a range of it: the fetch into the directory fails verified.
	if code, b := rangeGet(cl1, r1); code == http.StatusPartialContent || code == http.StatusOK {
		t.Errorf("a range of a swapped object was served: %d %q", code, b)
	}
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(r1.Logs.String(), "does not match its name") || !strings.Contains(r1.Logs.String(), "mismatches=1") {
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not log the mismatch:\n%s", r1.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The download and the range request's fetch each read it once.
	if got := mismatches(); got != "airgap_store_object_mismatches_total 2" {
		t.Errorf("after a swapped object was asked for twice: %s, want 2\n%s", got, r1.Logs.String())
	}
}

// TestObjectStoreMalformedAddress: a malformed s3:// address is refused
// with its syntax (exit 2) before the verb does anything, rather than
// taken for a directory called "s3:". (Every verb that takes a store
// takes an s3:// one: TestEveryStoreVerbTakesABucket.)
func TestObjectStoreMalformedAddress(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	stdout, stderr, code := harness.RunSplit(t, work, nil, "import", "--keyring", "k.asc", "--store", "s3://Bucket/x", "b.bundle")
	out := stdout + stderr
	if code != 2 || !strings.Contains(out, "lowercase") || !strings.Contains(out, "s3://BUCKET/PREFIX?endpoint=") {
		t.Errorf("import to a malformed address: exit %d:\n%s", code, out)
	}
	if ents, _ := os.ReadDir(work); len(ents) > 0 {
		t.Errorf("a refused verb wrote into its working directory: %v", ents)
	}
}

// TestObjectStoreIndexConditional: the index is replaced only over the
// ETag an import read when it began. An import staged before another
// import landed is refused at its index write (If-Match on the stale
// ETag), as is one staged on an empty prefix that another import
// created meanwhile (If-None-Match: *); the index stays the winner's.
// Serial: it sets the AWS environment of this process.
func TestObjectStoreIndexConditional(t *testing.T) {
	s := harness.StartS3(t)
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	ctx := context.Background()
	client := func(addr string) *objstore.Client {
		a, err := objstore.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		c, err := objstore.Open(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct{ prefix, first string }{{"existing", filepath.Join(work, "site.bundle")}, {"new", ""}} {
		addr := s.Addr(tc.prefix)
		if tc.first != "" {
			harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, tc.first)
		}
		c := client(addr)
		stage := t.TempDir()
		staged, err := objstore.Stage(ctx, c, stage)
		if err != nil || (staged.ETag == "") != (tc.first == "") {
			t.Fatalf("%s: Stage: %+v, %v", tc.prefix, staged, err)
		}
		// The staged "import": the index as read, unchanged but for a mark.
		data, _ := os.ReadFile(filepath.Join(stage, "index.json"))
		os.WriteFile(filepath.Join(stage, "index.json"), append(data, ' '), 0o644)
		harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, extra("winner"+tc.prefix))
		won, err := c.Head(ctx, "index.json")
		if err != nil {
			t.Fatal(err)
		}
		_, err = objstore.Publish(ctx, c, stage, staged, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "another writer replaced the index") {
			t.Errorf("%s: publishing over a stale index: %v", tc.prefix, err)
		}
		if now, err := c.Head(ctx, "index.json"); err != nil || now.ETag != won.ETag {
			t.Errorf("%s: the index changed from the winner's %s to %s (%v)", tc.prefix, won.ETag, now.ETag, err)
		}
	}
}

// TestObjectStoreThrottled: a server that answers every request with 503
// SlowDown is retried a bounded number of times, then refused with what
// it means, in bounded time.
func TestObjectStoreThrottled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	requests := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	start := time.Now()
	env := []string{"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	out, err := harness.CmdRun(t, t.TempDir(), env, harness.Bin, "store", "check", "s3://bkt/site?use_path_style=true&endpoint=http://"+ln.Addr().String())
	took := time.Since(start)
	if err == nil || !strings.Contains(out, "throttling") || !strings.Contains(out, "hint: ") {
		t.Errorf("store check of a throttling server: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	// The probe's write, 5 attempts, then its clean-up delete, 5 more.
	if requests < 2 || requests > 10 || took > time.Minute {
		t.Errorf("%d requests in %s: want 2 to 10 (bounded retries), within a minute", requests, took)
	}
	t.Logf("%d requests in %s", requests, took.Round(time.Millisecond))
}

// TestObjectStoreImportKilled: an import SIGKILLed while it holds the
// lease leaves the index as it was and at most blobs no index refers to;
// once its lease has expired (here: rewritten as expired), the next
// import completes and the store is consistent.
func TestObjectStoreImportKilled(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	before := bucketList(t, s, "site/index.json")
	b := extra("killed")
	for attempt := 0; ; attempt++ {
		cmd := exec.Command(harness.Bin, "import", "--keyring", keyring, "--store", addr, b)
		cmd.Env = append(harness.BaseEnv(), s.Env()...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); len(bucketList(t, s, "site/lease.json")) == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if fmt.Sprint(bucketList(t, s, "site/index.json")) == fmt.Sprint(before) {
			t.Logf("killed before its commit at attempt %d", attempt)
			break // killed before its commit, as wanted
		}
		if attempt == 5 {
			t.Fatal("every import finished before it could be killed")
		}
		b = extra(fmt.Sprint("killed", attempt)) // it landed: try again with another bundle
		before = bucketList(t, s, "site/index.json")
	}
	for _, o := range bucketList(t, s, "site/") {
		k, _, _ := strings.Cut(o, " ")
		if k != "site/index.json" && k != "site/lease.json" && !strings.HasPrefix(k, "site/blobs/sha256/") {
			t.Errorf("a killed import left %s", k)
		}
	}
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, b)
	if err == nil || !strings.Contains(out, "holds its lease") {
		t.Errorf("import while the killed one's lease lives: %v\n%s", err, out)
	}
	body := fmt.Sprintf(`{"holder":"killed","started":"2026-01-01T00:00:00Z","expires":%q}`, time.Now().Add(-time.Second).UTC().Format(time.RFC3339))
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, b)
	dir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
	harness.CheckConsistent(t, dir)
}

// TestObjectStoreHAProxy: three replicas over one bucket, no shared file
// system, behind HAProxy: they share one local CA (the bucket's), so real
// terraform 1.11, terraform 1.15.9 and tofu install through the one
// front, and terraform 1.11 writes the very lock file it writes against
// the stand-in internet. Under steady load (clients downloading in a
// loop), one replica is SIGKILLed: no request that starts once HAProxy
// has marked it down fails, every body is whole, and the download counts
// are exact but for the killed replica's last unflushed batch.
func TestObjectStoreHAProxy(t *testing.T) {
	t.Parallel()
	haproxy := harness.HAProxyBin(t)
	s := harness.StartS3(t)
	in := registrytest.World(t)
	work, pub, bundles := randomBundlesFrom(t, in, "3.6.2")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	// The reference: terraform 1.11 against the stand-in internet.
	ref := t.TempDir()
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(randomProject("3.6.2")), 0o644)
	harness.MustRun(t, ref, append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc")), harness.TerraformBin(t), "init", "-input=false", "-no-color")
	refLock, err := os.ReadFile(filepath.Join(ref, ".terraform.lock.hcl"))
	if err != nil || !strings.Contains(string(refLock), "zh:") {
		t.Fatalf("the reference lock file: %v\n%s", err, refLock)
	}
	var reps []*harness.Served
	for range 3 {
		r, _ := startS3Replica(t, s, addr, "--usage-flush", "1s")
		reps = append(reps, r)
	}
	for _, r := range reps[1:] {
		a, _ := os.ReadFile(reps[0].CAFile)
		b, _ := os.ReadFile(r.CAFile)
		if string(a) != string(b) {
			t.Fatal("the replicas do not share one CA")
		}
	}
	front, hpLogs := harness.StartHAProxy(t, haproxy, reps[0].CAFile, reps)
	base := front + "/"
	time.Sleep(time.Second) // HAProxy's checks mark them up (rise 2, inter 200ms)
	for i, tf := range []string{harness.TerraformBin(t), harness.TerraformNewBin(t)} {
		dir, out, err := terraformInitIn(t, tf, base, reps[0].CAFile, "3.6.2")
		if err != nil || !strings.Contains(out, "3.6.2") {
			t.Errorf("%s init through HAProxy: %v\n%s", tf, err, out)
		}
		if i == 0 {
			if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); string(got) != string(refLock) {
				t.Errorf("terraform 1.11's lock file through the replicas differs from the one against the internet:\n%s\n----\n%s", got, refLock)
			}
		}
	}
	// OpenTofu: the same provider by its full address.
	tofuDir := filepath.Join(t.TempDir(), "tofu")
	os.MkdirAll(tofuDir, 0o755)
	rc := filepath.Join(t.TempDir(), "airgap.tofurc")
	cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + reps[0].CAFile}, harness.Bin, "client-config", "--url", front, "--tool", "tofu")
	os.WriteFile(rc, []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(tofuDir, "main.tf"), []byte("terraform {\n  required_providers {\n    random = {\n      source  = \"registry.terraform.io/hashicorp/random\"\n      version = \"3.6.2\"\n    }\n  }\n}\n"), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + reps[0].CAFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	if out, err := harness.CmdRun(t, tofuDir, offline, harness.TofuBin(t), "init", "-input=false", "-no-color"); err != nil || !strings.Contains(out, "3.6.2") {
		t.Errorf("tofu init through HAProxy: %v\n%s", err, out)
	}

	steadyLoadKill(t, s, addr, work, front, reps, hpLogs)
	for i := range 2 {
		if out, err := terraformInit(t, base, reps[0].CAFile, "3.6.2"); err != nil {
			t.Errorf("terraform init %d through HAProxy with a replica down: %v\n%s", i, err, out)
		}
	}
}

// bucketDownloads is the download count of hashicorp/random 3.6.2 that
// 'inventory --usage' reads from the bucket.
func bucketDownloads(t *testing.T, s *harness.S3, addr, work string) int64 {
	t.Helper()
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--usage", "--json", "--store", addr)
	var rep struct {
		Versions []struct {
			Address   string
			Version   string
			Downloads int64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	for _, v := range rep.Versions {
		if v.Version == "3.6.2" {
			return v.Downloads
		}
	}
	return 0
}

// steadyLoadKill runs four clients downloading the linux_amd64 package
// through HAProxy in a loop for 12 s (a pause of 20 ms after each) (each a connection pool of its own,
// as separate terraform runs would be), SIGKILLs the second replica 4 s
// in, and checks: no request that started once HAProxy logged it DOWN
// failed; every body answered 200 is the package; and the count in the
// bucket grew by the downloads served, less at most those the killed
// replica served within its last flush interval (its unflushed batch).
func steadyLoadKill(t *testing.T, s *harness.S3, addr, work, front string, reps []*harness.Served, hpLogs *harness.LockedBuffer) {
	t.Helper()
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(reps[0].CAFile)
	pool.AppendCertsFromPEM(caPEM)
	newClient := func() *http.Client {
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	const dl = "/origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	_, body, err := harness.Fetch(newClient(), front+dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
		Shasum      string `json:"shasum"`
	}
	json.Unmarshal(body, &d)
	pkg := harness.ResolveRef(front+dl, d.DownloadURL)
	time.Sleep(2500 * time.Millisecond) // the installs' counts flushed (every 1 s)
	before := bucketDownloads(t, s, addr, work)

	type result struct {
		start, end time.Time
		err        error
	}
	var mu sync.Mutex
	var results []result
	var down time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // when HAProxy marks r2 down
		defer wg.Done()
		for {
			if strings.Contains(hpLogs.String(), "replicas/r2 is DOWN") {
				mu.Lock()
				down = time.Now()
				mu.Unlock()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := result{start: time.Now()}
				resp, err := cl.Get(pkg)
				if err == nil {
					h := sha256.New()
					_, err = io.Copy(h, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
					if err == nil && hex.EncodeToString(h.Sum(nil)) != d.Shasum {
						err = fmt.Errorf("a body that is not the package")
					}
				}
				r.end, r.err = time.Now(), err
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // bounded: about 40 requests a second per client
			}
		}()
	}
	time.Sleep(4 * time.Second)
	killed := time.Now()
	reps[1].Proc.Kill()
	<-reps[1].Done
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	if down.IsZero() {
		t.Fatalf("HAProxy did not mark the killed replica down:\n%s", hpLogs.String())
	}
	ok, failedBefore, lastFlush := 0, 0, 0
	for _, r := range results {
		switch {
		case r.err == nil:
			ok++
			// What the killed replica may have served since its last
			// flush: any download that ended within 1 s (the flush
			// interval) before the kill, or after it.
			if r.end.After(killed.Add(-1200*time.Millisecond)) && r.end.Before(down.Add(100*time.Millisecond)) {
				lastFlush++
			}
		case r.start.After(down):
			t.Errorf("a request started %s after HAProxy marked the replica down failed: %v", r.start.Sub(down).Round(time.Millisecond), r.err)
		default:
			failedBefore++
		}
	}
	t.Logf("%d downloads in 12 s by 4 clients; %d failed between the kill and HAProxy marking it down (%s later)", ok, failedBefore, down.Sub(killed).Round(time.Millisecond))
	if ok < 40 {
		t.Errorf("only %d downloads under load", ok)
	}
	var got int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		got = bucketDownloads(t, s, addr, work) - before
		if got == int64(ok) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("counted %d of %d (the killed replica's unflushed batch: %d)", got, ok, int64(ok)-got)
	if got > int64(ok) || got < int64(ok-lastFlush) {
		t.Errorf("downloads counted: %d, want %d less at most %d the killed replica had not flushed", got, ok, lastFlush)
	}
}

// TestObjectStoreSharedURLKeys: three replicas over one bucket with an
// access file share one key for signed download URLs (the bucket's,
// written by the first): a URL signed by each replica downloads from
// every replica; a forged one is refused.
func TestObjectStoreSharedURLKeys(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	accessFile := filepath.Join(work, "access.hcl")
	ci := harness.CreateToken(t, accessFile, "ci", "**")
	var reps []*harness.Served
	var cl *http.Client
	for range 3 {
		r, c := startS3Replica(t, s, addr, "--access", accessFile)
		reps, cl = append(reps, r), c
	}
	const dl = "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	for _, from := range reps {
		resp, body := harness.HTTPGet(t, cl, from.Base+dl, "Authorization", "Bearer "+ci)
		var d struct {
			DownloadURL string `json:"download_url"`
		}
		json.Unmarshal(body, &d)
		if resp.StatusCode != 200 || !strings.Contains(d.DownloadURL, "sig=") {
			t.Fatalf("download answer from :%d: %d %s", from.Port, resp.StatusCode, body)
		}
		u := harness.ResolveRef(from.Base+dl, d.DownloadURL)
		for _, to := range reps {
			pu, _ := url.Parse(u)
			pu.Host = fmt.Sprintf("localhost:%d", to.Port)
			if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 200 {
				t.Errorf("a URL signed by :%d, fetched from :%d: %s", from.Port, to.Port, resp.Status)
			}
			q := pu.Query()
			q.Set("sig", q.Get("sig")+"0")
			pu.RawQuery = q.Encode()
			if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 403 {
				t.Errorf("a forged URL fetched from :%d: %s", to.Port, resp.Status)
			}
		}
	}
}

// TestObjectStoreGC: gc on a bucket deletes only the blobs no index
// refers to (here one a killed import would leave), records the run in
// the index's maintenance history, and leaves a consistent store; --dry-run
// deletes nothing; a gc while an import holds the lease is refused naming
// it, the bucket unchanged.
func TestObjectStoreGC(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, _ := harness.OpsStore(t)
	work := filepath.Dir(root)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	orphan := strings.Repeat("ab", 32)
	ctx := context.Background()
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/blobs/sha256/" + orphan), Body: strings.NewReader("left by a killed import")}); err != nil {
		t.Fatal(err)
	}
	before := bucketList(t, s, "site/")
	out := harness.MustRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr, "--dry-run")
	if !strings.Contains(out, orphan[:12]) {
		t.Errorf("gc --dry-run does not name the orphan:\n%s", out)
	}
	if after := bucketList(t, s, "site/"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("gc --dry-run changed the bucket")
	}
	body := fmt.Sprintf(`{"holder":"airgap import of next.bundle on importer-3 (pid 7)","started":"2026-01-01T00:00:00Z","expires":%q}`, time.Now().Add(5*time.Minute).UTC().Format(time.RFC3339))
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	before = bucketList(t, s, "site/")
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr)
	if err == nil || !strings.Contains(out, "next.bundle on importer-3 (pid 7) holds its lease") || !strings.Contains(out, "not changed") {
		t.Errorf("gc while an import holds the lease: %v\n%s", err, out)
	}
	if after := bucketList(t, s, "site/"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused gc changed the bucket")
	}
	s.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json")})
	out = harness.MustRun(t, work, s.Env(), harness.Bin, "gc", "--store", addr, "--json")
	if !strings.Contains(out, orphan) || strings.Count(out, `"blob"`) != 1 {
		t.Errorf("gc removed other than the orphan:\n%s", out)
	}
	if keys := fmt.Sprint(bucketList(t, s, "site/blobs/sha256/"+orphan)); keys != "[]" {
		t.Errorf("the orphan is still there: %s", keys)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
	harness.CheckConsistent(t, dir)
	ix, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	if !strings.Contains(string(ix), `"action":"gc"`) && !strings.Contains(string(ix), `"action": "gc"`) {
		t.Errorf("the gc is not in the index's maintenance history")
	}
}

// cuttingProxy forwards TCP to target until limit bytes in all have gone
// from the clients to the server; then it cuts every connection and cuts
// each new one at once, like a link to the object store that went down.
func cuttingProxy(t *testing.T, target string, limit int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent int64
	var conns []net.Conn
	cut := false
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if cut {
				mu.Unlock()
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				mu.Unlock()
				c.Close()
				continue
			}
			conns = append(conns, c, s)
			mu.Unlock()
			go io.Copy(c, s)
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					mu.Lock()
					sent += int64(n)
					if sent > limit && !cut {
						cut = true
						for _, x := range conns {
							x.Close()
						}
					}
					stop := cut
					mu.Unlock()
					if stop || err != nil {
						c.Close()
						s.Close()
						return
					}
					if _, err := s.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestObjectStoreImportCut: the connection to the server cut for good in
// the middle of an import (after 64 KiB sent): the import fails saying so
// (after bounded retries) and the index is as it was; the same import
// over a working connection then completes.
func TestObjectStoreImportCut(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, extra := harness.OpsStore(t)
	work := filepath.Dir(root)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, extra("first"))
	before := bucketList(t, s, "site/index.json")
	proxy := cuttingProxy(t, strings.TrimPrefix(s.Endpoint, "http://"), 64<<10)
	viaProxy := "s3://" + s.Bucket + "/site?use_path_style=true&endpoint=http://" + proxy
	site := filepath.Join(work, "site.bundle")
	start := time.Now()
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", viaProxy, site)
	if err == nil || !strings.Contains(out, "cannot reach the server") || !strings.Contains(out, "index was not changed") {
		t.Errorf("import over a connection cut mid-way: %v\n%s", err, out)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the cut import took %s to give up", took)
	}
	if after := bucketList(t, s, "site/index.json"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the index changed: %v -> %v", before, after)
	}
	// Its lease is left (it could not delete it); expired, the next import takes it over.
	body := fmt.Sprintf(`{"holder":"cut","started":"2026-01-01T00:00:00Z","expires":%q}`, time.Now().Add(-time.Second).UTC().Format(time.RFC3339))
	s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)})
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, site)
	dir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, dir)
	harness.CheckConsistent(t, dir)
}

// TestObjectStorePrune: prune --keep 1 on a bucket answers what the same
// prune answers on a directory store with the same imports (the versions,
// the blobs and their bytes, what each was); --dry-run changes nothing;
// the prune removes exactly those blobs, the store copied out is
// consistent and its inventory lacks the pruned version.
func TestObjectStorePrune(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.0", "3.6.2")
	addr, dir := s.Addr("site"), filepath.Join(work, "store")
	for _, b := range bundles {
		harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, b)
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", dir, b)
	}
	type result struct {
		Removed []string `json:"removed"`
		Blobs   int      `json:"blobs_freed"`
		Bytes   int64    `json:"bytes_freed"`
		Deleted []struct {
			Blob, What string
			Bytes      int64
		} `json:"blobs"`
	}
	prune := func(store string, env []string, dry bool) result {
		args := []string{"prune", "--store", store, "--keep", "1", "--json"}
		if dry {
			args = append(args, "--dry-run")
		}
		var r result
		out := harness.MustRun(t, work, env, harness.Bin, args...)
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return r
	}
	before := bucketList(t, s, "site/")
	dry := prune(addr, s.Env(), true)
	if after := bucketList(t, s, "site/"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("prune --dry-run changed the bucket")
	}
	got, want := prune(addr, s.Env(), false), prune(dir, nil, false)
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(dry) != fmt.Sprint(want) || len(want.Removed) != 1 || !strings.Contains(want.Removed[0], "3.6.0") {
		t.Errorf("prune on the bucket:\n got %+v\n dry %+v\nwant %+v (the directory's)", got, dry, want)
	}
	for _, d := range got.Deleted {
		if keys := fmt.Sprint(bucketList(t, s, "site/blobs/sha256/"+strings.TrimPrefix(d.Blob, "sha256:"))); keys != "[]" {
			t.Errorf("pruned blob %s is still in the bucket", d.Blob)
		}
	}
	copyDir := filepath.Join(t.TempDir(), "copy")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, copyDir)
	harness.CheckConsistent(t, copyDir)
	if inv := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--store", addr); strings.Contains(inv, "3.6.0 ") || !strings.Contains(inv, "3.6.2") {
		t.Errorf("inventory after the prune:\n%s", inv)
	}
}

// TestObjectStoreReaders: docs, client-config and audit read a store in a
// bucket as they read the same store in a directory: the same output, but
// for the store's name.
func TestObjectStoreReaders(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	addr, dir := s.Addr("site"), filepath.Join(work, "store")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", dir, bundles[0])
	auditLog := filepath.Join(work, "audit.jsonl")
	os.WriteFile(auditLog, nil, 0o600)
	for _, args := range [][]string{
		// (The stand-in world's random has no docs: both say so, from the
		// index's record of why.)
		{"docs", "hashicorp/random@3.6.2"},
		{"docs", "hashicorp/nothing"},
		{"client-config", "--url", "https://127.0.0.1:9"},
		{"audit", "--log", auditLog},
	} {
		fromDir, errDir := harness.CmdRun(t, work, s.Env(), harness.Bin, append([]string{args[0], "--store", dir}, args[1:]...)...)
		fromBucket, errBucket := harness.CmdRun(t, work, s.Env(), harness.Bin, append([]string{args[0], "--store", addr}, args[1:]...)...)
		if strings.ReplaceAll(fromBucket, addr, dir) != fromDir || len(fromDir) < 20 || (errDir == nil) != (errBucket == nil) {
			t.Errorf("airgap %s from the bucket:\n%s\nfrom the directory:\n%s", strings.Join(args, " "), fromBucket, fromDir)
		}
	}
}

// TestObjectStoreUsage: download counts from three replicas over one
// bucket, each adding its batches to the bucket's counts by conditional
// writes, are exact after concurrent downloads through all three (no lost
// update), as 'inventory --usage --store s3://…' reports them.
func TestObjectStoreUsage(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	var reps []*harness.Served
	var cls []*http.Client
	for range 3 {
		r, c := startS3Replica(t, s, addr, "--usage-flush", "1s")
		reps, cls = append(reps, r), append(cls, c)
	}
	const dl = "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	_, body, err := harness.Fetch(cls[0], reps[0].Base+dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	json.Unmarshal(body, &d)
	pkg := harness.ResolveRef(reps[0].Base+dl, d.DownloadURL)
	const each = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i, r := range reps {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, _ := url.Parse(pkg)
				u.Host = fmt.Sprintf("localhost:%d", r.Port)
				if code, _, err := harness.Fetch(cls[i], u.String()); err != nil || code != 200 {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if failed > 0 {
		t.Fatalf("%d downloads failed", failed)
	}
	want := int64(each * len(reps))
	var got int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--usage", "--json", "--store", addr)
		var rep struct {
			Store    string
			Versions []struct {
				Address   string
				Version   string
				Downloads int64
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		got = 0
		for _, v := range rep.Versions {
			if v.Version == "3.6.2" {
				got = v.Downloads
			}
		}
		if got == want && rep.Store == addr {
			break
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("downloads counted: %d, want %d (store %q)\n%s", got, want, rep.Store, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestObjectStoreKeys: 'keys retire --store s3://…' records the
// retirement in the bucket's index (the inventory shows it) and a second
// run changes nothing; retiring with an import holding the lease is
// refused naming it.
func TestObjectStoreKeys(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	inv := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--json", "--store", addr)
	var iv struct {
		PublisherKeys []struct {
			Namespace string
			Keys      []struct{ Fingerprint string }
		} `json:"publisher_keys"`
	}
	if err := json.Unmarshal([]byte(inv), &iv); err != nil || len(iv.PublisherKeys) == 0 || len(iv.PublisherKeys[0].Keys) == 0 {
		t.Fatalf("no publisher keys in the inventory (%v):\n%s", err, inv)
	}
	ns, fp := iv.PublisherKeys[0].Namespace, iv.PublisherKeys[0].Keys[0].Fingerprint
	before := bucketList(t, s, "site/index.json")
	body := fmt.Sprintf(`{"holder":"airgap import of x.bundle on importer-3 (pid 7)","started":"2026-01-01T00:00:00Z","expires":%q}`, time.Now().Add(5*time.Minute).UTC().Format(time.RFC3339))
	s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json"), Body: strings.NewReader(body)})
	out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "keys", "retire", "--store", addr, "--reason", "test", ns, fp)
	if err == nil || !strings.Contains(out, "x.bundle on importer-3 (pid 7) holds its lease") {
		t.Errorf("keys retire with the lease held: %v\n%s", err, out)
	}
	if after := bucketList(t, s, "site/index.json"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused retire changed the index")
	}
	s.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String("site/lease.json")})
	out = harness.MustRun(t, work, s.Env(), harness.Bin, "keys", "retire", "--store", addr, "--reason", "test", ns, fp)
	if !strings.Contains(out, "signs nothing new") {
		t.Errorf("keys retire: %s", out)
	}
	if after := bucketList(t, s, "site/index.json"); fmt.Sprint(after) == fmt.Sprint(before) {
		t.Errorf("the retirement did not change the index")
	}
	if out := harness.MustRun(t, work, s.Env(), harness.Bin, "keys", "retire", "--store", addr, "--reason", "test", ns, fp); !strings.Contains(out, "already retired") {
		t.Errorf("a second retire: %s", out)
	}
	if inv := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--store", addr); !strings.Contains(inv, "retired") {
		t.Errorf("the inventory does not show the retirement:\n%s", inv)
	}
}

// TestObjectStoreRedirect: with object-redirect on, a replica answers a
// package download with a redirect to a presigned URL of the object in
// the bucket, one signed for GET and one for HEAD (a GET-signed URL
// answers HEAD with 403, and Terraform 1.11 sends HEAD first); real
// terraform 1.11 and 1.15.9 install through it; the presigned URL is
// refused once tampered with.
func TestObjectStoreRedirect(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	r, cl := startS3Replica(t, s, addr, "--object-redirect", "on")
	for _, tf := range []string{harness.TerraformBin(t), harness.TerraformNewBin(t)} {
		if out, err := terraformInitWith(t, tf, r.Base, r.CAFile, "3.6.2"); err != nil || !strings.Contains(out, "3.6.2") {
			t.Errorf("%s init through a redirecting replica: %v\n%s", tf, err, out)
		}
	}
	const dl = "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	_, body, err := harness.Fetch(cl, r.Base+dl)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	json.Unmarshal(body, &d)
	pkg := harness.ResolveRef(r.Base+dl, d.DownloadURL)
	noFollow := &http.Client{Transport: cl.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, pkg, nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, s.Endpoint+"/"+s.Bucket+"/site/blobs/sha256/") || !strings.Contains(loc, "X-Amz-Signature=") {
			t.Fatalf("%s %s: %d Location %q", method, pkg, resp.StatusCode, loc)
		}
		// The presigned URL answers its own method, and not once altered.
		req2, _ := http.NewRequest(method, loc, nil)
		resp2, err := http.DefaultClient.Do(req2)
		if err != nil {
			t.Fatal(err)
		}
		resp2.Body.Close()
		if resp2.StatusCode != 200 {
			t.Errorf("%s of the presigned URL: %d", method, resp2.StatusCode)
		}
		bad, _ := http.NewRequest(method, strings.Replace(loc, "X-Amz-Signature=", "X-Amz-Signature=0", 1), nil)
		resp3, err := http.DefaultClient.Do(bad)
		if err != nil {
			t.Fatal(err)
		}
		resp3.Body.Close()
		if resp3.StatusCode != http.StatusForbidden {
			t.Errorf("%s of a tampered presigned URL: %d, want 403", method, resp3.StatusCode)
		}
	}
}
