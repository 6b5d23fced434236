package journey

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

var zhRe = regexp.MustCompile(`"(zh:[0-9a-f]{64})"`)

func zhHashes(t *testing.T, lock string) []string {
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range zhRe.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// TestJourney: stand-in internet -> reference terraform init -> keygen ->
// export (manifest and --from) -> verify -> import -> serve -> client-config
// -> offline terraform init / providers lock in both client-config modes.
func TestJourney(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"))
	work := t.TempDir()

	// 1. The reference: the real terraform against the stand-in internet.
	ref := filepath.Join(work, "reference")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(harness.E2EProject), 0o644)
	harness.MustRun(t, ref, online, tf, "init", "-input=false", "-no-color")
	refLock := filepath.Join(ref, ".terraform.lock.hcl")
	refZH := zhHashes(t, refLock)
	if len(refZH) != 3+2 { // random: 3 platforms; null: 2
		t.Fatalf("reference lock has %d zh hashes: %v", len(refZH), refZH)
	}

	// 2. Connected side.
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--name", "Site Ops <ops@site.test>", "--no-passphrase")
	if fi, _ := os.Stat(keys + ".key.asc"); fi.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v", fi.Mode())
	}
	if out, err := harness.CmdRun(t, work, nil, harness.Bin, "keygen", "--out", keys, "--no-passphrase"); err == nil || !strings.Contains(out, "refusing to overwrite") {
		t.Errorf("keygen overwrote a key: %s", out)
	}
	manifest := filepath.Join(work, "airgap.hcl")
	os.WriteFile(manifest, []byte(harness.E2EManifest), 0o644)
	cache := filepath.Join(work, "cache")
	b1 := filepath.Join(work, "site.bundle")
	env := append(online, "SOURCE_DATE_EPOCH=1767225600")
	out := harness.MustRun(t, work, env, harness.Bin, "export", "--manifest", manifest, "--sign-key", keys+".key.asc", "--out", b1, "--cache", cache)
	t.Log(out)
	// --from the project and its lock file.
	b2 := filepath.Join(work, "from.bundle")
	harness.MustRun(t, work, env, harness.Bin, "export", "--from", ref, "--platform", "linux_amd64", "--platform", "darwin_arm64",
		"--platform", "windows_amd64", "--sign-key", keys+".key.asc", "--out", b2, "--cache", cache)

	// 3. Transfer station.
	out = harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", keys+".pub.asc", b1)
	if !strings.Contains(out, "OK") || !strings.Contains(out, "Site Ops") {
		t.Errorf("verify output: %s", out)
	}

	// 4. Offline side.
	storeDir := filepath.Join(work, "store")
	for _, b := range []string{b1, b2} {
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b)
	}
	out = harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b1)
	if !strings.Contains(out, "already imported") {
		t.Errorf("re-import: %s", out)
	}
	srv := harness.StartServe(t, storeDir)
	base, caFile := srv.Base, srv.CAFile

	for _, mode := range []string{"registry", "mirror"} {
		t.Run(mode, func(t *testing.T) {
			rc := filepath.Join(t.TempDir(), "airgap.tfrc")
			cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", mode)
			os.WriteFile(rc, []byte(cfg), 0o644)
			offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
				"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}

			// The reference lock verifies unchanged offline.
			dir := filepath.Join(t.TempDir(), "project")
			harness.CopyTree(t, ref, dir)
			refBytes, _ := os.ReadFile(refLock)
			harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color", "-lockfile=readonly")
			// The installed bytes are a runnable plugin: validate starts it.
			if out := harness.MustRun(t, dir, offline, tf, "validate", "-no-color"); !strings.Contains(out, "Success") {
				t.Errorf("validate: %s", out)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); !bytes.Equal(got, refBytes) {
				t.Errorf("the reference lock file changed offline:\n%s", got)
			}
			// A fresh offline lock: registry mode holds the same zh: hashes.
			fresh := filepath.Join(t.TempDir(), "fresh")
			os.MkdirAll(fresh, 0o755)
			os.WriteFile(filepath.Join(fresh, "main.tf"), []byte(harness.E2EProject), 0o644)
			harness.MustRun(t, fresh, offline, tf, "init", "-input=false", "-no-color")
			if mode == "registry" {
				if got := zhHashes(t, filepath.Join(fresh, ".terraform.lock.hcl")); strings.Join(got, ",") != strings.Join(refZH, ",") {
					t.Errorf("offline lock zh hashes differ from the reference:\n got %v\nwant %v", got, refZH)
				}
			}
			// providers lock for several platforms, offline.
			lockArgs := []string{"providers", "lock", "-no-color", "-platform=linux_amd64", "-platform=darwin_arm64"}
			if mode == "mirror" {
				// providers lock ignores provider_installation; it takes the mirror explicitly.
				lockArgs = append(lockArgs, "-net-mirror="+base+"mirror/")
			}
			harness.MustRun(t, fresh, offline, tf, lockArgs...)
			if mode == "registry" {
				if got := zhHashes(t, filepath.Join(fresh, ".terraform.lock.hcl")); strings.Join(got, ",") != strings.Join(refZH, ",") {
					t.Errorf("after providers lock, zh hashes differ from the reference:\n got %v\nwant %v", got, refZH)
				}
			}
			// Modules were installed from the appliance, including the nested one.
			modsJSON, _ := os.ReadFile(filepath.Join(fresh, ".terraform", "modules", "modules.json"))
			for _, k := range []string{`"vpc"`, `"vpc.subnet"`, `"sub"`} {
				if !bytes.Contains(modsJSON, []byte(k)) {
					t.Errorf("module %s not installed offline: %s", k, modsJSON)
				}
			}
			if _, err := os.Stat(filepath.Join(fresh, ".terraform", "modules", "sub", "modules", "sub", "main.tf")); err != nil {
				t.Errorf("the //subdir module was not unpacked at its subdirectory: %v", err)
			}
			// A module whose registry answers only with a JSON location
			// (registry.opentofu.org style; Terraform cannot use that
			// upstream) installs offline: the appliance sends both forms.
			tofuMod := filepath.Join(t.TempDir(), "tofu-module")
			os.MkdirAll(tofuMod, 0o755)
			os.WriteFile(filepath.Join(tofuMod, "main.tf"), []byte("module \"t\" {\n  source = \"registry.opentofu.org/example/tofu/aws\"\n}\n"), 0o644)
			harness.MustRun(t, tofuMod, offline, tf, "init", "-input=false", "-no-color")
			if _, err := os.Stat(filepath.Join(tofuMod, ".terraform", "modules", "t", "main.tf")); err != nil {
				t.Errorf("the JSON-location module was not installed offline: %v", err)
			}
			t.Run("tofu", func(t *testing.T) { harness.TofuOfflineInit(t, work, base, caFile, mode) })
		})
	}
	_ = context.Background
}
