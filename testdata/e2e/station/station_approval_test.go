package station

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// stationPolicy is the store policy of the two-person journey: one
// approval by a station key, new publisher keys approved only there.
const stationPolicy = `approvals {
  keyring  = "stations.pub.asc"
  required = 1
}
publisher_key_approvals = "station"
`

// TestTwoPersonJourney: export on the internet-facing laptop (site key) →
// verify --against (the forecast: the import will refuse, no approval and
// the key is only declared by the laptop) → approve at the station,
// accepting the rotated publisher key there → import into a store whose
// policy requires one approval and takes new keys only from the station
// → terraform init installs with the reference lock unchanged. The same
// bundle without the approval, with an approval of another bundle, or
// with one signed by the bundle's own key is refused, the store byte for
// byte as it was.
func TestTwoPersonJourney(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	s := harness.NewStation(t, in)
	stationKey := s.WithStation(t, stationPolicy)
	const first = "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"
	b1 := s.Export(t, "first", first)

	// The first bundle: approved at the station, which accepts the
	// namespace's first key too (this store pins no key by first use),
	// imported.
	out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b1)
	if err == nil || !strings.Contains(out, "not enough transfer-station approvals") || !strings.Contains(out, "airgap approve --key STATION.key.asc") {
		t.Fatalf("a bundle without an approval was not refused as it should be (%v):\n%s", err, out)
	}
	harness.MustRun(t, s.Work, nil, harness.Bin, "approve", "--key", stationKey, "--keyring", s.Keyring, "--accept-publisher-key", verify.Fingerprint(in.Publisher), "--note", "first month", b1)
	out = harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b1)
	if !strings.Contains(out, "approved at the transfer station by") || !strings.Contains(out, `"first month"`) {
		t.Errorf("import of the approved first bundle:\n%s", out)
	}

	// The reference: terraform against the internet, after the publisher
	// rotated its key and published 3.7.0 signed by the new one.
	in.Publisher = bundletest.Key(t, "rotated publisher")
	newKey, newID := verify.Fingerprint(in.Publisher), verify.KeyID(in.Publisher)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.7.0", []string{"linux_amd64"}, 8<<10)
	project := "terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"3.7.0\"\n    }\n  }\n}\n"
	ref := filepath.Join(s.Work, "reference")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(project), 0o644)
	harness.MustRun(t, ref, s.Online, tf, "init", "-input=false", "-no-color")
	refLock, _ := os.ReadFile(filepath.Join(ref, ".terraform.lock.hcl"))

	// The laptop declares the new key (export --accept-new-publisher-key):
	// this store does not take that word.
	b2 := s.Export(t, "second", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.7.0\"\n}\n", "--accept-new-publisher-key", newKey)
	have := s.Inventory(t, "have")
	out, code := s.Verify(t, "--against", have, b2)
	t.Logf("the forecast without an approval:\n%s", out)
	if code != 4 {
		t.Errorf("verify --against of a bundle the import will refuse: exit %d, want 4", code)
	}
	for _, want := range []string{
		"import:    WILL REFUSE",
		"approvals: 0 of 1 required (station keyring stations.pub.asc)",
		"provider registry.terraform.io/hashicorp/random 3.7.0: publisher key:",
		"only from a transfer station's approval",
		"the bundle: approval: 0 of 1 required approval(s)",
		"Verdict: import will refuse: 1 entry and the bundle as a whole (approval, publisher key)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the forecast lacks %q", want)
		}
	}
	r, _, code := s.VerifyJSON(t, "--against", have, b2)
	if code != 4 || r.Forecast == nil || r.Forecast.Verdict != "refuse" || len(r.Forecast.Refused) != 2 {
		t.Errorf("verify --json's forecast (exit %d): %+v", code, r.Forecast)
	}

	// The site key cannot approve (it signed the bundle), and a station key
	// the store does not list is told so: nothing is written.
	if out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "approve", "--key", "k/site.key.asc", "--keyring", s.Keyring, "--against", have, b2); err == nil ||
		!strings.Contains(out, "is the key that signed this bundle") {
		t.Errorf("approve with the bundle's own key (err %v):\n%s", err, out)
	}
	harness.MustRun(t, s.Work, nil, harness.Bin, "keys", "generate", "--out", "k/unlisted", "--no-passphrase")
	if out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "approve", "--key", "k/unlisted.key.asc", "--keyring", s.Keyring, "--against", have, b2); harness.ExitCode(err) != 4 ||
		!strings.Contains(out, "not approved: this approval would not count for the store") || !strings.Contains(out, "is not in the store's station keyring stations.pub.asc") {
		t.Errorf("approve with a key the store does not list (exit %d):\n%s", harness.ExitCode(err), out)
	}
	if _, err := os.Stat(b2 + ".approval"); err == nil {
		t.Fatalf("a refused approve wrote %s.approval", b2)
	}

	// At the station: approved with the new key accepted there.
	stdout, stderr, code := harness.RunSplit(t, s.Work, nil, "approve", "--key", stationKey, "--keyring", s.Keyring, "--against", have,
		"--accept-publisher-key", spacedFingerprint(strings.ToLower(newKey)), "--note", "CHG-1234: new HashiCorp key checked on their site", b2)
	t.Logf("approve:\n%s\n%s", stdout, stderr)
	if code != 0 || !strings.Contains(stdout, "Verdict: import will accept") || !strings.Contains(stdout, "approved at the transfer station") {
		t.Fatalf("approve: exit %d", code)
	}
	apath := b2 + ".approval"
	data, err := os.ReadFile(apath)
	if err != nil {
		t.Fatal(err)
	}
	a, err := approval.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if a.Review.Text != verify.DigestBytes([]byte(stdout)) || len(a.PublisherKeys) != 1 || a.PublisherKeys[0].Fingerprint != newKey ||
		a.PublisherKeys[0].Namespace != "registry.terraform.io/hashicorp" {
		t.Errorf("the approval does not bind the review printed and the key: %+v", a.Statement)
	}
	out, code = s.Verify(t, "--against", have, b2)
	if code != 0 || !strings.Contains(out, "Verdict: import will accept") || !strings.Contains(out, "valid: "+apath) {
		t.Errorf("the forecast with the approval beside the bundle (exit %d):\n%s", code, out)
	}

	// Refused, the store byte for byte as it was: without the approval,
	// with an approval of another bundle, with one by the bundle's own key.
	site, err := verify.ReadSigningKeyFile(filepath.Join(s.Work, "k/site.key.asc"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := approval.Sign(a.Statement, site, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := os.ReadFile(b1 + ".approval")
	hidden := filepath.Join(s.Work, "kept.approval")
	os.Rename(apath, hidden)
	for _, c := range []struct {
		name, approval string
		want           []string
	}{
		{"no approval", "", []string{"no approval came with the bundle"}},
		{"another bundle's", string(other), []string{"it approves another bundle"}},
		{"the bundle's own key", string(own), []string{"signed by the key that signed the bundle", "a station key is never the bundle's signing key"}},
	} {
		if c.approval != "" {
			os.WriteFile(apath, []byte(c.approval), 0o644)
		}
		before := bundletest.Snapshot(t, s.Store)
		out, err := harness.CmdRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b2)
		for _, want := range append(c.want, "not enough transfer-station approvals", "hint: at the transfer station", "the store was not changed") {
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("%s: the import (err %v) lacks %q:\n%s", c.name, err, want, out)
			}
		}
		bundletest.SameTree(t, before, bundletest.Snapshot(t, s.Store))
		os.Remove(apath)
	}
	os.Rename(hidden, apath)

	// Imported with it: the approval, the key approved at the station.
	out = harness.MustRun(t, s.Work, nil, harness.Bin, "import", "--keyring", s.Keyring, "--store", s.Store, b2)
	t.Logf("import:\n%s", out)
	for _, want := range []string{"approved at the transfer station by " + verify.GroupFingerprint(keyFile(t, stationKey)),
		"accepted publisher key " + verify.GroupFingerprint(newKey), "pinned publisher key for registry.terraform.io/hashicorp: " + verify.GroupFingerprint(newKey),
		"approved at station"} {
		if !strings.Contains(out, want) {
			t.Errorf("the import's output lacks %q", want)
		}
	}
	var inv struct {
		Imports []struct {
			Approvals []struct {
				Blob    verify.Digest
				Station struct{ Fingerprint string }
				Note    string
			}
		}
		Blobs []verify.Digest
	}
	json.Unmarshal([]byte(harness.MustRunStdout(t, s.Work, "inventory", "--store", s.Store, "--json")), &inv)
	last := inv.Imports[len(inv.Imports)-1]
	if len(last.Approvals) != 1 || last.Approvals[0].Blob != verify.DigestBytes(data) || !strings.HasPrefix(last.Approvals[0].Note, "CHG-1234") {
		t.Errorf("the history does not keep the approval: %+v", last)
	}
	if kept, err := os.ReadFile(filepath.Join(s.Store, "blobs", "sha256", verify.DigestBytes(data).Hex())); err != nil || !bytes.Equal(kept, data) {
		t.Errorf("the approval is not kept as a blob: %v", err)
	}
	text := harness.MustRun(t, s.Work, nil, harness.Bin, "inventory", "--store", s.Store)
	if !strings.Contains(text, "approved at the transfer station by") || !strings.Contains(text, "every bundle needs 1 approval(s)") {
		t.Errorf("inventory:\n%s", text)
	}
	harness.MustRun(t, s.Work, nil, harness.Bin, "gc", "--store", s.Store)
	if _, err := os.Stat(filepath.Join(s.Store, "blobs", "sha256", verify.DigestBytes(data).Hex())); err != nil {
		t.Errorf("gc removed the approval: %v", err)
	}

	// terraform init installs it offline, the reference lock unchanged.
	auditLog := filepath.Join(s.Work, "audit.jsonl")
	srv := harness.StartServe(t, s.Store, "--audit-log", auditLog)
	base, caFile := srv.Base, srv.CAFile
	rc := filepath.Join(t.TempDir(), "airgap.tfrc")
	os.WriteFile(rc, []byte(harness.MustRun(t, s.Work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry")), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile, "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(t.TempDir(), "project")
	harness.CopyTree(t, ref, dir)
	out = harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color", "-lockfile=readonly")
	if !strings.Contains(out, "Installed hashicorp/random v3.7.0") || !strings.Contains(out, "key ID "+newID) {
		t.Errorf("terraform did not install 3.7.0 signed by the rotated key:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); !bytes.Equal(got, refLock) {
		t.Errorf("the reference lock changed offline:\n%s", got)
	}
	if out := harness.MustRun(t, s.Work, nil, harness.Bin, "audit", "--log", auditLog, "--store", s.Store); !strings.Contains(out, "registry.terraform.io/hashicorp/random 3.7.0: bundle") ||
		!strings.Contains(out, "approved at the transfer station by "+verify.GroupFingerprint(keyFile(t, stationKey))) {
		t.Errorf("audit --store does not say who approved what was fetched:\n%s", out)
	}
	page := httpsGet(t, base, caFile, "/")
	if !strings.Contains(page, "CHG-1234") || !strings.Contains(page, verify.GroupFingerprint(keyFile(t, stationKey))) {
		t.Errorf("the catalog page does not show the approval")
	}
}

// keyFile is the fingerprint of the key whose private half is at path
// (PREFIX.key.asc; its PREFIX.pub.asc is read).
func keyFile(t *testing.T, path string) string {
	t.Helper()
	kr, err := verify.ReadKeyringFile(strings.TrimSuffix(path, ".key.asc") + ".pub.asc")
	if err != nil {
		t.Fatal(err)
	}
	return verify.Fingerprint(kr[0])
}

// httpsGet fetches path from the appliance at base, trusting caFile.
func httpsGet(t *testing.T, base, caFile, path string) string {
	t.Helper()
	pem, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := cl.Get(strings.TrimSuffix(base, "/") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return string(b)
}

// TestHostileApprovals: approval files beside a bundle are untrusted
// input. A huge one, a FIFO (whose open would block), one whose statement
// was changed after signing, one by a key the store does not know: each is
// not counted, named with why, by verify's forecast and by the import,
// within bounded memory and time, and the store stays as it was.
func TestHostileApprovals(t *testing.T) {
	w := newPolicyWorld(t)
	st := w.storeFor(t, "hostile", stationPolicy)
	b := w.bundleOf(t, "hostile", false, nil, w.random(t, "3.6.1", w.pub, 64<<10))
	have := st + ".have.json"
	os.WriteFile(have, []byte(harness.MustRunStdout(t, w.work, "inventory", "--store", st, "--json")), 0o644)
	w.approve(t, b)
	good, _ := os.ReadFile(approval.PathFor(b))
	stranger := bundletest.Key(t, "stranger")
	a, _ := approval.Parse(good)
	strangers, err := approval.Sign(a.Statement, stranger, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		plant func(path string)
		want  string
	}{
		{"huge", func(p string) {
			f, _ := os.Create(p)
			f.Truncate(64 << 20)
			f.Close()
		}, "over the 65536 an approval may have"},
		{"fifo", func(p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"changed after signing", func(p string) {
			os.WriteFile(p, bytes.Replace(good, []byte(`"tool": "airgap test"`), []byte(`"tool": "airgap tesT"`), 1), 0o644)
		}, "the approval's signature does not check out"},
		{"a stranger's key", func(p string) { os.WriteFile(p, strangers, 0o644) },
			"which is not a key of the store's station keyring stations.pub.asc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := approval.PathFor(b)
			os.Remove(p)
			c.plant(p)
			defer os.Remove(p)
			start := time.Now()
			out, code := harness.RunBounded(t, w.work, "verify", "--keyring", w.keyring, "--against", have, b)
			if code != 4 || !strings.Contains(out, "not counted: "+p+": ") || !strings.Contains(out, c.want) {
				t.Errorf("verify (exit %d) does not say why the approval does not count (%q):\n%s", code, c.want, out)
			}
			before := bundletest.Snapshot(t, st)
			out, code = harness.RunBounded(t, w.work, "import", "--keyring", w.keyring, "--store", st, b)
			if code != 1 || !strings.Contains(out, filepath.Base(p)+": not counted: ") || !strings.Contains(out, c.want) || !strings.Contains(out, "the store was not changed") {
				t.Errorf("import (exit %d) does not refuse with why (%q):\n%s", code, c.want, out)
			}
			bundletest.SameTree(t, before, bundletest.Snapshot(t, st))
			if el := time.Since(start); el > 30*time.Second {
				t.Errorf("verify and import took %v", el)
			}
		})
	}
	// The genuine approval is counted, and the import takes the bundle.
	os.WriteFile(approval.PathFor(b), good, 0o644)
	if out, code := harness.RunBounded(t, w.work, "import", "--keyring", w.keyring, "--store", st, b); code != 0 || !strings.Contains(out, "approved at the transfer station") {
		t.Errorf("the genuine approval (exit %d):\n%s", code, out)
	}
}

// TestApprovalOfAnotherSignersCopy: an approval states the key that signed
// the bundle the station reviewed (bundle_signer). The same manifest
// signed by another key of the import's keyring is another bundle as far
// as the station knows (its review named the first signer): the approval
// does not count for it, in the forecast as at the import.
func TestApprovalOfAnotherSignersCopy(t *testing.T) {
	w := newPolicyWorld(t)
	st := w.storeFor(t, "other-signer", stationPolicy)
	b := w.bundleOf(t, "reviewed", false, nil, w.random(t, "3.6.1", w.pub, 64<<10))
	w.approve(t, b)
	other := bundletest.Key(t, "site two")
	keyring := filepath.Join(w.work, "both.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, w.site)+bundletest.Armor(t, other)))
	set := bundletest.NewSet()
	set.AddProvider(w.random(t, "3.6.1", w.pub, 64<<10))
	b2 := filepath.Join(w.work, "resigned.bundle")
	set.WriteBundleFile(t, b2, other, bundle.CompressionAuto)
	data, err := os.ReadFile(approval.PathFor(b))
	if err != nil {
		t.Fatal(err)
	}
	bundletest.WriteFile(t, approval.PathFor(b2), data)

	have := st + ".have.json"
	os.WriteFile(have, []byte(harness.MustRunStdout(t, w.work, "inventory", "--store", st, "--json")), 0o644)
	const want = "it approves this bundle as signed by"
	if out, code := harness.RunBounded(t, w.work, "verify", "--keyring", keyring, "--against", have, b2); code != 4 || !strings.Contains(out, want) {
		t.Errorf("verify (exit %d) counts the approval of another signer's copy:\n%s", code, out)
	}
	before := bundletest.Snapshot(t, st)
	if out, code := harness.RunBounded(t, w.work, "import", "--keyring", keyring, "--store", st, b2); code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "the store was not changed") {
		t.Errorf("import (exit %d) takes the approval of another signer's copy:\n%s", code, out)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, st))
	// The copy the station reviewed is taken with it.
	if out, code := harness.RunBounded(t, w.work, "import", "--keyring", keyring, "--store", st, b); code != 0 {
		t.Errorf("import of the reviewed copy (exit %d):\n%s", code, out)
	}
}
