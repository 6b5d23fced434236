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

	"github.com/airgap/airgap/dist/registrytest"
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

// TerraformNewBin returns Terraform 1.15.9 (FindTerraformNew). A missing or
// wrong binary fails the test: the newer Terraform must not go untested.
func TerraformNewBin(t *testing.T) string {
	t.Helper()
	lookTerraformNew()
	if tfNewErr != "" {
		t.Fatal(tfNewErr)
	}
	return tfNewPath
}

// lookTerraformNew runs FindTerraformNew once per test binary.
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

// The real scanners the gate tests run, built from their Go modules the
// first time and cached in $AIRGAP_TEST_CACHE (default ~/.cache/airgap)
// like tofu. A scanner that cannot be built fails the tests: the gates must
// not go untested.
const (
	TrivyVersion       = "0.74.0" // ~5.5 min to build on 2 cores, 233 MB
	GovulncheckVersion = "1.9.0"  // under a minute
)

// What the test suite needs, said before it runs: 'make test' runs the
// test binary with AIRGAP_TEST_PREFLIGHT=1 first (Main), which prints
// the tools it found, what the first run builds or installs into the test
// cache and about how long that takes, and stops with what to install when
// something is missing — rather than failing one test after another
// minutes later.

// preflightEnv, set to 1, makes Main run preflight instead of tests.
const preflightEnv = "AIRGAP_TEST_PREFLIGHT"

// systemTools are the programs the tests run from PATH, and where they
// come from on Debian (.ci/run installs them).
var systemTools = []struct{ name, from string }{
	{"terraform", "terraform 1.11 (HashiCorp's release; the machine image ships it in /usr/local/bin)"},
	{"git", "apt-get install -y git"},
	{"bash", "apt-get install -y bash"},
	{"xz", "apt-get install -y xz-utils"},
	{"tmux", "apt-get install -y tmux"},
	{"promtool", "apt-get install -y prometheus"},
	{"systemd-analyze", "apt-get install -y systemd"},
	{"haproxy", "apt-get install -y haproxy"},
	{"prlimit", "apt-get install -y util-linux"},
	{"chromium", "apt-get install -y chromium"},
	{"npm", "apt-get install -y npm"},
	{"kubectl", "kubectl v1.32 (the machine image ships it; Kubernetes' release)"},
	{"make", "apt-get install -y make"},
	{"podman", "apt-get install -y podman"},
	{"runc", "apt-get install -y runc"},
	{"curl", "apt-get install -y curl (tfenv downloads with it)"},
	{"unzip", "apt-get install -y unzip (tfenv unpacks with it)"},
	{"gpgv", "apt-get install -y gpgv (tfenv checks signatures with it)"},
}

// versionManagers are the consumers of the CLI release tests that come
// from ../shared/clients (versionmanagers.go): the name of each one's
// SHA256SUMS line and its file there.
var versionManagers = []struct{ what, env, name, file string }{
	{"tenv " + TenvVersion, TenvEnv, "tenv-" + TenvVersion + "-linux-amd64", "tenv-" + TenvVersion + "-linux-amd64.xz"},
	{"tfswitch " + TfswitchVersion, TfswitchEnv, "tfswitch-" + TfswitchVersion + "-linux-amd64", "tfswitch-" + TfswitchVersion + "-linux-amd64.xz"},
	{"tfenv " + TfenvVersion, TfenvEnv, "tfenv-" + TfenvVersion + ".tar.xz", "tfenv-" + TfenvVersion + ".tar.xz"},
}

// cacheTools are what the tests build (from the Go module proxy) or
// install (npm) into the test cache the first time, the name each has
// there, and about how long each takes on 2 cores.
var cacheTools = []struct {
	what, name string
	minutes    float64
}{
	{"tofu " + TofuVersion, "tofu-" + TofuVersion, 4},
	{"tofu " + TofuNewVersion, "tofu-" + TofuNewVersion, 2},
	{"CNCF distribution registry " + distributionVersion, "registry-slim-" + distributionVersion, 4},
	{"trivy " + TrivyVersion, "trivy-" + TrivyVersion, 5.5},
	{"govulncheck " + GovulncheckVersion, "govulncheck-" + GovulncheckVersion, 1},
	{"kube-apiserver and etcd " + KubeVersion, "kube-apiserver-" + KubeVersion, 12},
	{"hc-install " + HCInstallVersion, "hc-install-" + HCInstallVersion, 0.5},
	{"tofudl " + TofuDLVersion, "tofudl-" + TofuDLVersion, 0.3},
	{"the stand-in terraform/tofu binary", "clistub-1", 0.1},
	{"axe-core " + AxeVersion + " (npm)", "axe-core-" + AxeVersion, 0.1},
	{"versitygw " + VersitygwVersion + " (S3 server)", "versitygw-" + VersitygwVersion, 4},
}

// suiteMinutes is about how long 'make test' takes on 2 cores once the
// tools are cached: the tests, then the fuzz targets.
const suiteMinutes = 9

// preflight prints what the suite will use and returns 0, or what is
// missing and 1.
func preflight(w io.Writer) int {
	cache, err := CacheDir()
	if err != nil {
		fmt.Fprintf(w, "make test: no test cache: %v\n", err)
		return 1
	}
	var found, missing []string
	for _, tool := range systemTools {
		if p, err := exec.LookPath(tool.name); err == nil {
			found = append(found, p)
		} else {
			missing = append(missing, fmt.Sprintf("  %s is not on PATH: %s", tool.name, tool.from))
		}
	}
	fmt.Fprintf(w, "make test: the end-to-end tests drive real tools.\n  on PATH: %s\n", strings.Join(found, " "))
	lookTerraformNew()
	if tfNewErr != "" {
		missing = append(missing, "  "+strings.ReplaceAll(tfNewErr, "\n", "\n  "))
	} else {
		from := "found in " + SharedClients + ", unpacked into the test cache"
		switch {
		case os.Getenv(TerraformNewEnv) != "":
			from = "from " + TerraformNewEnv
		case !fileExists(SharedClients + "/terraform-" + TerraformNewVersion + "-linux-amd64.xz"):
			from = "from the test cache"
		}
		fmt.Fprintf(w, "  terraform %s: %s (%s)\n", TerraformNewVersion, tfNewPath, from)
	}
	for _, vm := range versionManagers {
		if p := os.Getenv(vm.env); p != "" {
			fmt.Fprintf(w, "  %s: %s (from %s)\n", vm.what, p, vm.env)
			continue
		}
		if _, err := sharedSum(SharedClients, vm.name); err != nil || !fileExists(filepath.Join(SharedClients, vm.file)) {
			missing = append(missing, fmt.Sprintf("  %s: %s is not set and %s does not hold %s with its SHA256SUMS line", vm.what, vm.env, SharedClients, vm.file))
			continue
		}
		fmt.Fprintf(w, "  %s: %s (unpacked and checked against SHA256SUMS when used)\n", vm.what, filepath.Join(SharedClients, vm.file))
	}
	fmt.Fprintf(w, "  built from the Go module proxy or installed with npm into %s the first time:\n", cache)
	var todo []string
	var minutes float64
	for _, tool := range cacheTools {
		state := "cached"
		if !fileExists(cache + "/" + tool.name) {
			verb := "to build now: "
			if strings.HasSuffix(tool.what, "(npm)") {
				verb = "to install now: "
			}
			state = verb + aboutMinutes(tool.minutes)
			todo = append(todo, tool.what)
			minutes += tool.minutes
		}
		fmt.Fprintf(w, "    %-40s %s\n", tool.what, state)
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "Missing, so the suite would fail:\n%s\n", strings.Join(missing, "\n"))
		return 1
	}
	if len(todo) > 0 {
		fmt.Fprintf(w, "This first run builds %d tools before their tests (%s more on 2 cores); the suite then takes about %d minutes.\n",
			len(todo), aboutMinutes(minutes), suiteMinutes)
	} else {
		fmt.Fprintf(w, "Everything is cached: the suite takes about %d minutes on 2 cores.\n", suiteMinutes)
	}
	return 0
}

func aboutMinutes(m float64) string {
	switch {
	case m < 0.5:
		return "a few seconds"
	case m < 1.5:
		return "about a minute"
	}
	return fmt.Sprintf("about %.0f minutes", m)
}

// TofuVersion is the OpenTofu release most end-to-end tests drive; the
// client matrix (TestClientMatrix) adds TofuNewVersion.
const (
	TofuVersion    = "1.11.14"
	TofuNewVersion = "1.12.6"
)

var tofuBuilds sync.Map // version -> *tofuBuild

type tofuBuild struct {
	once      sync.Once
	path, err string
}

// TofuBin returns the path of a real tofu binary (TofuVersion), building it
// from the OpenTofu Go module on first use and caching it in
// $AIRGAP_TEST_CACHE (default ~/.cache/airgap). OpenTofu's go.mod has a
// replace directive, so 'go install …@version' cannot build it: the module
// is downloaded and ./cmd/tofu built inside it. A missing tofu fails the
// test: the OpenTofu client must not go untested.
func TofuBin(t *testing.T) string { return TofuBinVersion(t, TofuVersion) }

// TofuBinVersion is TofuBin for OpenTofu version v.
func TofuBinVersion(t *testing.T, v string) string {
	t.Helper()
	path, errText := buildTofu(v)
	if errText != "" {
		t.Fatalf("tofu %s is required by the end-to-end tests and could not be built: %s\nhint: it is built from the Go module proxy (go mod download github.com/opentofu/opentofu@v%s); check that the proxy is reachable", v, errText, v)
	}
	return path
}

// buildTofu builds (once per test binary) and caches tofu v.
func buildTofu(v string) (string, string) {
	b, _ := tofuBuilds.LoadOrStore(v, &tofuBuild{})
	tb := b.(*tofuBuild)
	tb.once.Do(func() {
		tb.path, tb.err = BuildFromModule("github.com/opentofu/opentofu", v, "./cmd/tofu", "tofu-"+v, "")
	})
	return tb.path, tb.err
}

// CacheDir is where the tests keep tools they build or install:
// $AIRGAP_TEST_CACHE, default ~/.cache/airgap.
func CacheDir() (string, error) {
	if c := os.Getenv("AIRGAP_TEST_CACHE"); c != "" {
		return c, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "airgap"), nil
}

// BuildFromModule builds pkg of module@v (v without "v") into the test
// cache as name, once; it returns the binary's path or an error text.
// mainSrc, if set, is built in place of pkg: a main package in a module of
// its own that requires module@v, to leave out parts a test does not need.
// The go commands reach the Go module proxy, outside the network guard
// (registrytest.UnguardedEnv).
func BuildFromModule(module, v, pkg, name, mainSrc string) (string, string) {
	bin, cached, errText := CacheBin(name)
	if cached || errText != "" {
		return bin, errText
	}
	// 'go mod download' of a module at a version needs a module context
	// that is not ours (it must not touch airgap's go.mod).
	tmp, err := os.MkdirTemp("", "gomod-dl-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module dl\n\ngo 1.24\n"), 0o644); err != nil {
		return "", err.Error()
	}
	dl := exec.Command("go", "mod", "download", "-json", module+"@v"+v)
	dl.Dir = tmp
	dl.Env = append(registrytest.UnguardedEnv(), "GOFLAGS=-mod=mod")
	out, err := dl.Output()
	if err != nil {
		return "", "go mod download: " + err.Error() + ": " + string(out)
	}
	var info struct{ Dir, Sum, GoModSum, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", "go mod download gave no directory: " + string(out) + info.Error
	}
	part := fmt.Sprintf("%s.partial-%d", bin, os.Getpid()) // another test process may build it at the same time
	build := exec.Command("go", "build", "-trimpath", "-o", part, pkg)
	build.Dir = info.Dir
	if mainSrc != "" {
		// A module of its own that requires module@v, with module's go.sum.
		sums, err := os.ReadFile(filepath.Join(info.Dir, "go.sum"))
		if err != nil {
			return "", err.Error()
		}
		sums = fmt.Appendf(sums, "%s v%s %s\n%s v%s/go.mod %s\n", module, v, info.Sum, module, v, info.GoModSum)
		os.WriteFile(filepath.Join(tmp, "go.sum"), sums, 0o644)
		os.WriteFile(filepath.Join(tmp, "go.mod"), fmt.Appendf(nil, "module slim\n\ngo 1.24\n\nrequire %s v%s\n", module, v), 0o644)
		os.WriteFile(filepath.Join(tmp, "main.go"), []byte(mainSrc), 0o644)
		build = exec.Command("go", "build", "-trimpath", "-o", part, ".")
		build.Dir = tmp
	}
	build.Env = append(registrytest.UnguardedEnv(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.Remove(part)
		return "", "go build " + pkg + ": " + err.Error() + "\n" + string(out)
	}
	if err := os.Rename(part, bin); err != nil {
		return "", err.Error()
	}
	return bin, ""
}

// CacheBin is where the test tool name is cached (CacheDir,
// created if need be) and whether it is there already (an executable
// file).
func CacheBin(name string) (bin string, cached bool, errText string) {
	cache, err := CacheDir()
	if err != nil {
		return "", false, err.Error()
	}
	bin = filepath.Join(cache, name)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return bin, true, ""
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", false, err.Error()
	}
	return bin, false, ""
}
