package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// terraformNewVersion is the newer Terraform of the client matrix: the
// first release with const variables in module sources.
const terraformNewVersion = "1.15.9"

// terraformNewEnv names the Terraform 1.15.9 binary the suite uses;
// .ci/run sets it after unpacking and checking ../shared/clients.
const terraformNewEnv = "AIRGAP_TEST_TERRAFORM_NEW"

// sharedClients is where the project keeps client binaries that cannot be
// built from the Go module proxy (its README says how they were built),
// relative to the repository.
var sharedClients = filepath.Join("..", "shared", "clients")

var (
	tfNewOnce           sync.Once
	tfNewPath, tfNewErr string
)

// terraformNewBin returns Terraform 1.15.9: $AIRGAP_TEST_TERRAFORM_NEW
// if set, else the binary unpacked once from
// ../shared/clients/terraform-1.15.9-linux-amd64.xz into the test cache
// and checked against ../shared/clients/SHA256SUMS. Either way it must say
// it is 1.15.9. A missing or wrong binary fails the test: the newer
// Terraform must not go untested.
func terraformNewBin(t *testing.T) string {
	t.Helper()
	tfNewOnce.Do(func() { tfNewPath, tfNewErr = findTerraformNew() })
	if tfNewErr != "" {
		t.Fatalf("terraform %s is required by the client matrix: %s\nhint: set %s to a Terraform %s binary, or keep the project's ../shared/clients/terraform-%s-linux-amd64.xz and SHA256SUMS in place (.ci/run unpacks them)",
			terraformNewVersion, tfNewErr, terraformNewEnv, terraformNewVersion, terraformNewVersion)
	}
	return tfNewPath
}

func findTerraformNew() (string, string) {
	bin := os.Getenv(terraformNewEnv)
	if bin == "" {
		var err error
		if bin, err = unpackSharedTerraform(); err != nil {
			return "", err.Error()
		}
	}
	if v, err := clientVersion(bin); err != nil {
		return "", fmt.Sprintf("%s: %v", bin, err)
	} else if v != terraformNewVersion {
		return "", fmt.Sprintf("%s is Terraform %s, not %s", bin, v, terraformNewVersion)
	}
	return bin, ""
}

// unpackSharedTerraform unpacks ../shared/clients' Terraform into the test
// cache (once; later runs re-check the cached copy's sha256) and returns
// its path.
func unpackSharedTerraform() (string, error) {
	return unpackShared("terraform-"+terraformNewVersion+"-linux-amd64", "terraform-"+terraformNewVersion)
}

// unpackShared unpacks ../shared/clients/NAME.xz into the test cache as
// bin, checked against ../shared/clients/SHA256SUMS (a cached copy is
// checked again and kept when it matches), and returns its path.
func unpackShared(name, bin string) (string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("../shared/clients holds linux_amd64 builds only, and this is %s_%s", runtime.GOOS, runtime.GOARCH)
	}
	want, err := sharedSum(name)
	if err != nil {
		return "", err
	}
	dir, err := testCacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin = filepath.Join(dir, bin)
	if got, err := fileSHA256(bin); err == nil && got == want {
		return bin, nil
	}
	xz, err := exec.LookPath("xz")
	if err != nil {
		return "", fmt.Errorf("xz is not installed (Debian package xz-utils): it unpacks %s.xz", name)
	}
	f, err := os.CreateTemp(dir, filepath.Base(bin)+".partial-*")
	if err != nil {
		return "", err
	}
	part := f.Name()
	cmd := exec.Command(xz, "-dc", filepath.Join(sharedClients, name+".xz"))
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(part, 0o755)
	}
	if err != nil {
		os.Remove(part)
		return "", fmt.Errorf("unpacking %s.xz: %v %s", filepath.Join(sharedClients, name), err, stderr.String())
	}
	if got, err := fileSHA256(part); err != nil || got != want {
		os.Remove(part)
		return "", fmt.Errorf("%s.xz unpacks to sha256 %s, SHA256SUMS says %s (%v)", filepath.Join(sharedClients, name), got, want, err)
	}
	return bin, os.Rename(part, bin)
}

// sharedSum is the sha256 ../shared/clients/SHA256SUMS gives for name.
func sharedSum(name string) (string, error) {
	f, err := os.Open(filepath.Join(sharedClients, "SHA256SUMS"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, file, ok := strings.Cut(sc.Text(), "  "); ok && file == name && len(sum) == 64 {
			return sum, nil
		}
	}
	return "", fmt.Errorf("%s has no line for %s", filepath.Join(sharedClients, "SHA256SUMS"), name)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// clientVersion asks a terraform or tofu binary for its version.
func clientVersion(bin string) (string, error) {
	cmd := exec.Command(bin, "version", "-json")
	cmd.Env = baseEnv()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version -json: %v", bin, err)
	}
	var v struct {
		TerraformVersion string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.TerraformVersion == "" {
		return "", fmt.Errorf("%s version -json printed %q", bin, out)
	}
	return v.TerraformVersion, nil
}

// matrixClient is one client of the matrix and the modes it supports.
type matrixClient struct {
	tool, version, bin string
	modes              []string
}

func (c matrixClient) String() string { return c.tool + " " + c.version }

// matrixClients returns every client of the matrix: terraform 1.11 (on
// PATH) and 1.15.9, tofu 1.11.14 and 1.12.6. The Terraform unpack runs
// beside the tofu builds (cached after the first run); the two tofu builds
// run one after the other, because the second reuses most of the packages
// the first compiled: measured with an empty build cache, 288 + 148 s of
// CPU in sequence against 296 + 296 s at the same time, on 2 cores that
// either way keep busy.
func matrixClients(t *testing.T) []matrixClient {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { tfNewOnce.Do(func() { tfNewPath, tfNewErr = findTerraformNew() }) })
	for _, v := range []string{tofuVersion, tofuNewVersion} {
		buildTofu(v)
	}
	wg.Wait()
	tfOld := terraformBin(t)
	out := []matrixClient{
		{tool: "terraform", bin: tfOld},
		{tool: "terraform", bin: terraformNewBin(t)},
		{tool: "tofu", bin: tofuBinVersion(t, tofuVersion)},
		{tool: "tofu", bin: tofuBinVersion(t, tofuNewVersion)},
	}
	for i := range out {
		v, err := clientVersion(out[i].bin)
		if err != nil {
			t.Fatal(err)
		}
		// tofu built from its module calls itself "1.12.6-dev" (its release
		// build sets the pre-release part to empty at link time).
		out[i].version = strings.TrimSuffix(v, "-dev")
		out[i].modes = []string{"registry", "mirror", "dns"}
		if out[i].tool == "tofu" {
			out[i].modes = append(out[i].modes, "oci")
		}
	}
	if !strings.HasPrefix(out[0].version, "1.11.") {
		t.Fatalf("terraform on PATH is %s: the suite tests Terraform 1.11 there (and %s from %s)", out[0].version, terraformNewVersion, terraformNewEnv)
	}
	return out
}
