package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/verify"
	"github.com/airgap/airgap/verify/verifytest"
)

// TestHugeSigningKeyFailsFast: a registry's signing key with 65535-bit DSA
// parameters (minutes of CPU to check its self-signature) fails the export
// at once with ErrKeyRefused and a hint, before anything is downloaded.
func TestHugeSigningKeyFailsFast(t *testing.T) {
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "x", "1.0.0", []string{"linux_amd64"}, 4<<10)
	pk := bp.Packages[0]
	u := func(name string) string {
		return "https://" + registrytest.PackageURL("registry.terraform.io", "x", "1.0.0", name)
	}
	in.Handle("registry.terraform.io/v1/providers/evil/x/1.0.0/download/linux/amd64", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": pk.Filename,
			"download_url": u(pk.Filename), "shasums_url": u(bp.ShasumsName), "shasums_signature_url": u(bp.ShasumsName + ".sig"), "shasum": pk.Digest.Hex(),
			"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{"key_id": "0000000000000000", "ascii_armor": verifytest.HugeDSA(65535)}}},
		})
	}))
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nprovider \"evil/x\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = export.Run(context.Background(), req, options(t, in, t.TempDir(), bundletest.Key(t, "site")))
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %s", el)
	}
	if !errors.Is(err, verify.ErrKeyRefused) || !strings.Contains(err.Error(), "DSA with 65535-bit p") || !strings.Contains(err.Error(), "hint:") {
		t.Fatalf("err = %v, want ErrKeyRefused naming the DSA size, with a hint", err)
	}
	if n := in.Downloaded(pk.Filename); n != 0 {
		t.Errorf("the package was downloaded %d times", n)
	}
}

// TestShasumsCheckPerProviderVersion: a hostile registry entry listed first
// (evil/x) names hashicorp/null's genuine SHA256SUMS URL and package with
// its own signature over those bytes and its own key. Two defences stand:
// the package name must be terraform-provider-x_1.0.0_OS_ARCH.zip, so
// evil/x is refused outright (what this test asserts); and the SHA256SUMS
// check is cached per provider version, URLs and keys, so even a
// relabelled entry could not lend its verdict to hashicorp/null's.
func TestShasumsCheckPerProviderVersion(t *testing.T) {
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "hashicorp", "null", "3.2.2", []string{"linux_amd64"}, 4<<10)
	in.AddProvider(t, "registry.terraform.io", "evil", "x", "1.0.0", []string{"linux_amd64"}, 4<<10)
	pk := bp.Packages[0]
	sumsURL := "https://" + registrytest.PackageURL("registry.terraform.io", "null", "3.2.2", bp.ShasumsName)
	sums, err := os.ReadFile(bp.Files[bp.ShasumsName])
	if err != nil {
		t.Fatal(err)
	}
	attacker := bundletest.Key(t, "attacker")
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, attacker, bytes.NewReader(sums), time.Now()); err != nil {
		t.Fatal(err)
	}
	armored, _ := verify.PublicArmor(attacker)
	in.Handle("releases.hashicorp.com/evil.sig", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(sig.Bytes()) }))
	in.Handle("registry.terraform.io/v1/providers/evil/x/1.0.0/download/linux/amd64", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": pk.Filename,
			"download_url": "https://" + registrytest.PackageURL("registry.terraform.io", "null", "3.2.2", pk.Filename),
			"shasums_url":  sumsURL, "shasums_signature_url": "https://releases.hashicorp.com/evil.sig", "shasum": pk.Digest.Hex(),
			"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{"key_id": verify.KeyID(attacker), "ascii_armor": armored}}},
		})
	}))
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nprovider \"evil/x\" {}\nprovider \"hashicorp/null\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := options(t, in, t.TempDir(), bundletest.Key(t, "site"))
	opt.Jobs = 1 // evil/x's task first, deterministically
	_, err = export.Run(context.Background(), req, opt)
	if err == nil || !strings.Contains(err.Error(), "evil/x") || !strings.Contains(err.Error(), "terraform-provider-x_1.0.0_linux_amd64.zip") {
		t.Fatalf("err = %v, want evil/x refused for naming another provider's package", err)
	}
}
