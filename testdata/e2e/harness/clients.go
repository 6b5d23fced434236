package harness

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

// TerraformNewVersion is the newer Terraform of the client matrix: the
// first release with const variables in module sources.
const TerraformNewVersion = "1.15.9"

// TerraformNewEnv names the Terraform 1.15.9 binary the suite uses.
const TerraformNewEnv = "AIRGAP_TEST_TERRAFORM_NEW"

// SharedClients is where the project keeps client binaries that cannot be
// built from the Go module proxy (its README says how they were built),
// beside the clone (../shared/clients): a clone elsewhere does not have it.
var SharedClients = filepath.Join(Root(), "..", "shared", "clients")

// TerraformNewRelease is where HashiCorp publishes Terraform 1.15.9, for
// the message when no copy is found ('make test-clients' fetches it).
const TerraformNewRelease = "https://releases.hashicorp.com/terraform/" + TerraformNewVersion + "/"

var (
	tfNewOnce           sync.Once
	tfNewPath, tfNewErr string
)

// TerraformNewBin returns Terraform 1.15.9 (findTerraformNew). A missing or
// wrong binary fails the test: the newer Terraform must not go untested.
func TerraformNewBin(t *testing.T) string {
	t.Helper()
	lookTerraformNew()
	if tfNewErr != "" {
		t.Fatal(tfNewErr)
	}
	return tfNewPath
}

// lookTerraformNew runs findTerraformNew once per test binary.
func lookTerraformNew() {
	tfNewOnce.Do(func() {
		cache, err := CacheDir()
		if err != nil {
			tfNewErr = err.Error()
			return
		}
		tfNewPath, tfNewErr = FindTerraformNew(os.Getenv(TerraformNewEnv), SharedClients, cache)
	})
}

// FindTerraformNew looks for Terraform 1.15.9, in this order: the binary
// env names ($AIRGAP_TEST_TERRAFORM_NEW); the project's xz archive in
// shared (../shared/clients relative to the clone), unpacked into cache
// once and checked against shared's SHA256SUMS; the copy in cache a
// previous run or 'make test-clients' left there. Whatever it finds must
// say it is 1.15.9. Where none has it, the error names the release to
// download and the variable to set.
func FindTerraformNew(env, shared, cache string) (bin, errText string) {
	fail := func(format string, a ...any) (string, string) {
		return "", fmt.Sprintf("terraform %s is required by the client matrix: ", TerraformNewVersion) + fmt.Sprintf(format, a...)
	}
	switch {
	case env != "":
		bin = env
	case fileExists(filepath.Join(shared, "terraform-"+TerraformNewVersion+"-linux-amd64.xz")):
		var err error
		if bin, err = unpackSharedTerraform(shared, cache); err != nil {
			return fail("%v", err)
		}
	case fileExists(filepath.Join(cache, "terraform-"+TerraformNewVersion)):
		bin = filepath.Join(cache, "terraform-"+TerraformNewVersion)
	default:
		abs, _ := filepath.Abs(shared)
		return fail("%s is not set, %s does not hold it, and it is not in the test cache %s\n"+
			"hint: download Terraform %s for %s_%s from %s (check the zip against terraform_%s_SHA256SUMS and its signature), "+
			"unzip it and set %s=/path/to/terraform; or run 'make test-clients', which does that into %s",
			TerraformNewEnv, abs, cache, TerraformNewVersion, runtime.GOOS, runtime.GOARCH, TerraformNewRelease, TerraformNewVersion,
			TerraformNewEnv, filepath.Join(cache, "terraform-"+TerraformNewVersion))
	}
	if v, err := clientVersion(bin); err != nil {
		return fail("%v", err)
	} else if v != TerraformNewVersion {
		return fail("%s is Terraform %s, not %s\nhint: point %s at Terraform %s (%s)", bin, v, TerraformNewVersion, TerraformNewEnv, TerraformNewVersion, TerraformNewRelease)
	}
	return bin, ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// unpackSharedTerraform unpacks shared's Terraform into cache (once; later
// runs re-check the cached copy's sha256) and returns its path.
func unpackSharedTerraform(shared, cache string) (string, error) {
	return UnpackShared(shared, cache, "terraform-"+TerraformNewVersion+"-linux-amd64", "terraform-"+TerraformNewVersion)
}

// UnpackShared unpacks shared/NAME.xz into cache as bin, checked against
// shared/SHA256SUMS (a cached copy is checked again and kept when it
// matches), and returns its path.
func UnpackShared(shared, cache, name, bin string) (string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("%s holds linux_amd64 builds only, and this is %s_%s", shared, runtime.GOOS, runtime.GOARCH)
	}
	want, err := sharedSum(shared, name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	bin = filepath.Join(cache, bin)
	if got, err := FileSHA256(bin); err == nil && got == want {
		return bin, nil
	}
	xz, err := exec.LookPath("xz")
	if err != nil {
		return "", fmt.Errorf("xz is not installed (Debian package xz-utils): it unpacks %s.xz", name)
	}
	f, err := os.CreateTemp(cache, filepath.Base(bin)+".partial-*")
	if err != nil {
		return "", err
	}
	part := f.Name()
	cmd := exec.Command(xz, "-dc", filepath.Join(shared, name+".xz"))
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
		return "", fmt.Errorf("unpacking %s.xz: %v %s", filepath.Join(shared, name), err, stderr.String())
	}
	if got, err := FileSHA256(part); err != nil || got != want {
		os.Remove(part)
		return "", fmt.Errorf("%s.xz unpacks to sha256 %s, SHA256SUMS says %s (%v)", filepath.Join(shared, name), got, want, err)
	}
	return bin, os.Rename(part, bin)
}

// sharedSum is the sha256 shared/SHA256SUMS gives for name.
func sharedSum(shared, name string) (string, error) {
	f, err := os.Open(filepath.Join(shared, "SHA256SUMS"))
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
	return "", fmt.Errorf("%s has no line for %s", filepath.Join(shared, "SHA256SUMS"), name)
}

func FileSHA256(p string) (string, error) {
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
	cmd.Env = BaseEnv()
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

// MatrixClient is one client of the matrix and the modes it supports.
type MatrixClient struct {
	Tool, Version, Bin string
	Modes              []string
}

func (c MatrixClient) String() string { return c.Tool + " " + c.Version }

// MatrixClients returns every client of the matrix: terraform 1.11 (on
// PATH) and 1.15.9, tofu 1.11.14 and 1.12.6. The Terraform unpack runs
// beside the tofu builds (cached after the first run); the two tofu builds
// run one after the other, because the second reuses most of the packages
// the first compiled: measured with an empty build cache, 288 + 148 s of
// CPU in sequence against 296 + 296 s at the same time, on 2 cores that
// either way keep busy.
func MatrixClients(t *testing.T) []MatrixClient {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { lookTerraformNew() })
	for _, v := range []string{TofuVersion, TofuNewVersion} {
		buildTofu(v)
	}
	wg.Wait()
	tfOld := TerraformBin(t)
	out := []MatrixClient{
		{Tool: "terraform", Bin: tfOld},
		{Tool: "terraform", Bin: TerraformNewBin(t)},
		{Tool: "tofu", Bin: TofuBinVersion(t, TofuVersion)},
		{Tool: "tofu", Bin: TofuBinVersion(t, TofuNewVersion)},
	}
	for i := range out {
		v, err := clientVersion(out[i].Bin)
		if err != nil {
			t.Fatal(err)
		}
		// tofu built from its module calls itself "1.12.6-dev" (its release
		// build sets the pre-release part to empty at link time).
		out[i].Version = strings.TrimSuffix(v, "-dev")
		out[i].Modes = []string{"registry", "mirror", "dns"}
		if out[i].Tool == "tofu" {
			out[i].Modes = append(out[i].Modes, "oci")
		}
	}
	if !strings.HasPrefix(out[0].Version, "1.11.") {
		t.Fatalf("terraform on PATH is %s: the suite tests Terraform 1.11 there (and %s from %s)", out[0].Version, TerraformNewVersion, TerraformNewEnv)
	}
	return out
}
