// Command demo runs the whole airgap journey on loopback from built-in
// fixtures (it is what 'make demo' runs): a stand-in internet with
// registries, a git host and an archive host; keygen, export, verify,
// import; then 'airgap serve' on https://localhost:8443, a client config, and
// a real 'terraform init' through it. serve and the stand-in internet keep
// running until Ctrl-C, so the journey can be done again by hand (the
// stand-in's environment is written to DIR/internet.env). serve's own
// lines go to DIR/serve.log, so that what the demo prints is the journey and
// the client's output. Ctrl-C (or q) on a terminal, or SIGINT or SIGTERM,
// at any point — during the journey too — stops what the demo started and
// ends it with one line and exit status 0: on a terminal the demo reads the
// key itself from the start (the terminal sends no signal meanwhile), so
// that make and go run, which would otherwise get the SIGINT too and report
// "Error 1" or "Interrupt", see a demo that ended cleanly.
//
// Before it touches anything it checks that the port is free and that DIR
// is not served by a running 'airgap serve' (a first demo still running):
// a second demo never empties the first one's directory. It only ever
// empties a directory it made itself (marked by DIR/.airgap-demo).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist/registrytest"
)

// marker marks a directory the demo made, the only kind it empties.
const marker = ".airgap-demo"

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

// demoDocs are hashicorp/random's documentation pages on the stand-in
// github.com, one release per version the stand-in registry serves.
func demoDocs() []registrytest.Release {
	page := func(name, about string) *string {
		return registrytest.Str("---\npage_title: \"random_" + name + " Resource - terraform-provider-random\"\nsubcategory: \"\"\n---\n\n# random_" + name + " (Resource)\n\n" + about + "\n\n## Example Usage\n\n```terraform\nresource \"random_" + name + "\" \"example\" {\n  length = 16\n}\n```\n")
	}
	files := map[string]*string{
		"docs/index.md":              registrytest.Str("---\npage_title: \"Provider: Random\"\n---\n\n# Random Provider\n\nThe \"random\" provider generates random values inside Terraform's lifecycle.\n"),
		"docs/resources/string.md":   page("string", "Generates a random permutation of alphanumeric and special characters."),
		"docs/resources/password.md": page("password", "Identical to random_string, with the result treated as sensitive."),
		"docs/resources/id.md":       page("id", "Generates random numbers that are intended to be used as unique identifiers."),
	}
	var out []registrytest.Release
	for _, v := range []string{"3.5.1", "3.6.0", "3.6.2"} {
		out = append(out, registrytest.Release{Tag: "v" + v, Files: files})
	}
	return out
}

// rel is p relative to the working directory when it is below it.
func rel(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return p
}

func main() {
	bin := flag.String("airgap", "bin/airgap", "the airgap binary")
	dir := flag.String("dir", "demo", "where to put the demo's files (emptied first, if the demo made it)")
	listen := flag.String("listen", "127.0.0.1:8443", "where airgap serve listens")
	flag.Parse()
	abs, _ := filepath.Abs(*bin)
	*bin = abs
	if err := preflight(*dir, *listen); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
	// From here on Ctrl-C, q or a signal stops the demo (stop is closed).
	stop, restore := watchStop()
	ctx, cancel := context.WithCancel(context.Background())
	os.RemoveAll(*dir)
	os.MkdirAll(*dir, 0o755)
	os.WriteFile(filepath.Join(*dir, marker), []byte("made by 'make demo'; the next 'make demo' empties this directory\n"), 0o644)
	d, _ := filepath.Abs(*dir)
	t := &demoTB{Standalone: bundletest.NewStandalone(filepath.Join(d, "internet")), stop: stop, restore: restore}
	// Stopped during the journey: the running step and serve (if started)
	// are killed, the stand-in closed. Once serving, waitForStop below stops
	// serve gracefully instead.
	var phase sync.Mutex
	serving := false
	go func() {
		<-stop
		phase.Lock()
		if serving {
			phase.Unlock()
			return
		}
		cancel()
		t.Close()
		restore()
		fmt.Println("demo: stopped before the journey ended (what it started is stopped)")
		os.Exit(0)
	}()

	step := func(title string) { fmt.Printf("\n== %s\n", title) }
	run := func(env []string, name string, args ...string) string {
		fmt.Printf("$ %s %s\n", filepath.Base(name), strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, name, args...)
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
	// A real Go plugin for this machine's platform (its build information
	// is what verify and the SBOM show) and random's documentation at its
	// tags, so that the first run's verify, catalog and 'airgap docs' show
	// what a real export brings rather than "none".
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, filepath.Join(d, "internet")))
	in.AddTaggedRepo(t, "hashicorp/terraform-provider-random", demoDocs(), nil)
	online := in.Env()
	os.WriteFile(filepath.Join(d, "airgap.hcl"), []byte(manifest), 0o644)
	envFile := filepath.Join(d, "internet.env")
	writeEnvFile(envFile, online)

	step("connected side: keygen and export")
	run(nil, *bin, "keygen", "--out", "keys/site", "--name", "Demo Site <ops@demo.test>", "--no-passphrase")
	run(append(online, "SOURCE_DATE_EPOCH=1767225600"), *bin, "export", "--manifest", "airgap.hcl",
		"--sign-key", "keys/site.key.asc", "--out", "site.bundle", "--cache", "cache")

	step("the transfer station: verify")
	run(nil, *bin, "verify", "--keyring", "keys/site.pub.asc", "site.bundle")

	step("offline side: import and serve")
	run(nil, *bin, "import", "--keyring", "keys/site.pub.asc", "--store", "store", "site.bundle")
	logPath := filepath.Join(d, "serve.log")
	serveLog, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("  (airgap serve's log: %s)\n", rel(logPath))
	serve := exec.CommandContext(ctx, *bin, "serve", "--store", "store", "--listen", *listen, "--hostname", "localhost")
	serve.Dir, serve.Env, serve.Stdout, serve.Stderr = d, cleanEnv(), serveLog, serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serve.Wait() }()
	_, port, _ := net.SplitHostPort(*listen)
	base := "https://localhost:" + port + "/"
	caFile := filepath.Join(d, "airgap-ca.pem")
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case err := <-served:
			t.Fatalf("demo: airgap serve ended at start (%v); its log:\n%s", err, tail(logPath))
		case <-time.After(100 * time.Millisecond):
		}
		if pem, err := exec.Command(*bin, "ca", "--store", filepath.Join(d, "store")).Output(); err == nil {
			os.WriteFile(caFile, pem, 0o644)
			if exec.Command(*bin, "healthcheck", "--url", base+"healthz", "--ca", caFile).Run() == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			serve.Process.Kill()
			t.Fatalf("demo: airgap serve did not answer on %s within 30 s", base)
		}
	}
	cfg := run([]string{"SSL_CERT_FILE=" + caFile}, *bin, "client-config", "--url", base)
	os.WriteFile(filepath.Join(d, "terraform.rc"), []byte(cfg), 0o644)

	step("terraform init, offline, through the appliance")
	proj := filepath.Join(d, "project")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "main.tf"), []byte(project), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(d, "terraform.rc"), "SSL_CERT_FILE=" + filepath.Join(d, "airgap-ca.pem"),
		"HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1", "CHECKPOINT_DISABLE=1"}
	if tf, err := exec.LookPath("terraform"); err == nil {
		cmd := exec.CommandContext(ctx, tf, "init", "-no-color", "-input=false")
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
== airgap serve is running on %[1]s (Ctrl-C stops it and the stand-in internet)
Its log: %[8]s
Use the appliance from another shell:
  export TF_CLI_CONFIG_FILE=%[2]s SSL_CERT_FILE=%[3]s
  cd %[4]s && terraform init

The stand-in internet stays up too, so you can do the whole journey by hand
(README: "Try it by hand"). Export against it from another shell:
  . %[5]s      # routes registry.terraform.io, github.com, … to the stand-in
  airgap export --manifest %[6]s --sign-key %[7]s --out my.bundle
`, base, filepath.Join(d, "terraform.rc"), filepath.Join(d, "airgap-ca.pem"), proj,
		rel(envFile), rel(filepath.Join(d, "airgap.hcl")), rel(filepath.Join(d, "keys", "site.key.asc")), rel(logPath))
	phase.Lock()
	serving = true
	phase.Unlock()
	ended, err := waitForStop(stop, served)
	restore()
	if err != nil {
		t.Close()
		fmt.Fprintf(os.Stderr, "demo: airgap serve ended by itself (%v); its log:\n%s", err, tail(logPath))
		os.Exit(1)
	}
	if !ended {
		serve.Process.Signal(syscall.SIGTERM)
		<-served
	}
	t.Close()
	fmt.Printf("demo: stopped airgap serve and the stand-in internet (serve's log: %s)\n", rel(logPath))
}

// demoTB is the stand-in's testing.TB: a failure restores the terminal
// before it exits, and one caused by the demo being stopped (a step killed)
// is not reported — the stopping goroutine ends the demo with exit 0.
type demoTB struct {
	*bundletest.Standalone
	stop    <-chan struct{}
	restore func()
}

func (d *demoTB) Fatal(a ...any) { d.Fatalf("%s", fmt.Sprint(a...)) }
func (d *demoTB) Fatalf(f string, a ...any) {
	select {
	case <-d.stop:
		select {} // being stopped: the stopping goroutine exits
	default:
	}
	d.restore()
	d.Standalone.Fatalf(f, a...)
}

// watchStop returns a channel closed when the user stops the demo: Ctrl-C,
// Ctrl-D or q on a terminal, SIGINT or SIGTERM. On a terminal it turns off
// the terminal's signal keys, line buffering and echo (output is left as
// it is), so that Ctrl-C is a key the demo reads, not a SIGINT to every
// process of the foreground group (make, go run, serve); restore puts the
// terminal back, and may be called more than once.
func watchStop() (stop <-chan struct{}, restore func()) {
	c := make(chan struct{})
	var once sync.Once
	closeIt := func() { once.Do(func() { close(c) }) }
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; closeIt() }()
	restore = func() {}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return c, restore
	}
	back, ok := keysOnly(fd)
	if !ok {
		return c, restore
	}
	var r sync.Once
	restore = func() { r.Do(back) }
	go func() {
		b := make([]byte, 1)
		for {
			n, err := os.Stdin.Read(b)
			if err != nil || (n == 1 && (b[0] == 3 || b[0] == 4 || b[0] == 'q')) {
				closeIt()
				return
			}
		}
	}()
	return c, restore
}

// waitForStop waits until the user stops the demo (stop) or until serve
// ends (ended), by itself (err says why) or on the same SIGINT.
func waitForStop(stop <-chan struct{}, served <-chan error) (ended bool, err error) {
	select {
	case <-stop:
	case err := <-served:
		select {
		case <-stop: // a SIGINT reached serve too, a moment earlier
			return true, nil
		case <-time.After(500 * time.Millisecond):
		}
		if err == nil {
			err = errors.New("exit status 0")
		}
		return true, err
	}
	return false, nil
}

// tail is the last lines of the file at path, for a message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return indent(strings.Join(lines, ""))
}

// preflight refuses, before anything is touched, a port that is taken and a
// directory that a running 'airgap serve' serves or that the demo did not
// make.
func preflight(dir, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		_, port, _ := net.SplitHostPort(listen)
		return fmt.Errorf("cannot listen on %s: %v\n"+
			"Another program holds the port (a 'make demo' still running?). Nothing was changed.\n"+
			"hint: stop it (Ctrl-C in its terminal), or choose another port and directory: make demo DEMO_PORT=%d DEMO_DIR=demo2",
			listen, innermost(err), nextPort(port))
	}
	ln.Close()
	if store.Served(filepath.Join(dir, "store")) {
		return fmt.Errorf("%s/store is being served by a running 'airgap serve' (a 'make demo' still running?); the demo will not empty it.\n"+
			"hint: stop that one first (Ctrl-C in its terminal), or use another directory: make demo DEMO_DIR=demo2 DEMO_PORT=...", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return nil // absent or empty
	}
	if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
		return fmt.Errorf("%s exists and was not made by the demo (no %s in it); the demo empties its directory first and will not empty this one.\n"+
			"hint: choose another directory: make demo DEMO_DIR=...", dir, marker)
	}
	return nil
}

// innermost is the system's reason in a listen error ("address already
// in use").
func innermost(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

func nextPort(port string) int {
	var n int
	fmt.Sscan(port, &n)
	if n <= 0 || n >= 65535 {
		return 8444
	}
	return n + 1
}

// writeEnvFile writes the stand-in internet's environment as a file a
// shell can source.
func writeEnvFile(path string, env []string) {
	var b strings.Builder
	b.WriteString("# The demo's stand-in internet (registry.terraform.io, registry.opentofu.org,\n" +
		"# releases.hashicorp.com, github.com, …) on loopback, while 'make demo' runs.\n" +
		"# In a shell:  . " + path + "\n# then 'airgap export' reaches it; open a new shell for the offline side.\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s='%s'\n", k, v)
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
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
