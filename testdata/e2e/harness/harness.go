// Package harness is the end-to-end suite's common ground: the one way to
// build and run the airgap binary, to start 'airgap serve', and the
// stand-in world the tests export from and import into.
//
// Each area of the suite (testdata/e2e/access, cli, docs, enclave,
// hostile, journey, ops, station) is a package of its own whose TestMain
// is Main: it builds the binary once per test binary into Bin, runs the
// tests under the network guard (registrytest.RunGuarded: nothing leaves
// loopback), and with AIRGAP_TEST_PREFLIGHT=1 prints the preflight
// ('make test' runs it first) instead of testing.
//
// What it holds:
//   - running: CmdRun and MustRun (and their split, bounded and measured
//     forms), BaseEnv, FreePort, OnTerminal for the terminal tests;
//   - serving: StartServe (and StartServeProc, StartServeLogged),
//     replicas behind HAProxy, a client that trusts serve's CA;
//   - the world: projects and manifests, the registry stand-ins
//     (registrytest), an OCI distribution registry, stations that export,
//     verify and review bundles, hostile bundles;
//   - tools the tests drive: OpenTofu and the registry built once from
//     the Go module proxy into the test cache, Terraform 1.15.9 and Dex
//     from ../shared/clients, Chromium and axe-core;
//   - the repository: Root, for what tests read from it (README.md,
//     docs/, server/deploy/, testdata/).
//
// Tests call t.Parallel when they use only their own ports (FreePort) and
// directories. A test stays serial when it measures: a child's peak
// memory (CmdRunMeasured's figure, RunBounded, VMRSS: Linux charges this
// process's peak to a vforked child, and parallel tests grow it), a
// duration or a deadline that load would stretch (token and URL lifetimes,
// timeouts, kills at a moment); and when it sets the environment, drives a
// terminal (tmux) or a Chromium.
//
// What it does not hold: a helper only one area uses stays in that area;
// nothing here knows package main's internals (the few tests that do stay
// beside the CLI).
package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// Bin is the airgap binary Main built for this test binary.
var Bin string

// Main is every end-to-end package's TestMain: the preflight when asked,
// else build Bin from Root and run the tests under the network guard.
func Main(m *testing.M) {
	if os.Getenv(preflightEnv) == "1" { // make test, first
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

var root = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/airgap/airgap\n") {
			return d
		}
		if filepath.Dir(d) == d {
			panic("harness: no airgap go.mod above " + dir)
		}
	}
})

// Root is the repository's top directory. The end-to-end tests run in
// their own package directories under testdata/e2e, so whatever they read
// or build from the repository (README.md, docs/, server/deploy/, the
// Makefile, testdata/) they find through it.
func Root() string { return root() }
