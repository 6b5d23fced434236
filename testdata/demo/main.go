// Command demo runs the whole airgap journey on loopback from built-in
// fixtures (it is what 'make demo' runs): a stand-in internet with
// registries, a git host and an archive host; keygen, export, verify,
// import; then 'airgap serve' on https://localhost:8443, a client config, and
// a real 'terraform init' through it. serve keeps running until Ctrl-C.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
)

const project = `terraform {
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
`

const manifest = `platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/random" {
  versions = "~> 3.5"
  latest   = 2
}
provider "registry.opentofu.org/hashicorp/local" {}
module "example/vpc/aws" {
  versions = "1.0.0"
}
module "example/sub/aws" {}
`

func main() {
	bin := flag.String("airgap", "bin/airgap", "the airgap binary")
	dir := flag.String("dir", "demo", "where to put the demo's files (emptied first)")
	listen := flag.String("listen", "127.0.0.1:8443", "where airgap serve listens")
	flag.Parse()
	abs, _ := filepath.Abs(*bin)
	*bin = abs
	os.RemoveAll(*dir)
	os.MkdirAll(*dir, 0o755)
	d, _ := filepath.Abs(*dir)
	t := bundletest.NewStandalone(filepath.Join(d, "internet"))

	step := func(title string) { fmt.Printf("\n== %s\n", title) }
	run := func(env []string, name string, args ...string) string {
		fmt.Printf("$ %s %s\n", filepath.Base(name), strings.Join(args, " "))
		cmd := exec.Command(name, args...)
		cmd.Dir = d
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.CombinedOutput()
		fmt.Print(indent(string(out)))
		if err != nil {
			t.Fatalf("demo failed: %v", err)
		}
		return string(out)
	}

	step("a stand-in internet on loopback (registry.terraform.io, registry.opentofu.org, github.com, …)")
	in := registrytest.World(t)
	online := in.Env()
	os.WriteFile(filepath.Join(d, "airgap.hcl"), []byte(manifest), 0o644)

	step("connected side: keygen and export")
	run(nil, *bin, "keygen", "--out", "keys/site", "--name", "Demo Site <ops@demo.test>", "--no-passphrase")
	run(append(online, "SOURCE_DATE_EPOCH=1767225600"), *bin, "export", "--manifest", "airgap.hcl",
		"--sign-key", "keys/site.key.asc", "--out", "site.bundle", "--cache", "cache")
	t.Close()

	step("the transfer station: verify")
	run(nil, *bin, "verify", "--keyring", "keys/site.pub.asc", "site.bundle")

	step("offline side: import and serve")
	run(nil, *bin, "import", "--keyring", "keys/site.pub.asc", "--store", "store", "site.bundle")
	serve := exec.Command(*bin, "serve", "--store", "store", "--listen", *listen, "--hostname", "localhost")
	serve.Dir, serve.Env, serve.Stdout, serve.Stderr = d, cleanEnv(), os.Stdout, os.Stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(*listen, ":")
	base := "https://localhost:" + port + "/"
	caPEM := ""
	for i := 0; i < 100 && caPEM == ""; i++ {
		time.Sleep(100 * time.Millisecond)
		out, err := exec.Command(*bin, "ca", "--store", filepath.Join(d, "store")).Output()
		if err == nil {
			caPEM = string(out)
		}
	}
	os.WriteFile(filepath.Join(d, "airgap-ca.pem"), []byte(caPEM), 0o644)
	cfg := run([]string{"SSL_CERT_FILE=" + filepath.Join(d, "airgap-ca.pem")}, *bin, "client-config", "--url", base, "--store", "store")
	os.WriteFile(filepath.Join(d, "terraform.rc"), []byte(cfg), 0o644)

	step("terraform init, offline, through the appliance")
	proj := filepath.Join(d, "project")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "main.tf"), []byte(project), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(d, "terraform.rc"), "SSL_CERT_FILE=" + filepath.Join(d, "airgap-ca.pem"),
		"HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1", "CHECKPOINT_DISABLE=1"}
	if tf, err := exec.LookPath("terraform"); err == nil {
		time.Sleep(500 * time.Millisecond)
		cmd := exec.Command(tf, "init", "-no-color", "-input=false")
		cmd.Dir, cmd.Env = proj, append(cleanEnv(), offline...)
		out, err := cmd.CombinedOutput()
		fmt.Print(indent(string(out)))
		if err != nil {
			serve.Process.Kill()
			t.Fatalf("terraform init failed: %v", err)
		}
	} else {
		fmt.Println("  (terraform is not on PATH; skipping)")
	}

	fmt.Printf(`
== airgap serve is running on %s (Ctrl-C to stop)
Client config: %s
Use it from another shell:
  export TF_CLI_CONFIG_FILE=%s SSL_CERT_FILE=%s
  cd %s && terraform init
`, base, filepath.Join(d, "terraform.rc"), filepath.Join(d, "terraform.rc"), filepath.Join(d, "airgap-ca.pem"), proj)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; serve.Process.Signal(os.Interrupt) }()
	serve.Wait()
}

func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		u := strings.ToUpper(k)
		if strings.HasPrefix(k, "TF_") || strings.HasSuffix(u, "_PROXY") || strings.HasPrefix(k, "SSL_CERT") || k == "GIT_SSL_CAINFO" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
