package export_test

// ATTACK TESTS (atk-upstream review). Each TestAttack* asserts the behaviour a
// user depends on; one that FAILS on the reviewed main is a finding (see the
// review report), one that passes is an attack correctly refused.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/verify"
)

func atkMPI(n *big.Int) []byte {
	b := n.Bytes()
	return append([]byte{byte(n.BitLen() >> 8), byte(n.BitLen())}, b...)
}

func atkPacket(tag byte, body []byte) []byte {
	h := []byte{0xC0 | tag, 0xFF, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[2:], uint32(len(body)))
	return append(h, body...)
}

func atkRand(bits int) *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	n.SetBit(n, bits-1, 1)
	n.SetBit(n, 0, 1)
	return n
}

// atkHugeDSAKey is an armored OpenPGP public key whose DSA parameters p and q
// have `bits` bits, with one user ID and a (bogus) v4 self-signature: the
// few kilobytes a registry's download document can carry in
// signing_keys.gpg_public_keys[].ascii_armor.
func atkHugeDSAKey(bits int) string {
	p, q := atkRand(bits), atkRand(bits)
	g, y := atkRand(bits-8), atkRand(bits-8)
	var pk bytes.Buffer
	pk.Write([]byte{4, 0x60, 0, 0, 0, 17})
	for _, n := range []*big.Int{p, q, g, y} {
		pk.Write(atkMPI(n))
	}
	body := pk.Bytes()
	h := sha1.New()
	h.Write([]byte{0x99, byte(len(body) >> 8), byte(len(body))})
	h.Write(body)
	keyID := h.Sum(nil)[12:20]
	var sig bytes.Buffer
	hashed := []byte{5, 2, 0x60, 0, 0, 1} // creation time
	sig.Write([]byte{4, 0x13, 17, 8, 0, byte(len(hashed))})
	sig.Write(hashed)
	sig.Write([]byte{0, 10, 9, 16})
	sig.Write(keyID)
	sig.Write([]byte{0xAB, 0xCD}) // hash tag: not checked for v4
	sig.Write(atkMPI(atkRand(bits - 8)))
	sig.Write(atkMPI(new(big.Int).Sub(q, big.NewInt(1)))) // s = q-1: always invertible, both exponents full size
	var raw []byte
	raw = append(raw, atkPacket(6, body)...)
	raw = append(raw, atkPacket(13, []byte("attacker <a@evil.example>"))...)
	raw = append(raw, atkPacket(2, sig.Bytes())...)
	var out bytes.Buffer
	w, _ := armor.Encode(&out, "PGP PUBLIC KEY BLOCK", nil)
	w.Write(raw)
	w.Close()
	return out.String()
}

// FINDING: signing keys from the registry are parsed (and their
// self-signatures verified) with no bound on the key's size. A DSA key with
// 16384-bit parameters (a 17 KiB armored string) costs seconds of CPU; the
// largest an MPI allows (65535 bits, ~35 KiB) costs minutes per key, in a
// computation that ignores the context, so Ctrl-C does not stop the export.
// Honest publisher keys are RSA 2048/4096 or Ed25519 and parse in
// milliseconds.
func TestAttackHugeDSASigningKeyCPU(t *testing.T) {
	key := atkHugeDSAKey(16384)
	start := time.Now()
	_, err := verify.ReadKeyring(strings.NewReader(key))
	el := time.Since(start)
	t.Logf("armored key %d bytes: ReadKeyring took %s (err: %v)", len(key), el.Round(time.Millisecond), err)
	if el > time.Second {
		t.Errorf("a %d-byte registry-supplied key cost %s of CPU to refuse", len(key), el.Round(time.Millisecond))
	}
}

// FINDING: a registry's module location may name a git repository on the
// exporting machine ("git::file:///home/user/private", or "git::/path"): the
// export clones it and carries its files into the bundle. (Terraform refuses
// plain local paths as registry locations, though not git::file://.) A
// registry should never choose what is read from the user's disk.
func TestAttackRegistryLocationReadsLocalRepo(t *testing.T) {
	in := registrytest.New(t)
	gitEnv(t, in)
	private := filepath.Join(t.TempDir(), "private")
	for _, args := range [][]string{{"init", "-q", "-b", "main", private},
		{"-C", private, "-c", "user.name=v", "-c", "user.email=v@v", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(private, "main.tf"), []byte("# SECRET=hunter2\n"), 0o644)
	for _, args := range [][]string{{"-C", private, "add", "-A"}, {"-C", private, "-c", "user.name=v", "-c", "user.email=v@v", "commit", "-q", "-m", "s"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	in.AddModule("registry.terraform.io", "evil", "steal", "aws", "1.0.0", "git::file://"+private)
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nmodule \"evil/steal/aws\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), bundletest.Key(t, "site")))
	if err == nil {
		t.Errorf("the registry made the export read %s from the local disk: module %s, archive %s",
			private, res.Manifest.Catalog.Modules[0].Source, res.Manifest.Catalog.Modules[0].Archive)
	}
}

// FINDING: the SHA256SUMS check is cached by shasums_url across providers and
// registries. A hostile registry listed first (evil/x) names hashicorp/null's
// genuine SHA256SUMS URL, with its own signature over those bytes and its own
// key: hashicorp/null's entry in the bundle then carries the attacker's key and
// signature instead of HashiCorp's, and its own registry's keys are never
// checked. (The package bytes are still the genuine ones.)
func TestAttackShasumsCheckSharedAcrossRegistries(t *testing.T) {
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
	res, err := export.Run(context.Background(), req, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range res.Manifest.Catalog.Providers {
		if pv.Namespace == "hashicorp" {
			for _, k := range pv.SigningKeys {
				if k.KeyID == verify.KeyID(attacker) {
					t.Errorf("hashicorp/null 3.2.2 in the bundle is vouched for by the attacker's key %s (registry evil/x chose it)", k.KeyID)
				}
			}
		}
	}
}
