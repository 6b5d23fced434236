package harness

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
)

var Bin string

func Main(m *testing.M) {
	if os.Getenv(preflightEnv) == "1" { // make test, first (testtools_test.go)
		os.Exit(preflight(os.Stdout))
	}
	dir, err := os.MkdirTemp("", "airgap-bin-")
	if err != nil {
		panic(err)
	}
	Bin = filepath.Join(dir, "airgap")
	build := exec.Command("go", "build", "-o", Bin, ".")
	build.Dir = Root()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building airgap: %v\n%s", err, out)
		os.Exit(1)
	}
	code := registrytest.RunGuarded(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// CmdRun runs a command with env added to a clean base environment.
func CmdRun(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	out, _, err := CmdRunMeasured(t, dir, env, name, args...)
	return out, err
}

// CmdRunMeasured is cmdRun that also returns the peak resident memory, in
// KiB, of the program and every process it waited for (git, helpers).
func CmdRunMeasured(t *testing.T, dir string, env []string, name string, args ...string) (string, int64, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(BaseEnv(), env...)
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

func MustRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := CmdRun(t, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// BaseEnv is the environment without proxy, CA and Terraform settings,
// plus the network guard's (registrytest.GuardEnv: every host off
// loopback goes to its sinkhole); a test's own env comes after it and
// wins (Internet.Env replaces every proxy variable).
func BaseEnv() []string {
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

func TerraformBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: the end-to-end tests drive the real client and must not be skipped; install terraform (v1.11) and run again")
	}
	return p
}

// StartServe runs 'airgap serve' and waits for it to answer /healthz.
func StartServe(t *testing.T, storeDir string, extra ...string) (base string, caFile string) {
	t.Helper()
	base, caFile, _ = StartServeProc(t, storeDir, extra...)
	return base, caFile
}

// StartServeProc is startServe that also returns the serve process.
func StartServeProc(t *testing.T, storeDir string, extra ...string) (base string, caFile string, proc *os.Process) {
	t.Helper()
	base, caFile, proc, _ = StartServeLogged(t, storeDir, extra...)
	return base, caFile, proc
}

// StartServeLogged is startServeProc that also returns serve's output as
// it grows.
func StartServeLogged(t *testing.T, storeDir string, extra ...string) (base string, caFile string, proc *os.Process, logs *LockedBuffer) {
	t.Helper()
	port := FreePort(t)
	args := append([]string{"serve", "--store", storeDir, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--hostname", "localhost"}, extra...)
	cmd := exec.Command(Bin, args...)
	cmd.Env = BaseEnv()
	logs = &LockedBuffer{}
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
		pemOut, err := exec.Command(Bin, "ca", "--store", storeDir).Output()
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

func CopyTree(t *testing.T, src, dst string) {
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

const E2EProject = `terraform {
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

const E2EManifest = `
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
