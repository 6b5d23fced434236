package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
)

var airgapBin string

func TestMain(m *testing.M) {
	if os.Getenv(preflightEnv) == "1" { // make test, first (testtools_test.go)
		os.Exit(preflight(os.Stdout))
	}
	dir, err := os.MkdirTemp("", "airgap-bin-")
	if err != nil {
		panic(err)
	}
	airgapBin = filepath.Join(dir, "airgap")
	if out, err := exec.Command("go", "build", "-o", airgapBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building airgap: %v\n%s", err, out)
		os.Exit(1)
	}
	code := registrytest.RunGuarded(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// cmdRun runs a command with env added to a clean base environment.
func cmdRun(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	out, _, err := cmdRunMeasured(t, dir, env, name, args...)
	return out, err
}

// cmdRunMeasured is cmdRun that also returns the peak resident memory, in
// KiB, of the program and every process it waited for (git, helpers).
func cmdRunMeasured(t *testing.T, dir string, env []string, name string, args ...string) (string, int64, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	resetPeakRSS()
	err := cmd.Run()
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	return out.String(), rss, err
}

// resetPeakRSS makes the peak memory wait4 reports for the next child its
// own, near enough: os/exec starts a child with vfork, sharing this
// process's memory until it execs, and Linux then records this process's
// peak as the child's (the test process may have grown earlier, building a
// hostile fixture). So this process hands back what it can and resets its
// own peak to what it holds now (/proc/self/clear_refs, 5); the child's
// figure is then at most this process's current size or its own peak.
func resetPeakRSS() {
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func mustRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := cmdRun(t, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// baseEnv is the environment without proxy, CA and Terraform settings,
// plus the network guard's (registrytest.GuardEnv: every host off
// loopback goes to its sinkhole); a test's own env comes after it and
// wins (Internet.Env replaces every proxy variable).
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "TF_"), strings.HasPrefix(strings.ToUpper(k), "HTTP"), strings.HasPrefix(strings.ToUpper(k), "NO_PROXY"),
			strings.HasPrefix(k, "SSL_CERT"), k == "GIT_SSL_CAINFO":
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, registrytest.GuardEnv()...), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
}

func terraformBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: the end-to-end tests drive the real client and must not be skipped; install terraform (v1.11) and run again")
	}
	return p
}

// startServe runs 'airgap serve' and waits for it to answer /healthz.
func startServe(t *testing.T, storeDir string, extra ...string) (base string, caFile string) {
	t.Helper()
	base, caFile, _ = startServeProc(t, storeDir, extra...)
	return base, caFile
}

// startServeProc is startServe that also returns the serve process.
func startServeProc(t *testing.T, storeDir string, extra ...string) (base string, caFile string, proc *os.Process) {
	t.Helper()
	base, caFile, proc, _ = startServeLogged(t, storeDir, extra...)
	return base, caFile, proc
}

// startServeLogged is startServeProc that also returns serve's output as
// it grows.
func startServeLogged(t *testing.T, storeDir string, extra ...string) (base string, caFile string, proc *os.Process, logs *lockedBuffer) {
	t.Helper()
	port := freePort(t)
	args := append([]string{"serve", "--store", storeDir, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--hostname", "localhost"}, extra...)
	cmd := exec.Command(airgapBin, args...)
	cmd.Env = baseEnv()
	logs = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve did not shut down on SIGINT")
		}
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
	})
	caFile = filepath.Join(t.TempDir(), "airgap-ca.pem")
	base = fmt.Sprintf("https://localhost:%d/", port)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		pemOut, err := exec.Command(airgapBin, "ca", "--store", storeDir).Output()
		if err == nil && len(pemOut) > 0 {
			os.WriteFile(caFile, pemOut, 0o644)
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pemOut)
			cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			if resp, err := cl.Get(base + "healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					// The appliance offers the same CA at /ca.pem.
					if r2, err := cl.Get(base + "ca.pem"); err != nil || r2.StatusCode != 200 {
						t.Fatalf("/ca.pem: %v %v", r2, err)
					} else {
						served, _ := io.ReadAll(r2.Body)
						r2.Body.Close()
						if !bytes.Equal(served, pemOut) {
							t.Fatal("/ca.pem differs from 'airgap ca'")
						}
					}
					return base, caFile, cmd.Process, logs
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve did not come up:\n%s", logs.String())
	return
}

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

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if strings.HasPrefix(rel, ".terraform"+string(filepath.Separator)) || rel == ".terraform" {
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, _ := os.ReadFile(p)
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

const e2eProject = `terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "~> 3.5"
    }
  }
}

module "vpc" {
  source  = "example/vpc/aws"
  version = "1.0.0"
}

module "sub" {
  source  = "example/sub/aws"
  version = "2.0.0"
}

output "vpc" {
  value = module.vpc.name
}
`

const e2eManifest = `
platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/random" {
  versions = "~> 3.5"
  latest   = 2
}
provider "registry.opentofu.org/hashicorp/local" {
  versions = "2.5.1"
}
module "example/vpc/aws" {
  versions = "1.0.0"
}
module "example/sub/aws" {}
module "registry.opentofu.org/example/tofu/aws" {}
`

// TestJourney: stand-in internet -> reference terraform init -> keygen ->
// export (manifest and --from) -> verify -> import -> serve -> client-config
// -> offline terraform init / providers lock in both client-config modes.
func TestJourney(t *testing.T) {
	tf := terraformBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(t.TempDir(), "empty.tfrc"))
	work := t.TempDir()

	// 1. The reference: the real terraform against the stand-in internet.
	ref := filepath.Join(work, "reference")
	os.MkdirAll(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "main.tf"), []byte(e2eProject), 0o644)
	mustRun(t, ref, online, tf, "init", "-input=false", "-no-color")
	refLock := filepath.Join(ref, ".terraform.lock.hcl")
	refZH := zhHashes(t, refLock)
	if len(refZH) != 3+2 { // random: 3 platforms; null: 2
		t.Fatalf("reference lock has %d zh hashes: %v", len(refZH), refZH)
	}

	// 2. Connected side.
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	mustRun(t, work, nil, airgapBin, "keygen", "--out", keys, "--name", "Site Ops <ops@site.test>", "--no-passphrase")
	if fi, _ := os.Stat(keys + ".key.asc"); fi.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v", fi.Mode())
	}
	if out, err := cmdRun(t, work, nil, airgapBin, "keygen", "--out", keys, "--no-passphrase"); err == nil || !strings.Contains(out, "refusing to overwrite") {
		t.Errorf("keygen overwrote a key: %s", out)
	}
	manifest := filepath.Join(work, "airgap.hcl")
	os.WriteFile(manifest, []byte(e2eManifest), 0o644)
	cache := filepath.Join(work, "cache")
	b1 := filepath.Join(work, "site.bundle")
	env := append(online, "SOURCE_DATE_EPOCH=1767225600")
	out := mustRun(t, work, env, airgapBin, "export", "--manifest", manifest, "--sign-key", keys+".key.asc", "--out", b1, "--cache", cache)
	t.Log(out)
	// --from the project and its lock file.
	b2 := filepath.Join(work, "from.bundle")
	mustRun(t, work, env, airgapBin, "export", "--from", ref, "--platform", "linux_amd64", "--platform", "darwin_arm64",
		"--platform", "windows_amd64", "--sign-key", keys+".key.asc", "--out", b2, "--cache", cache)

	// 3. Transfer station.
	out = mustRun(t, work, nil, airgapBin, "verify", "--keyring", keys+".pub.asc", b1)
	if !strings.Contains(out, "OK") || !strings.Contains(out, "Site Ops") {
		t.Errorf("verify output: %s", out)
	}

	// 4. Offline side.
	storeDir := filepath.Join(work, "store")
	for _, b := range []string{b1, b2} {
		mustRun(t, work, nil, airgapBin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b)
	}
	out = mustRun(t, work, nil, airgapBin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b1)
	if !strings.Contains(out, "already imported") {
		t.Errorf("re-import: %s", out)
	}
	base, caFile := startServe(t, storeDir)

	for _, mode := range []string{"registry", "mirror"} {
		t.Run(mode, func(t *testing.T) {
			rc := filepath.Join(t.TempDir(), "airgap.tfrc")
			cfg := mustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, airgapBin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", mode)
			os.WriteFile(rc, []byte(cfg), 0o644)
			offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
				"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}

			// The reference lock verifies unchanged offline.
			dir := filepath.Join(t.TempDir(), "project")
			copyTree(t, ref, dir)
			refBytes, _ := os.ReadFile(refLock)
			mustRun(t, dir, offline, tf, "init", "-input=false", "-no-color", "-lockfile=readonly")
			// The installed bytes are a runnable plugin: validate starts it.
			if out := mustRun(t, dir, offline, tf, "validate", "-no-color"); !strings.Contains(out, "Success") {
				t.Errorf("validate: %s", out)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl")); !bytes.Equal(got, refBytes) {
				t.Errorf("the reference lock file changed offline:\n%s", got)
			}
			// A fresh offline lock: registry mode holds the same zh: hashes.
			fresh := filepath.Join(t.TempDir(), "fresh")
			os.MkdirAll(fresh, 0o755)
			os.WriteFile(filepath.Join(fresh, "main.tf"), []byte(e2eProject), 0o644)
			mustRun(t, fresh, offline, tf, "init", "-input=false", "-no-color")
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
			mustRun(t, fresh, offline, tf, lockArgs...)
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
			mustRun(t, tofuMod, offline, tf, "init", "-input=false", "-no-color")
			if _, err := os.Stat(filepath.Join(tofuMod, ".terraform", "modules", "t", "main.tf")); err != nil {
				t.Errorf("the JSON-location module was not installed offline: %v", err)
			}
			t.Run("tofu", func(t *testing.T) { tofuOfflineInit(t, work, base, caFile, mode) })
		})
	}
	_ = context.Background
}
