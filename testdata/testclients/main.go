// Command testclients fetches the client the test suite needs and cannot
// build from the Go module proxy — Terraform 1.15.9 (its backends are
// nested modules a module zip leaves out) — from HashiCorp's release site,
// checked, into the test cache, where the suite finds it ('make
// test-clients' runs it; a clone beside the project's ../shared/clients
// does not need it).
//
// The checks are the ones HashiCorp documents for its releases:
//
//  1. HashiCorp's public key is fetched from KEY_URL and accepted only if
//     its primary key has the fingerprint HashiCorp publishes (C874 011F
//     0AB4 0511 0D02 1055 3436 5D94 72D7 468F): the pinned fingerprint, not
//     the download, is the trust anchor;
//  2. terraform_V_SHA256SUMS must carry a good signature by that key
//     (terraform_V_SHA256SUMS.sig, judged as airgap judges every publisher
//     signature: verify.CheckSignature);
//  3. terraform_V_OS_ARCH.zip must have the sha256 its line says;
//  4. only the entry "terraform" is unpacked, to a temporary file in the
//     cache, renamed to terraform-V once complete (mode 0755).
//
// Bounds: the key and each checksum or signature file 1 MiB, the zip
// 256 MiB, the unpacked binary 512 MiB, each request 10 minutes; a
// failure leaves nothing in the cache. Every fetch is over https with the
// system's roots; proxies from the environment apply.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/verify"
)

// hashicorpFingerprint is HashiCorp's release signing key, as HashiCorp
// publishes it (https://www.hashicorp.com/security).
const hashicorpFingerprint = "C874011F0AB405110D02105534365D9472D7468F"

const (
	maxSmall  = 1 << 20   // the key, SHA256SUMS, its signature
	maxZip    = 256 << 20 // terraform's zip is about 30 MB
	maxBinary = 512 << 20 // the unpacked binary is about 100 MB
)

func main() {
	version := flag.String("version", "1.15.9", "the Terraform release")
	cache := flag.String("cache", defaultCache(), "the test cache ($AIRGAP_TEST_CACHE, default ~/.cache/airgap)")
	base := flag.String("base", "https://releases.hashicorp.com/terraform", "where the releases are")
	keyURL := flag.String("key-url", "https://www.hashicorp.com/.well-known/pgp-key.txt", "HashiCorp's public key")
	fpr := flag.String("fingerprint", hashicorpFingerprint, "the fingerprint the key must have")
	flag.Parse()
	bin, err := fetchTerraform(context.Background(), http.DefaultClient, *base, *keyURL, *fpr, *version, runtime.GOOS+"_"+runtime.GOARCH, *cache)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test-clients: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("Terraform %s: %s (checked against HashiCorp's signed SHA256SUMS); the test suite finds it there\n", *version, bin)
}

func defaultCache() string {
	if c := os.Getenv("AIRGAP_TEST_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "airgap")
}

// fetchTerraform does the four steps of the package comment and returns
// the binary's path in cache.
func fetchTerraform(ctx context.Context, cl *http.Client, base, keyURL, fpr, version, platform, cache string) (string, error) {
	keyDoc, err := get(ctx, cl, keyURL, maxSmall)
	if err != nil {
		return "", err
	}
	keyring, err := pinnedKey(keyDoc, fpr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", keyURL, err)
	}
	rel := strings.TrimSuffix(base, "/") + "/" + version + "/"
	sumsName := "terraform_" + version + "_SHA256SUMS"
	sums, err := get(ctx, cl, rel+sumsName, maxSmall)
	if err != nil {
		return "", err
	}
	sig, err := get(ctx, cl, rel+sumsName+".sig", maxSmall)
	if err != nil {
		return "", err
	}
	if _, err := verify.CheckSignature(keyring, bytes.NewReader(sums), sig); err != nil {
		return "", fmt.Errorf("%s is not signed by HashiCorp's key: %w", sumsName, err)
	}
	zipName := "terraform_" + version + "_" + platform + ".zip"
	want, err := sumFor(sums, zipName)
	if err != nil {
		return "", err
	}
	zipData, err := get(ctx, cl, rel+zipName, maxZip)
	if err != nil {
		return "", err
	}
	if got := sha256.Sum256(zipData); hex.EncodeToString(got[:]) != want {
		return "", fmt.Errorf("%s has sha256 %x, the signed %s says %s", zipName, got, sumsName, want)
	}
	return unpack(zipData, filepath.Join(cache, "terraform-"+version))
}

// pinnedKey reads a key document and keeps the key with fingerprint fpr.
func pinnedKey(doc []byte, fpr string) (openpgp.EntityList, error) {
	keys, err := verify.ReadKeyring(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if strings.EqualFold(verify.Fingerprint(k), fpr) {
			return openpgp.EntityList{k}, nil
		}
	}
	return nil, fmt.Errorf("no key with the fingerprint %s in it", verify.GroupFingerprint(fpr))
}

// sumFor is the sha256 the SHA256SUMS document gives for name.
func sumFor(sums []byte, name string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		if sum, file, ok := strings.Cut(sc.Text(), "  "); ok && file == name && verify.IsHex64(sum) {
			return strings.ToLower(sum), nil
		}
	}
	return "", fmt.Errorf("the signed SHA256SUMS has no line for %s", name)
}

// get fetches url over https, at most limit bytes, within 10 minutes.
func get(ctx context.Context, cl *http.Client, url string, limit int64) ([]byte, error) {
	if !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("%s: only https", url)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w\nhint: test-clients needs https access to releases.hashicorp.com and www.hashicorp.com; elsewhere, set AIRGAP_TEST_TERRAFORM_NEW to a Terraform binary", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("larger than %d MiB", limit>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return b, nil
}

// unpack writes the zip's "terraform" entry to dst (temp file, 0755,
// rename), at most maxBinary bytes.
func unpack(zipData []byte, dst string) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		return "", err
	}
	for _, f := range zr.File {
		if f.Name != "terraform" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		rc, err := f.Open()
		if err != nil {
			return "", err
		}
		defer rc.Close()
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".terraform-*")
		if err != nil {
			return "", err
		}
		n, err := io.Copy(tmp, io.LimitReader(rc, maxBinary+1))
		if err == nil && n > maxBinary {
			err = fmt.Errorf("the zip's terraform is larger than %d MiB", maxBinary>>20)
		}
		if err == nil {
			err = tmp.Chmod(0o755)
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dst)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return "", err
		}
		return dst, nil
	}
	return "", errors.New("the zip has no file named terraform")
}
