package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreExportFromStore: 'airgap export --from-store s3://…' (an
// enclave's chain from a store in object storage) writes the very bundle
// an export from the same store in a directory writes, byte for byte,
// whole and by address; the bundle imports into a new store. A live
// lease is refused naming its holder; --wait waits for it. An object
// swapped (same size, other bytes) or truncated in the bucket is refused
// naming the blob, and nothing is left beside --out.
func TestObjectStoreExportFromStore(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	// A provider and a module (a manifest's export from the store reads
	// the module's archive for what it calls).
	in := registrytest.World(t)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"))
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", filepath.Join(work, "site"), "--no-passphrase")
	key, pub := filepath.Join(work, "site.key.asc"), filepath.Join(work, "site.pub.asc")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\nmodule \"example/vpc/aws\" {\n  versions = \"1.0.0\"\n}\n"), 0o644)
	first := filepath.Join(work, "first.bundle")
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", key, "--out", first, "--cache", filepath.Join(work, "cache"))
	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", root, first)
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", root, addr)
	env := append(s.Env(), "SOURCE_DATE_EPOCH=1767225600")
	export := func(from, out string, extra ...string) (string, error) {
		return harness.CmdRun(t, work, env, harness.Bin, append([]string{"export", "--from-store", from, "--sign-key", key, "--out", out}, extra...)...)
	}
	same := func(what, a, b string) {
		t.Helper()
		da, err1 := os.ReadFile(a)
		db, err2 := os.ReadFile(b)
		if err1 != nil || err2 != nil || len(da) == 0 || !bytes.Equal(da, db) {
			t.Errorf("%s: the bundle from the bucket differs from the one from the directory (%d vs %d bytes; %v %v)", what, len(db), len(da), err1, err2)
		}
	}

	fromDir, fromBucket := filepath.Join(work, "dir.bundle"), filepath.Join(work, "bucket.bundle")
	if out, err := export(root, fromDir); err != nil {
		t.Fatalf("export --from-store DIR: %v\n%s", err, out)
	}
	out, err := export(addr, fromBucket)
	if err != nil || !strings.Contains(out, "every one hashed again from the store") {
		t.Fatalf("export --from-store s3://: %v\n%s", err, out)
	}
	same("the whole store", fromDir, fromBucket)
	if l := bucketList(t, s, "site/lease.json"); len(l) != 0 {
		t.Errorf("the export left its lease in the bucket: %v", l)
	}
	one := []string{"hashicorp/random@3.6.2"}
	export(root, filepath.Join(work, "dir-1.bundle"), one...)
	if out, err := export(addr, filepath.Join(work, "bucket-1.bundle"), one...); err != nil {
		t.Fatalf("export --from-store s3:// ADDRESS: %v\n%s", err, out)
	}
	same("one address", filepath.Join(work, "dir-1.bundle"), filepath.Join(work, "bucket-1.bundle"))
	modOnly := filepath.Join(work, "module.hcl")
	os.WriteFile(modOnly, []byte("module \"example/vpc/aws\" {\n  versions = \"1.0.0\"\n}\n"), 0o644)
	export(root, filepath.Join(work, "dir-m.bundle"), "--manifest", modOnly)
	if out, err := export(addr, filepath.Join(work, "bucket-m.bundle"), "--manifest", modOnly); err != nil {
		t.Fatalf("export --from-store s3:// --manifest: %v\n%s", err, out)
	}
	same("a manifest naming a module", filepath.Join(work, "dir-m.bundle"), filepath.Join(work, "bucket-m.bundle"))
	stdout, _, code := harness.RunSplit(t, work, env, "export", "--from-store", addr, "--sign-key", key, "--out", filepath.Join(work, "j.bundle"), "--json")
	var sum struct {
		Store string `json:"store"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Store != addr {
		t.Errorf("--json names the store %q, want the address (exit %d)\n%s", sum.Store, code, stdout)
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", filepath.Join(work, "next"), fromBucket)

	// The store's SBOM: the same document from the bucket as from the
	// directory.
	sbomDir, sbomBucket := filepath.Join(work, "dir.cdx.json"), filepath.Join(work, "bucket.cdx.json")
	harness.MustRun(t, work, env, harness.Bin, "inventory", "--store", root, "--sbom", sbomDir)
	harness.MustRun(t, work, env, harness.Bin, "inventory", "--store", addr, "--sbom", sbomBucket)
	same("inventory --sbom", sbomDir, sbomBucket)

	// A live lease (an import running elsewhere): refused naming it;
	// with --wait, the export waits and lands once it is gone.
	held := filepath.Join(work, "held.bundle")
	waitsForLease(t, s, "site", work, env, "export", "--from-store", addr, "--sign-key", key, "--out", held)
	same("after --wait", fromDir, held)

	// Swapped, then truncated, objects: each refused naming the blob;
	// nothing is left beside --out.
	ctx := context.Background()
	// The provider package and its Go build information (which the SBOM
	// reads), as the index names them.
	index := string(readFile(t, filepath.Join(root, "index.json")))
	pm := regexp.MustCompile(`"digest":\s*"sha256:([0-9a-f]{64})"`).FindStringSubmatch(index)
	bm := regexp.MustCompile(`"build_info":\s*"sha256:([0-9a-f]{64})"`).FindStringSubmatch(index)
	if pm == nil || bm == nil {
		t.Fatal("the store's index names no package or no Go build information")
	}
	largest, buildInfo := "site/blobs/sha256/"+pm[1], "site/blobs/sha256/"+bm[1]
	get := func(k string) []byte {
		g, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Body.Close()
		data, _ := io.ReadAll(g.Body)
		return data
	}
	put := func(k string, data []byte) {
		if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(k), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	outDir := filepath.Join(work, "out")
	os.Mkdir(outDir, 0o755)
	for i, c := range []struct {
		what, key string
		change    func([]byte) []byte
	}{
		{"swapped package", largest, func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
		{"truncated package", largest, func(b []byte) []byte { return b[:len(b)-1] }},
		{"swapped build information", buildInfo, func(b []byte) []byte { b[0] ^= 1; return b }},
	} {
		orig := get(c.key)
		put(c.key, c.change(append([]byte(nil), orig...)))
		hex := strings.TrimPrefix(c.key, "site/blobs/sha256/")
		out, err := export(addr, filepath.Join(outDir, "bad-"+strconv.Itoa(i)+".bundle"))
		if err == nil || !strings.Contains(out, hex[:12]) || !strings.Contains(out, "hint: ") {
			t.Errorf("%s: export from the bucket: %v\n%s", c.what, err, out)
		}
		t.Logf("%s: %s", c.what, out)
		if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
			t.Errorf("%s: a refused export left %v beside --out", c.what, ents)
		}
		if c.key == buildInfo { // the SBOM reads it
			out, err := harness.CmdRun(t, work, env, harness.Bin, "inventory", "--store", addr, "--sbom", filepath.Join(outDir, "store.cdx.json"))
			if err == nil || !strings.Contains(out, hex[:12]) || !strings.Contains(out, "hint: ") {
				t.Errorf("%s: inventory --sbom from the bucket: %v\n%s", c.what, err, out)
			}
			t.Logf("%s: inventory --sbom: %s", c.what, out)
			if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
				t.Errorf("%s: a refused inventory --sbom left %v", c.what, ents)
			}
		}
		put(c.key, orig)
	}
	// The package gone from the bucket: refused naming it.
	orig := get(largest)
	if _, err := s.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: aws.String(largest)}); err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(largest, "site/blobs/sha256/")
	if out, err := export(addr, filepath.Join(outDir, "gone.bundle")); err == nil || !strings.Contains(out, "the store lacks blob "+hex[:12]) || !strings.Contains(out, "hint: ") {
		t.Errorf("a package gone from the bucket: %v\n%s", err, out)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Errorf("a refused export left %v beside --out", ents)
	}
	put(largest, orig)
	if l := bucketList(t, s, "site/lease.json"); len(l) != 0 {
		t.Errorf("a refused export left its lease in the bucket: %v", l)
	}
}

// waitsForLease holds the lease of the store at prefix as an import
// elsewhere would, and checks that airgap args is refused naming the
// holder, and that with --wait it waits (still running after two
// seconds), then finishes once the lease is released.
func waitsForLease(t *testing.T, s *harness.S3, prefix, work string, env []string, args ...string) {
	t.Helper()
	ctx := context.Background()
	lease := aws.String(prefix + "/lease.json")
	now := time.Now().UTC()
	hold := `{"holder":"airgap import of x.bundle on elsewhere (pid 42)","started":"` + now.Format(time.RFC3339) + `","expires":"` + now.Add(5*time.Minute).Format(time.RFC3339) + `"}`
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: lease, Body: strings.NewReader(hold)}); err != nil {
		t.Fatal(err)
	}
	what := "airgap " + args[0]
	if out, err := harness.CmdRun(t, work, env, harness.Bin, args...); err == nil || !strings.Contains(out, "on elsewhere (pid 42) holds its lease") || !strings.Contains(out, "hint: ") {
		t.Errorf("%s while another holds the lease: %v\n%s", what, err, out)
	}
	cmd := exec.Command(harness.Bin, append(args, "--wait")...)
	cmd.Dir, cmd.Env = work, append(harness.BaseEnv(), env...)
	var waited harness.LockedBuffer
	cmd.Stdout, cmd.Stderr = &waited, &waited
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("%s --wait did not wait for the lease: %v\n%s", what, err, waited.String())
	case <-time.After(2 * time.Second):
	}
	if _, err := s.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: lease}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(waited.String(), "waiting: ") {
			t.Errorf("%s --wait: %v\n%s", what, err, waited.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%s --wait still waiting a minute after the lease was released\n%s", what, waited.String())
	}
}

// TestObjectStoreWait: import, prune and gc take --wait on a bucket as on
// disk: refused naming the lease's holder without it, waiting for the
// lease with it.
func TestObjectStoreWait(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.0", "3.6.2")
	addr := s.Addr("w")
	env := s.Env()
	harness.MustRun(t, work, env, harness.Bin, "import", "--keyring", pub, "--store", addr, bundles[0])
	waitsForLease(t, s, "w", work, env, "import", "--keyring", pub, "--store", addr, bundles[1])
	waitsForLease(t, s, "w", work, env, "prune", "--store", addr, "--keep", "1")
	waitsForLease(t, s, "w", work, env, "gc", "--store", addr)

	// A lease that says it lasts a year (forged, or garbled): not
	// honoured, so --wait does not wait for it; gc takes it over, saying
	// whose it was.
	now := time.Now().UTC()
	forged := `{"holder":"mallory","started":"` + now.Format(time.RFC3339) + `","expires":"` + now.AddDate(1, 0, 0).Format(time.RFC3339) + `"}`
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("w/lease.json"), Body: strings.NewReader(forged)}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fout, ferr := harness.CmdRun(t, work, env, harness.Bin, "gc", "--store", addr, "--wait")
	if ferr != nil || !strings.Contains(fout, "took over the lease of mallory") || time.Since(start) > 30*time.Second {
		t.Errorf("gc --wait over a lease that lasts a year: %v after %v\n%s", ferr, time.Since(start), fout)
	}
	t.Logf("gc --wait over a forged lease: %s", fout)
	out := harness.MustRun(t, work, env, harness.Bin, "inventory", "--store", addr)
	if !regexp.MustCompile(`random\s+3\.6\.2\s+linux_amd64`).MatchString(out) || !strings.Contains(out, ": 1 provider versions") {
		t.Errorf("after the waited import and prune, the store holds:\n%s", out)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestObjectStoreDelta: a delta bundle (export --from-store --since)
// imports into a bucket whose store has its base, finding the omitted
// blobs in the bucket, and the store then holds what the same imports
// make of a directory store, blob for blob; into a store without the
// base it is refused naming what it lacks, and the bucket is unchanged.
func TestObjectStoreDelta(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.0", "3.6.2")
	key := filepath.Join(work, "site.key.asc")
	a := filepath.Join(work, "a")
	base, delta := filepath.Join(work, "base.bundle"), filepath.Join(work, "delta.bundle")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", a, bundles[0])
	harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", a, "--sign-key", key, "--out", base)
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", a, bundles[1])
	out := harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", a, "--since", base, "--sign-key", key, "--out", delta)
	if !strings.Contains(out, "delta against") {
		t.Fatalf("not a delta:\n%s", out)
	}

	// Without its base: refused, nothing written.
	bare := s.Addr("bare")
	if out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", bare, delta); err == nil || !strings.Contains(out, "this store lacks") || !strings.Contains(out, "hint: ") {
		t.Errorf("a delta into a bucket without its base: %v\n%s", err, out)
	}
	if l := bucketList(t, s, "bare/index.json"); len(l) != 0 {
		t.Errorf("a refused delta wrote an index: %v", l)
	}

	d := filepath.Join(work, "d")
	addr := s.Addr("site")
	for i, b := range []string{base, delta} {
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", d, b)
		if i == 1 {
			// The base's Go build information, which the delta omits and
			// its check reads, swapped in the bucket: the delta is
			// refused naming it, and the index is unchanged.
			m := regexp.MustCompile(`"build_info":\s*"sha256:([0-9a-f]{64})"`).FindStringSubmatch(string(readFile(t, filepath.Join(a, "index.json"))))
			ctx := context.Background()
			k := aws.String("site/blobs/sha256/" + m[1])
			g, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: k})
			if err != nil {
				t.Fatal(err)
			}
			orig, _ := io.ReadAll(g.Body)
			g.Body.Close()
			bad := append([]byte(nil), orig...)
			bad[0] ^= 1
			s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: k, Body: bytes.NewReader(bad)})
			before := bucketList(t, s, "site/index.json")
			out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, b)
			if err == nil || !strings.Contains(out, m[1][:12]) || !strings.Contains(out, "do not match the blob's name") || !strings.Contains(out, "hint: ") {
				t.Errorf("a delta over a swapped object in the bucket: %v\n%s", err, out)
			}
			if after := bucketList(t, s, "site/index.json"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a delta over a swapped object changed the index")
			}
			s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: k, Body: bytes.NewReader(orig)})
		}
		if out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, b); err != nil {
			t.Fatalf("import %s into the bucket: %v\n%s", filepath.Base(b), err, out)
		}
	}
	back := filepath.Join(work, "back")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", addr, back)
	harness.CheckConsistent(t, back)
	want, got := storeFiles(t, d)[1:], storeFiles(t, back)[1:] // the blobs (the index records times)
	if len(want) < 8 || strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("the bucket's blobs after base and delta differ from the directory's:\n got %v\nwant %v", got, want)
	}
	inv := harness.MustRun(t, work, s.Env(), harness.Bin, "inventory", "--store", addr)
	for _, v := range []string{"3.6.0", "3.6.2"} {
		if !regexp.MustCompile(`random\s+` + regexp.QuoteMeta(v) + `\s+linux_amd64`).MatchString(inv) {
			t.Errorf("after the delta the bucket's store lacks %s:\n%s", v, inv)
		}
	}
}

// TestObjectStoreMirrorPush: mirror-dir (packed and unpacked) and push
// (to a real OCI registry) from a store in a bucket give what they give
// from the same store in a directory: the same trees file for file, the
// same tags and manifest digests. A package swapped in the bucket stops
// both, naming the blob; mirror-dir leaves no tree.
func TestObjectStoreMirrorPush(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	reg := harness.StartRegistry(t)
	work, pub, bundles := randomBundles(t, "3.6.2")
	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", root, bundles[0])
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", root, addr)

	for _, layout := range []string{"packed", "unpacked"} {
		fromDir, fromBucket := filepath.Join(work, "dir-"+layout), filepath.Join(work, "bucket-"+layout)
		harness.MustRun(t, work, nil, harness.Bin, "mirror-dir", "--store", root, "--out", fromDir, "--layout", layout)
		harness.MustRun(t, work, s.Env(), harness.Bin, "mirror-dir", "--store", addr, "--out", fromBucket, "--layout", layout)
		want, got := treeFiles(t, fromDir), treeFiles(t, fromBucket)
		if len(want) < 2 || strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("mirror-dir --layout %s: the tree from the bucket differs:\n got %v\nwant %v", layout, got, want)
		}
	}

	pushEnv := append(s.Env(), "SSL_CERT_FILE="+reg.CAFile, "AIRGAP_REGISTRY_PASSWORD="+reg.Password, "DOCKER_CONFIG="+t.TempDir())
	push := func(from, prefix string) ([]string, string, error) {
		out, err := harness.CmdRun(t, work, pushEnv, harness.Bin, "push", "--store", from, "--to", reg.Host+"/"+prefix, "--username", reg.User, "--json")
		var res struct {
			Tags []struct {
				Repository, Tag, Digest string
			} `json:"tags"`
		}
		if err == nil {
			if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
				return nil, out, jerr
			}
		}
		var tags []string
		for _, tg := range res.Tags {
			tags = append(tags, strings.TrimPrefix(tg.Repository, reg.Host+"/"+prefix+"/")+":"+tg.Tag+"@"+tg.Digest)
		}
		return tags, out, err
	}
	want, out, err := push(root, "dir")
	if err != nil || len(want) == 0 {
		t.Fatalf("push from the directory: %v\n%s", err, out)
	}
	got, out, err := push(addr, "bucket")
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("push from the bucket: %v\n got %v\nwant %v\n%s", err, got, want, out)
	}

	// The package swapped in the bucket (same size, other bytes).
	ctx := context.Background()
	var pkg string
	var size int64 = -1
	objs, err := s.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: aws.String("site/blobs/sha256/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs.Contents {
		if n := aws.ToInt64(o.Size); n > size {
			pkg, size = aws.ToString(o.Key), n
		}
	}
	g, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String(pkg)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(g.Body)
	g.Body.Close()
	data[len(data)/2] ^= 1
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(pkg), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(pkg, "site/blobs/sha256/")
	for _, layout := range []string{"packed", "unpacked"} {
		bad := filepath.Join(work, "bad-"+layout)
		out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "mirror-dir", "--store", addr, "--out", bad, "--layout", layout)
		if err == nil || !strings.Contains(out, hex[:12]) {
			t.Errorf("mirror-dir --layout %s from a bucket with a swapped package: %v\n%s", layout, err, out)
		}
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Errorf("a refused mirror-dir left %s: %v", bad, err)
		}
		t.Logf("mirror-dir --layout %s: %s", layout, out)
	}
	if _, out, err := push(addr, "swapped"); err == nil || !strings.Contains(out, hex[:12]) {
		t.Errorf("push from a bucket with a swapped package: %v\n%s", err, out)
	} else {
		t.Logf("push: %s", out)
	}
}

// treeFiles lists a directory tree's regular files with their sha256.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+" "+fileSum(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestObjectStoreWithdraw: a bundle that withdraws a version, and one that
// reinstates it, do to a store in a bucket what they do to a directory
// store: the same catalog and the same withdrawals (inventory --json).
func TestObjectStoreWithdraw(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	work, pub, bundles := randomBundles(t, "3.6.0", "3.6.2")
	key := filepath.Join(work, "site.key.asc")
	src, d := filepath.Join(work, "src"), filepath.Join(work, "d")
	addr := s.Addr("site")
	for _, b := range bundles {
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", src, b)
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", d, b)
		harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, b)
	}
	withdraw := filepath.Join(work, "withdraw.hcl")
	os.WriteFile(withdraw, []byte("provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\nwithdraw \"hashicorp/random\" {\n  versions = \"3.6.0\"\n  reason   = \"bad build\"\n}\n"), 0o644)
	reinstate := filepath.Join(work, "reinstate.hcl")
	os.WriteFile(reinstate, []byte("provider \"hashicorp/random\" {\n  versions = \"3.6.0\"\n}\nreinstate \"hashicorp/random\" {\n  versions = \"3.6.0\"\n  reason   = \"rebuilt\"\n}\n"), 0o644)
	type inventory struct {
		Catalog struct {
			Providers []struct{ Version string } `json:"providers"`
		} `json:"catalog"`
		Withdrawn []struct{ Addr, Version, Reason string } `json:"withdrawn"`
	}
	state := func(store string) string {
		var inv inventory
		stdout, stderr, code := harness.RunSplit(t, work, s.Env(), "inventory", "--store", store, "--json")
		if code != 0 || json.Unmarshal([]byte(stdout), &inv) != nil {
			t.Fatalf("inventory --store %s --json: exit %d\n%s%s", store, code, stdout, stderr)
		}
		var vs []string
		for _, p := range inv.Catalog.Providers {
			vs = append(vs, p.Version)
		}
		return fmt.Sprintf("versions %v withdrawn %v", vs, inv.Withdrawn)
	}
	for i, mf := range []string{withdraw, reinstate} {
		b := filepath.Join(work, "curate-"+strconv.Itoa(i)+".bundle")
		harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", src, "--manifest", mf, "--sign-key", key, "--out", b)
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", pub, "--store", d, b)
		if out, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "import", "--keyring", pub, "--store", addr, b); err != nil {
			t.Fatalf("import %s into the bucket: %v\n%s", filepath.Base(mf), err, out)
		}
		want, got := state(d), state(addr)
		if wantHere := []string{"versions [3.6.2] withdrawn [{registry.terraform.io/hashicorp/random 3.6.0 bad build}]", "versions [3.6.0 3.6.2] withdrawn []"}[i]; want != wantHere {
			t.Errorf("after %s the directory store has %s, want %s", filepath.Base(mf), want, wantHere)
		}
		if want != got {
			t.Errorf("after %s: the bucket's store has %s, the directory's %s", filepath.Base(mf), got, want)
		}
		t.Logf("after %s: %s", filepath.Base(mf), got)
	}
}

// TestObjectStoreExportBounded: an export --from-store of a bucket whose
// store holds a 96 MiB package streams it: the process's peak memory
// stays under 100 MiB, less than the package and the binary together (the package is never held), and the
// bundle is the directory store's, byte for byte.
func TestObjectStoreExportBounded(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	in := registrytest.World(t)
	in.AddProvider(t, "registry.terraform.io", "example", "big", "1.0.0", []string{"linux_amd64"}, 96<<20)
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))
	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--no-passphrase")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte("platforms = [\"linux_amd64\"]\nprovider \"example/big\" {\n  versions = \"1.0.0\"\n}\n"), 0o644)
	b := filepath.Join(work, "big.bundle")
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--no-docs", "--compression", "none")
	root := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", root, b)
	addr := s.Addr("big")
	harness.MustRun(t, work, s.Env(), harness.Bin, "store", "copy", root, addr)
	env := append(harness.BaseEnv(), append(s.Env(), "SOURCE_DATE_EPOCH=1767225600")...)
	for _, from := range []string{root, addr} {
		out := filepath.Join(work, strconv.Itoa(len(from))+".bundle")
		start := time.Now()
		text, code := harness.RunBoundedEnv(t, work, env, 100<<10, "export", "--from-store", from, "--sign-key", keys+".key.asc", "--out", out, "--compression", "none")
		if code != 0 {
			t.Fatalf("export --from-store %s: exit %d\n%s", from, code, text)
		}
		t.Logf("export --from-store %s: %v", strings.SplitN(from, "?", 2)[0], time.Since(start).Round(time.Millisecond))
	}
	a, c := filepath.Join(work, strconv.Itoa(len(root))+".bundle"), filepath.Join(work, strconv.Itoa(len(addr))+".bundle")
	if fi, err := os.Stat(c); err != nil || fi.Size() < 96<<20 {
		t.Fatalf("the bundle from the bucket: %v (want over 96 MiB)", err)
	}
	if fileSum(t, a) != fileSum(t, c) {
		t.Errorf("the bundle from the bucket differs from the one from the directory")
	}
}
