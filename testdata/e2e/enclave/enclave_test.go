package enclave

import (
	"bytes"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// enclaves is a chain of networks: the stand-in internet, and offline
// sites each with a signing key of its own.
type enclaves struct {
	in     *registrytest.Internet
	work   string
	online []string
}

func newEnclaves(t *testing.T) *enclaves {
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	e := &enclaves{in: in, work: t.TempDir()}
	e.online = append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(e.work, "empty.tfrc"))
	for _, k := range []struct{ name, id string }{
		{"internet", "Site Ops <ops@site.test>"}, {"a", "Enclave A <ops@a.test>"}, {"b", "Enclave B <ops@b.test>"}, {"rogue", "Rogue <x@rogue.test>"},
		{"station", "Station A <station@a.test>"},
	} {
		harness.MustRun(t, e.work, nil, harness.Bin, "keygen", "--out", e.key(k.name), "--name", k.id, "--no-passphrase")
	}
	return e
}

func (e *enclaves) key(name string) string  { return filepath.Join(e.work, "keys", name) }
func (e *enclaves) pub(name string) string  { return e.key(name) + ".pub.asc" }
func (e *enclaves) sec(name string) string  { return e.key(name) + ".key.asc" }
func (e *enclaves) path(name string) string { return filepath.Join(e.work, name) }

// internetExport exports manifest from the stand-in internet with the
// internet side's key.
func (e *enclaves) internetExport(t *testing.T, name, manifest string) string {
	t.Helper()
	mf := e.path(name + ".hcl")
	os.WriteFile(mf, []byte(manifest), 0o644)
	out := e.path(name + ".bundle")
	harness.MustRun(t, e.work, append(e.online, "SOURCE_DATE_EPOCH=1767225600"), harness.Bin, "export", "--manifest", mf, "--sign-key", e.sec("internet"), "--out", out, "--cache", e.path("cache"))
	return out
}

// fromStore exports what store holds with key's secret key.
func (e *enclaves) fromStore(t *testing.T, store, key, name string, extra ...string) (string, string) {
	t.Helper()
	out := e.path(name + ".bundle")
	text := harness.MustRun(t, e.work, nil, harness.Bin, append([]string{"export", "--from-store", store, "--sign-key", e.sec(key), "--out", out}, extra...)...)
	return out, text
}

// importInto imports b into store, trusting keyring.
func (e *enclaves) importInto(t *testing.T, store, keyring, b string, extra ...string) string {
	t.Helper()
	return harness.MustRun(t, e.work, nil, harness.Bin, append([]string{"import", "--keyring", keyring, "--store", store}, append(extra, b)...)...)
}

// chainPolicy writes STORE/import.hcl with a chain block trusting the
// public keys of names.
func (e *enclaves) chainPolicy(t *testing.T, store string, names ...string) {
	t.Helper()
	os.MkdirAll(store, 0o755)
	var kr []byte
	for _, n := range names {
		b, err := os.ReadFile(e.pub(n))
		if err != nil {
			t.Fatal(err)
		}
		kr = append(kr, b...)
	}
	bundletest.WriteFile(t, filepath.Join(store, "chain.pub.asc"), kr)
	bundletest.WriteFile(t, filepath.Join(store, "import.hcl"), []byte("chain {\n  keyring = \"chain.pub.asc\"\n}\n"))
}

// inventory decodes 'airgap inventory --json'.
func inventoryJSON(t *testing.T, store string) map[string]any {
	t.Helper()
	out := harness.MustRun(t, "", nil, harness.Bin, "inventory", "--store", store, "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("inventory --json: %v\n%s", err, out)
	}
	return v
}

// TestEnclaveChain: the internet export goes into store A; A exports what
// it holds (a full bundle, then a delta --since it after A took in more
// and withdrew a version) into store B; B does the same over a one-way
// link into store C. C's review shows all three hops, every signature
// checked again; C's import policy requires every hop signed by a key it
// trusts; terraform 1.11, 1.15.9 and tofu install from C with the lock
// file made on the internet unchanged; the version A withdrew arrives
// withdrawn on C.
func TestEnclaveChain(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	e := newEnclaves(t)

	// The reference: terraform against the stand-in internet.
	ref := e.path("reference")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(harness.E2EProject), 0o644)
	harness.MustRun(t, ref, e.online, tf, "init", "-input=false", "-no-color")
	refLock, _ := os.ReadFile(filepath.Join(ref, ".terraform.lock.hcl"))

	// The internet export into store A, whose policy requires a transfer
	// station's approval of every bundle (the two-person rule).
	storeA, storeB, storeC := e.path("storeA"), e.path("storeB"), e.path("storeC")
	os.MkdirAll(storeA, 0o755)
	st, _ := os.ReadFile(e.pub("station"))
	bundletest.WriteFile(t, filepath.Join(storeA, "stations.pub.asc"), st)
	bundletest.WriteFile(t, filepath.Join(storeA, "import.hcl"), []byte("approvals {\n  keyring  = \"stations.pub.asc\"\n  required = 1\n}\n"))
	b0 := e.internetExport(t, "internet", harness.E2EManifest)
	harness.MustRun(t, e.work, nil, harness.Bin, "approve", "--key", e.sec("station"), "--keyring", e.pub("internet"), "--note", "CHG-1: reviewed", b0)
	e.importInto(t, storeA, e.pub("internet"), b0)

	// A -> B, full, in volumes.
	x1, out := e.fromStore(t, storeA, "a", "a1", "--split", "8MiB")
	t.Logf("export --from-store A --split:\n%s", out)
	if _, err := os.Stat(x1 + ".003"); err != nil || !strings.Contains(out, "a1.bundle.000") {
		t.Fatalf("not split into an index and three volumes: %v", err)
	}
	x1 += ".000"
	e.chainPolicy(t, storeB, "internet")
	out = e.importInto(t, storeB, e.pub("a"), x1)
	if !strings.Contains(out, "chain of custody: 1 hop(s), every signature checked again, each signed by a key of the chain keyring") {
		t.Errorf("B's import does not say the chain was checked against its policy:\n%s", out)
	}

	// B -> C, full, over a one-way link; --json keeps the conventions.
	y1 := e.path("b1.bundle")
	stdout, _, code := harness.RunSplit(t, e.work, nil, "export", "--from-store", storeB, "--sign-key", e.sec("b"), "--out", y1, "--json")
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || code != 0 || sum["ok"] != true || sum["chain_hops"] != 2.0 {
		t.Fatalf("export --from-store --json (exit %d): %v\n%s", code, err, stdout)
	}
	harness.CheckJSONConventions(t, "export --from-store --json", sum)
	e.chainPolicy(t, storeC, "internet", "a")
	e.importInto(t, storeC, e.pub("b"), y1)

	// The internet brings A one more version and withdraws another; A sends
	// B a delta against what it sent before, and B sends C one.
	b0w := e.internetExport(t, "internet2", `
platforms = ["linux_amd64"]
provider "hashicorp/random" { versions = "3.5.1" }
withdraw "hashicorp/random" {
  versions = "3.6.0"
  reason   = "withdrawn on the internet side"
}
`)
	harness.MustRun(t, e.work, nil, harness.Bin, "approve", "--key", e.sec("station"), "--keyring", e.pub("internet"), b0w)
	e.importInto(t, storeA, e.pub("internet"), b0w)
	x2, out := e.fromStore(t, storeA, "a", "a2", "--since", x1)
	if !strings.Contains(out, "delta against") {
		t.Errorf("A's second export is not a delta:\n%s", out)
	}
	e.importInto(t, storeB, e.pub("a"), x2)
	y2, out := e.fromStore(t, storeB, "b", "b2", "--since", y1)
	t.Logf("export --from-store B --since:\n%s", out)
	out = e.importInto(t, storeC, e.pub("b"), y2)
	t.Logf("import into C:\n%s", out)

	// verify on C's side shows every hop.
	rev := harness.MustRun(t, e.work, nil, harness.Bin, "verify", "--keyring", e.pub("b"), y1)
	t.Logf("verify of B's full bundle:\n%s", rev)
	for _, want := range []string{"Chain of custody (3 hops", "hop 1: bundle", "Site Ops <ops@site.test>", "hop 2: bundle", "Enclave A <ops@a.test>",
		"hop 3: this bundle", "Enclave B <ops@b.test>", "signature checked", "every entry, package and gate result is tied", "came with hop 1",
		"approved at the transfer station by", "Station A <station@a.test>", "approval checked"} {
		if !strings.Contains(rev, want) {
			t.Errorf("verify lacks %q", want)
		}
	}
	rev2 := harness.MustRun(t, e.work, nil, harness.Bin, "verify", "--keyring", e.pub("b"), y2)
	t.Logf("verify of B's delta:\n%s", rev2)
	if !strings.Contains(rev2, "Chain of custody (3 hops") || strings.Contains(rev2, "not all of its manifest") {
		t.Errorf("the review of a delta does not check its whole chain")
	}
	stdout, _, code = harness.RunSplit(t, e.work, nil, "verify", "--keyring", e.pub("b"), "--json", y1)
	var vj map[string]any
	if err := json.Unmarshal([]byte(stdout), &vj); err != nil || code != 0 {
		t.Fatalf("verify --json: %v\n%s", err, stdout)
	}
	harness.CheckJSONConventions(t, "verify --json of a chain", vj)
	if chain, _ := vj["chain"].([]any); len(chain) != 3 || chain[0].(map[string]any)["status"] != "checked" || chain[2].(map[string]any)["status"] != "this_bundle" {
		t.Errorf("verify --json chain: %v", vj["chain"])
	}

	// Withdrawn on the internet side, withdrawn on C.
	invC := inventoryJSON(t, storeC)
	wd, _ := json.Marshal(invC["withdrawn"])
	if !bytes.Contains(wd, []byte(`"version":"3.6.0"`)) || !bytes.Contains(wd, []byte("withdrawn on the internet side")) {
		t.Errorf("C does not have random 3.6.0 withdrawn: %s", wd)
	}

	// Clients install from C with the lock made on the internet.
	srv := harness.StartServe(t, storeC)
	base, caFile := srv.Base, srv.CAFile
	cfg := harness.MustRun(t, e.work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry")
	rc := e.path("c.tfrc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	for _, client := range []struct{ name, bin string }{{"terraform 1.11", tf}, {"terraform " + harness.TerraformNewVersion, harness.TerraformNewBin(t)}} {
		dir := filepath.Join(t.TempDir(), "project")
		harness.CopyTree(t, ref, dir)
		harness.MustRun(t, dir, offline, client.bin, "init", "-input=false", "-no-color", "-lockfile=readonly")
		if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); !bytes.Equal(got, refLock) {
			t.Errorf("%s: the lock file made on the internet changed on C:\n%s", client.name, got)
		}
	}
	harness.TofuOfflineInit(t, e.work, base, caFile, "registry")
}

// TestEnclaveRefusals: what an export from a store and the next
// enclave's import refuse, each naming what was wrong with a hint and
// leaving the store as it was: a bit flipped in a blob of A (found while
// the bundle is written to a temporary file, which is removed: the
// directory holds afterwards exactly what it held before), a manifest naming what A lacks, a --have of A's own
// inventory, a hop signed by a key C's chain policy does not trust, a
// publisher key C's pins do not have, and a version C withdrew.
func TestEnclaveRefusals(t *testing.T) {
	t.Parallel()
	e := newEnclaves(t)
	storeA, storeB, storeC := e.path("storeA"), e.path("storeB"), e.path("storeC")
	b0 := e.internetExport(t, "internet", `
platforms = ["linux_amd64"]
provider "hashicorp/random" { versions = "3.6.2" }
module "example/sub/aws" {}
`)
	e.importInto(t, storeA, e.pub("internet"), b0)
	refused := func(t *testing.T, root string, args []string, want ...string) {
		t.Helper()
		before := bundletest.Snapshot(t, root)
		out, err := harness.CmdRun(t, e.work, nil, harness.Bin, args...)
		if err == nil {
			t.Fatalf("%s: accepted:\n%s", strings.Join(args, " "), out)
		}
		t.Logf("%s refused:\n%s", args[0], out)
		for _, w := range append(want, "hint:") {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the message lacks %q:\n%s", args[0], w, out)
			}
		}
		bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
	}

	t.Run("flipped bit", func(t *testing.T) {
		inv := inventoryJSON(t, storeA)
		pk := inv["catalog"].(map[string]any)["providers"].([]any)[0].(map[string]any)["packages"].([]any)[0].(map[string]any)
		digest := pk["digest"].(string)
		blob := filepath.Join(storeA, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
		flip := func() {
			os.Chmod(blob, 0o644)
			b, _ := os.ReadFile(blob)
			b[len(b)/2] ^= 0x10
			os.WriteFile(blob, b, 0o444)
		}
		flip()
		defer flip()
		out := e.path("flipped.bundle")
		listing := func() []string {
			t.Helper()
			ents, err := os.ReadDir(e.work)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range ents {
				names = append(names, d.Name())
			}
			return names
		}
		before := listing()
		refused(t, storeA, []string{"export", "--from-store", storeA, "--sign-key", e.sec("a"), "--out", out},
			"is damaged", digest[:19], "provider registry.terraform.io/hashicorp/random 3.6.2 linux_amd64", blob, "nothing was left behind")
		if after := listing(); !slices.Equal(before, after) {
			t.Errorf("a refused export changed the directory of --out:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("what the store lacks", func(t *testing.T) {
		mf := e.path("lacks.hcl")
		os.WriteFile(mf, []byte("provider \"hashicorp/aws\" {\n  versions = \"~> 5.0\"\n}\n"), 0o644)
		refused(t, storeA, []string{"export", "--from-store", storeA, "--manifest", mf, "--sign-key", e.sec("a"), "--out", e.path("lacks.bundle")},
			"registry.terraform.io/hashicorp/aws", "the store has no version matching ~> 5.0", "airgap inventory")
		refused(t, storeA, []string{"export", "--from-store", storeA, "hashicorp/random@3.5.1", "--sign-key", e.sec("a"), "--out", e.path("lacks.bundle")},
			"hashicorp/random@3.5.1 is not in the store")
	})

	t.Run("have of the same store", func(t *testing.T) {
		have := e.path("have-a.json")
		os.WriteFile(have, []byte(harness.MustRun(t, e.work, nil, harness.Bin, "inventory", "--store", storeA, "--json")), 0o644)
		refused(t, storeA, []string{"export", "--from-store", storeA, "--have", have, "--sign-key", e.sec("a"), "--out", e.path("have.bundle")},
			"pointless --have", "this store's own inventory")
	})

	// A -> B -> C.
	x1, _ := e.fromStore(t, storeA, "a", "a1")
	e.chainPolicy(t, storeB, "internet")
	e.importInto(t, storeB, e.pub("a"), x1)
	y1, _ := e.fromStore(t, storeB, "b", "b1")
	// C takes from the internet side directly too, so it is a store with
	// content before the refusals.
	e.chainPolicy(t, storeC, "internet")
	e.importInto(t, storeC, e.pub("internet"), e.internetExport(t, "direct", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/null\" {}\n"))

	t.Run("hop not trusted", func(t *testing.T) {
		// The transfer station's forecast, from C's inventory, says so.
		have := e.path("have-c.json")
		os.WriteFile(have, []byte(harness.MustRun(t, e.work, nil, harness.Bin, "inventory", "--store", storeC, "--json")), 0o644)
		out, err := harness.CmdRun(t, e.work, nil, harness.Bin, "verify", "--keyring", e.pub("b"), "--against", have, y1)
		if harness.ExitCode(err) != 4 || !strings.Contains(out, "import will refuse: the bundle as a whole (chain)") || !strings.Contains(out, "Enclave A <ops@a.test>) is not trusted") {
			t.Errorf("verify --against C's inventory (exit %d) does not forecast the refusal:\n%s", harness.ExitCode(err), out)
		}
		refused(t, storeC, []string{"import", "--keyring", e.pub("b"), "--store", storeC, y1},
			"chain of custody is not trusted here", "hop 2 of 3", "Enclave A <ops@a.test>", "not in the chain keyring", "the store was not changed")
	})

	e.chainPolicy(t, storeC, "internet", "a")
	t.Run("publisher key not pinned", func(t *testing.T) {
		pins := e.path("pins.hcl")
		os.WriteFile(pins, []byte("namespace \"registry.terraform.io/hashicorp\" {\n  keys = [\"0123 4567 89AB CDEF 0123  4567 89AB CDEF 0123 4567\"]\n}\n"), 0o644)
		refused(t, storeC, []string{"import", "--keyring", e.pub("b"), "--store", storeC, "--publisher-pins", pins, y1},
			"registry.terraform.io/hashicorp", "pins file", "the store was not changed")
	})

	t.Run("withdrawn here", func(t *testing.T) {
		e.importInto(t, storeC, e.pub("internet"), e.internetExport(t, "withdraw-c", "withdraw \"hashicorp/random\" {\n  versions = \"3.6.2\"\n  reason   = \"not on this network\"\n}\n"))
		refused(t, storeC, []string{"import", "--keyring", e.pub("b"), "--store", storeC, y1},
			"registry.terraform.io/hashicorp/random 3.6.2", "not on this network", "the store was not changed")
	})
}

// TestEnclaveSelect: what an export from a store carries when it is told
// what: a project (its lock file's versions exactly, the modules it calls
// and, followed from the store, what they call and require), a manifest
// (constraints, latest, platforms) and addresses. The project's bundle
// alone makes terraform init work on the next network with the lock file
// made on the internet.
func TestEnclaveSelect(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	e := newEnclaves(t)
	ref := e.path("reference")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(harness.E2EProject), 0o644)
	harness.MustRun(t, ref, e.online, tf, "init", "-input=false", "-no-color")
	refLock, _ := os.ReadFile(filepath.Join(ref, ".terraform.lock.hcl"))
	storeA, storeB := e.path("storeA"), e.path("storeB")
	e.importInto(t, storeA, e.pub("internet"), e.internetExport(t, "internet", harness.E2EManifest))

	content := func(t *testing.T, b string) []string {
		t.Helper()
		stdout, _, code := harness.RunSplit(t, e.work, nil, "verify", "--keyring", e.pub("a"), "--json", b)
		var r harness.Review
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
			t.Fatalf("verify --json (exit %d): %v\n%s", code, err, stdout)
		}
		var out []string
		for _, p := range r.Providers {
			var plats []string
			for _, pk := range p.Platforms {
				plats = append(plats, pk.Platform)
			}
			out = append(out, p.Address+" "+p.Version+" "+strings.Join(plats, ","))
		}
		for _, m := range r.Modules {
			out = append(out, m.Address+" "+m.Version)
		}
		return out
	}
	same := func(t *testing.T, what string, got, want []string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s carries:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	proj, _ := e.fromStore(t, storeA, "a", "project", "--from", ref)
	same(t, "--from the project", content(t, proj), []string{
		"registry.terraform.io/hashicorp/null 3.2.2 darwin_arm64,linux_amd64",
		"registry.terraform.io/hashicorp/random 3.6.2 darwin_arm64,linux_amd64,windows_amd64",
		"registry.terraform.io/example/sub/aws 2.0.0",
		"registry.terraform.io/example/subnet/aws 2.1.0",
		"registry.terraform.io/example/vpc/aws 1.0.0",
	})
	mf := e.path("pick.hcl")
	os.WriteFile(mf, []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {\n  versions = \"~> 3.5\"\n  all      = true\n}\n"), 0o644)
	pick, _ := e.fromStore(t, storeA, "a", "pick", "--manifest", mf)
	same(t, "--manifest", content(t, pick), []string{
		"registry.terraform.io/hashicorp/random 3.6.0 linux_amd64",
		"registry.terraform.io/hashicorp/random 3.6.2 linux_amd64",
	})
	addrs, _ := e.fromStore(t, storeA, "a", "addrs", "registry.opentofu.org/hashicorp/local@2.5.1", "example/sub/aws")
	same(t, "addresses", content(t, addrs), []string{
		"registry.opentofu.org/hashicorp/local 2.5.1 darwin_arm64,linux_amd64,windows_amd64",
		"registry.terraform.io/example/sub/aws 2.0.0",
	})

	e.importInto(t, storeB, e.pub("a"), proj)
	srv := harness.StartServe(t, storeB)
	base, caFile := srv.Base, srv.CAFile
	cfg := harness.MustRun(t, e.work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", "registry")
	rc := e.path("b.tfrc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	dir := filepath.Join(t.TempDir(), "project")
	harness.CopyTree(t, ref, dir)
	harness.MustRun(t, dir, []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile, "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"},
		tf, "init", "-input=false", "-no-color", "-lockfile=readonly")
	if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); !bytes.Equal(got, refLock) {
		t.Errorf("the lock file made on the internet changed on B:\n%s", got)
	}
}

// rewriteBundle writes a copy of the bundle at path whose manifest mutate
// changed, signed by the secret key in keyFile: what a hostile enclave
// holding that key can make of a bundle.
func rewriteBundle(t *testing.T, path, keyring, keyFile string, mutate func(m *bundle.Manifest, files map[verify.Digest]string)) string {
	t.Helper()
	br := harness.OpenBundle(t, path, keyring)
	dir := t.TempDir()
	files := map[verify.Digest]string{}
	for {
		b, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, b.Digest.Hex())
		data, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		bundletest.WriteFile(t, p, data)
		files[b.Digest] = p
	}
	m := br.Manifest()
	mutate(m, files)
	key, err := verify.ReadSigningKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "forged.bundle")
	bundletest.WriteSignedManifest(t, out, m, files, key)
	return out
}

// TestEnclaveForgedApproval: an enclave that changes what its chain says
// about the station approvals of an earlier hop is refused: an approval
// recorded as by another station, or an approval of another bundle put in
// its place. Nothing changes in the next store.
func TestEnclaveForgedApproval(t *testing.T) {
	t.Parallel()
	e := newEnclaves(t)
	storeA, storeB := e.path("storeA"), e.path("storeB")
	os.MkdirAll(storeA, 0o755)
	st, _ := os.ReadFile(e.pub("station"))
	bundletest.WriteFile(t, filepath.Join(storeA, "stations.pub.asc"), st)
	bundletest.WriteFile(t, filepath.Join(storeA, "import.hcl"), []byte("approvals {\n  keyring  = \"stations.pub.asc\"\n  required = 1\n}\n"))
	for i, mf := range []string{"platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" { versions = \"3.6.2\" }\n",
		"platforms = [\"linux_amd64\"]\nprovider \"hashicorp/null\" {}\n"} {
		b := e.internetExport(t, fmt.Sprintf("internet%d", i), mf)
		harness.MustRun(t, e.work, nil, harness.Bin, "approve", "--key", e.sec("station"), "--keyring", e.pub("internet"), b)
		e.importInto(t, storeA, e.pub("internet"), b)
	}
	x1, _ := e.fromStore(t, storeA, "a", "a1")
	e.importInto(t, storeB, e.pub("internet"), e.internetExport(t, "direct", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" { versions = \"3.6.0\" }\n"))
	for _, c := range []struct {
		name   string
		mutate func(m *bundle.Manifest, files map[verify.Digest]string)
		want   string
	}{
		{"another station", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Chain[0].Approvals[0].Station.Identity = "Someone Else <x@y>"
		}, "records its approval"},
		{"an approval of another bundle", func(m *bundle.Manifest, _ map[verify.Digest]string) {
			m.Chain[0].Approvals[0], m.Chain[1].Approvals[0] = m.Chain[1].Approvals[0], m.Chain[0].Approvals[0]
		}, "approves another bundle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := rewriteBundle(t, x1, e.pub("a"), e.sec("a"), c.mutate)
			before := bundletest.Snapshot(t, storeB)
			out, err := harness.CmdRun(t, e.work, nil, harness.Bin, "import", "--keyring", e.pub("a"), "--store", storeB, forged)
			if err == nil || !strings.Contains(out, c.want) || !strings.Contains(out, "contradicts itself") || !strings.Contains(out, "the store was not changed") {
				t.Errorf("import of the forged chain: %v\n%s", err, out)
			}
			bundletest.SameTree(t, before, bundletest.Snapshot(t, storeB))
			if out, err := harness.CmdRun(t, e.work, nil, harness.Bin, "verify", "--keyring", e.pub("a"), forged); err == nil || !strings.Contains(out, c.want) {
				t.Errorf("verify of the forged chain: %v\n%s", err, out)
			}
		})
	}
}

// TestEnclaveKeyWithSeveralUserIDs: a key with several user IDs (made the
// same second, none marked primary) signs the bundle store A imports; A
// exports it onwards. The chain records the hop's signer by its identity,
// and the next enclave reads the key again: the identity must be the same
// every time (it was the first name a map gave, a different one at
// random, so verify refused an honest bundle as "contradicts itself" most
// of the time).
func TestEnclaveKeyWithSeveralUserIDs(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048, DefaultHash: crypto.SHA256}
	site, err := openpgp.NewEntity("Site Ops", "", "ops@site.test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 8; i++ {
		if err := site.AddUserId(fmt.Sprintf("Site Ops %d", i), "", fmt.Sprintf("ops%d@site.test", i), cfg); err != nil {
			t.Fatal(err)
		}
	}
	keyring := filepath.Join(work, "site.pub.asc")
	bundletest.WriteFile(t, keyring, []byte(bundletest.Armor(t, site)))
	first := filepath.Join(work, "first.bundle")
	bundletest.Standard(t, filepath.Join(work, "std"), site).WriteBundleFile(t, first, site, bundle.CompressionAuto)
	storeA := filepath.Join(work, "storeA")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", storeA, first)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", filepath.Join(work, "a"), "--name", "Enclave A <ops@a.test>", "--no-passphrase")
	x := filepath.Join(work, "a1.bundle")
	harness.MustRun(t, work, nil, harness.Bin, "export", "--from-store", storeA, "--sign-key", filepath.Join(work, "a.key.asc"), "--out", x)
	for i := range 4 {
		if out, err := harness.CmdRun(t, work, nil, harness.Bin, "verify", "--keyring", filepath.Join(work, "a.pub.asc"), x); err != nil {
			t.Fatalf("verify, run %d: %v\n%s", i+1, err, out)
		}
	}
	if got, want := verify.Identity(site), "Site Ops <ops@site.test>"; got != want {
		t.Errorf("identity %q, want the first in byte order %q", got, want)
	}
}
