package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// The end-to-end suite lives in testdata/e2e; the tests here stay beside
// the CLI because they walk its verb table (verbs()), which no other
// package can see, and check every verb against the built binary.
func TestMain(m *testing.M) { harness.Main(m) }

// TestHelpGroupsVerbsByPlace: 'airgap help' lists every verb once, under
// where it runs — connected side, transfer station, offline side,
// anywhere — and verify at the transfer station. A new verb must be given
// a place in help.go's verbPlaces.
func TestHelpGroupsVerbsByPlace(t *testing.T) {
	out, err := harness.CmdRun(t, "", nil, harness.Bin, "help")
	if err != nil {
		t.Fatalf("airgap help: %v\n%s", err, out)
	}
	place := ""
	where := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			place, _, _ = strings.Cut(line, " (")
			place = strings.TrimSuffix(place, ":")
		case strings.HasPrefix(line, "  ") && place != "" && place != "Exit codes":
			verb := strings.Fields(line)[0]
			where[verb] = append(where[verb], place)
		}
	}
	for name := range verbs() {
		switch p := where[name]; {
		case len(p) != 1:
			t.Errorf("airgap help lists %s under %v, want one place", name, p)
		case !slices.Contains([]string{"Connected side", "Transfer station", "Offline side", "Anywhere"}, p[0]):
			t.Errorf("airgap help lists %s under %q: give it a place in verbPlaces (help.go)", name, p[0])
		}
	}
	// approve writes an approval file: its place must not say that
	// nothing there writes.
	if strings.Contains(out, "writes nothing") {
		t.Errorf("airgap help says a place writes nothing, but approve, listed at the transfer station, writes its approval:\n%s", out)
	}
	for verb, want := range map[string]string{"verify": "Transfer station", "export": "Connected side", "import": "Offline side", "serve": "Offline side"} {
		if p := where[verb]; len(p) != 1 || p[0] != want {
			t.Errorf("airgap help lists %s under %v, want %q:\n%s", verb, p, want, out)
		}
	}
}

// TestHelpEveryVerb: each verb's help has its arguments, flags, examples
// and exit codes.
func TestHelpEveryVerb(t *testing.T) {
	for name := range verbs() {
		stdout, stderr, code := harness.RunSplit(t, t.TempDir(), nil, "help", name)
		if code != 0 {
			t.Errorf("help %s: %d %s", name, code, stderr)
		}
		for _, w := range []string{"Usage: airgap " + name + " ", "Flags:\n", "Examples:\n  airgap " + name, "Exit codes:"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("help %s lacks %q:\n%s", name, w, stdout)
			}
		}
	}
	stdout, _, _ := harness.RunSplit(t, t.TempDir(), nil, "help", "verify")
	if !strings.Contains(stdout, "Usage: airgap verify --keyring FILE BUNDLE") {
		t.Errorf("help verify does not show BUNDLE: %s", stdout)
	}
	stdout, _, _ = harness.RunSplit(t, t.TempDir(), nil, "help", "keygen")
	if !strings.Contains(stdout, "Environment:\n  AIRGAP_PASSPHRASE") {
		t.Errorf("help keygen does not name AIRGAP_PASSPHRASE: %s", stdout)
	}
}

// TestJSONConvention runs every verb that has --json, once succeeding and
// once failing, and checks each document against the convention; and it
// checks every record of serve's JSON log. A verb given --json later fails
// here until it is added.
func TestJSONConvention(t *testing.T) {
	in := registrytest.World(t)
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/other", "--no-passphrase")
	harness.MustRun(t, work, nil, harness.Bin, "keys", "generate", "--out", "k/station", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte(`platforms = ["linux_amd64"]
provider "hashicorp/random" {
  versions = "3.6.2"
}
module "example/vpc/aws" {
  versions = "1.0.0"
}
withdraw "hashicorp/random" {
  versions = "3.5.1"
  reason   = "bad build"
}
`), 0o644)
	os.WriteFile(filepath.Join(work, "bad.hcl"), []byte("providers \"x\" {}\n"), 0o644)
	os.WriteFile(filepath.Join(work, "audit.log"), nil, 0o600)
	reg := harness.StartRegistry(t)
	pushEnv := []string{"SSL_CERT_FILE=" + reg.CAFile, oci.PasswordEnv + "=" + reg.Password, "DOCKER_CONFIG=" + t.TempDir()}

	type run struct {
		env  []string
		args []string
	}
	cases := []struct {
		verb      string
		ok, fails []run
	}{
		{"export", []run{
			{online, []string{"export", "--manifest", "m.hcl", "--dry-run", "--json", "--cache", "cache"}},
			{online, []string{"export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--out", "b.bundle", "--json", "--cache", "cache"}},
		}, []run{
			{online, []string{"export", "--manifest", "bad.hcl", "--dry-run", "--json", "--cache", "cache"}},
			{nil, []string{"export", "--json", "--manifest", "m.hcl"}}, // a usage error
		}},
		{"verify", []run{{nil, []string{"verify", "--keyring", "k/site.pub.asc", "--json", "b.bundle"}}},
			[]run{{nil, []string{"verify", "--keyring", "k/other.pub.asc", "--json", "b.bundle"}}}},
		{"approve", []run{{nil, []string{"approve", "--key", "k/station.key.asc", "--keyring", "k/site.pub.asc", "--json", "b.bundle"}}},
			[]run{{nil, []string{"approve", "--key", "k/site.key.asc", "--keyring", "k/site.pub.asc", "--json", "b.bundle"}}}},
		{"import", []run{
			{nil, []string{"import", "--keyring", "k/site.pub.asc", "--store", "store", "--json", "b.bundle"}},
			{nil, []string{"import", "--keyring", "k/site.pub.asc", "--store", "store", "--json", "b.bundle"}}, // unchanged
		}, []run{{nil, []string{"import", "--keyring", "k/other.pub.asc", "--store", "store", "--json", "b.bundle"}}}},
		{"inventory", []run{{nil, []string{"inventory", "--store", "store", "--json"}}, {nil, []string{"inventory", "--store", "store", "--usage", "--json"}}},
			[]run{{nil, []string{"inventory", "--store", "nostore", "--json"}}, {nil, []string{"inventory", "--store", "nostore", "--usage", "--json"}}}},
		{"split", []run{{nil, []string{"split", "--size", "1MiB", "--sign-key", "k/site.key.asc", "--json", "b.bundle"}}},
			[]run{{nil, []string{"split", "--size", "1KiB", "--sign-key", "k/site.key.asc", "--json", "nothere.bundle"}}}},
		{"join", []run{{nil, []string{"join", "--keyring", "k/site.pub.asc", "--out", "joined.bundle", "--json", "b.bundle.000"}}},
			[]run{{nil, []string{"join", "--keyring", "k/other.pub.asc", "--out", "joined2.bundle", "--json", "b.bundle.000"}}}},
		{"prune", []run{{nil, []string{"prune", "--store", "store", "--keep", "5", "--dry-run", "--json"}}},
			[]run{{nil, []string{"prune", "--store", "store", "--json", "hashicorp/nothere@1.0.0"}}}},
		{"gc", []run{{nil, []string{"gc", "--store", "store", "--json"}}, {nil, []string{"gc", "--store", "store", "--dry-run", "--json"}}},
			[]run{{nil, []string{"gc", "--store", "nostore", "--json"}}}},
		{"mirror-dir", []run{{nil, []string{"mirror-dir", "--store", "store", "--out", "mirror", "--json"}}},
			[]run{{nil, []string{"mirror-dir", "--store", "nostore", "--out", "mirror2", "--json"}}}},
		{"token", []run{
			{nil, []string{"token", "create", "--access", "access.hcl", "--name", "alice", "--allow", "registry.terraform.io/**", "--json"}},
			{nil, []string{"token", "list", "--access", "access.hcl", "--json"}},
			{nil, []string{"token", "revoke", "--access", "access.hcl", "--json", "alice"}},
		}, []run{
			{nil, []string{"token", "list", "--access", "noaccess.hcl", "--json"}},
			{nil, []string{"token", "frobnicate", "--access", "access.hcl", "--json"}},
		}},
		{"audit", []run{{nil, []string{"audit", "--log", "audit.log", "--json"}}},
			[]run{{nil, []string{"audit", "--log", "noaudit.log", "--json"}}, {nil, []string{"audit", "--json"}}}},
		{"push", []run{{pushEnv, []string{"push", "--store", "store", "--to", reg.Host + "/site", "--username", reg.User, "--json"}}},
			[]run{{pushEnv, []string{"push", "--store", "store", "--to", fmt.Sprintf("127.0.0.1:%d/site", harness.FreePort(t)), "--json"}}}},
	}
	var withJSON, tested []string
	for name, v := range verbs() {
		if v.flags().Lookup("json") != nil {
			withJSON = append(withJSON, name)
		}
	}
	for _, c := range cases {
		tested = append(tested, c.verb)
		for _, r := range c.ok {
			stdout, stderr, code := harness.RunSplit(t, work, r.env, r.args...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", strings.Join(r.args, " "), code, stderr)
			}
			harness.CheckJSONDoc(t, strings.Join(r.args, " "), stdout, true)
		}
		for _, r := range c.fails {
			stdout, stderr, code := harness.RunSplit(t, work, r.env, r.args...)
			// The same exit status as without --json.
			var plain []string
			for _, a := range r.args {
				if a != "--json" {
					plain = append(plain, a)
				}
			}
			_, _, plainCode := harness.RunSplit(t, work, r.env, plain...)
			if code == 0 || code != plainCode {
				t.Errorf("%s: exit %d (without --json %d)\n%s", strings.Join(r.args, " "), code, plainCode, stderr)
			}
			harness.CheckJSONDoc(t, strings.Join(r.args, " "), stdout, false)
		}
	}
	sort.Strings(withJSON)
	sort.Strings(tested)
	if strings.Join(withJSON, " ") != strings.Join(tested, " ") {
		t.Errorf("verbs with --json: %v; tested here: %v", withJSON, tested)
	}

	// serve's JSON log: start-up, a request, a reload, shut-down.
	port := harness.FreePort(t)
	cmd := exec.Command(harness.Bin, "serve", "--store", "store", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-format", "json")
	cmd.Dir, cmd.Env = work, harness.BaseEnv()
	var logs harness.LockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), `"msg":"serving"`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("serve did not start:\n%s", logs.String())
		}
	}
	ca, _ := exec.Command(harness.Bin, "ca", "--store", filepath.Join(work, "store")).Output()
	os.WriteFile(filepath.Join(work, "ca.pem"), ca, 0o644)
	harness.MustRun(t, work, nil, harness.Bin, "healthcheck", "--url", fmt.Sprintf("https://localhost:%d/healthz", port), "--ca", "ca.pem")
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	sc := bufio.NewScanner(bytes.NewReader([]byte(logs.String())))
	n := 0
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Errorf("serve --log-format json wrote a line that is not JSON: %s", sc.Text())
			continue
		}
		n++
		for _, v := range harness.JSONViolations("$", rec) {
			t.Errorf("serve log %q: %s", rec["msg"], v)
		}
	}
	if n < 4 || !strings.Contains(logs.String(), `"startup_ms":`) || !strings.Contains(logs.String(), `"dur_us":`) {
		t.Errorf("serve's JSON log lacks start-up or access records:\n%s", logs.String())
	}
}

// TestEveryStoreVerbTakesABucket: every verb with a --store or
// --from-store flag takes an s3:// address (objectStoreVerbs), so the
// guard's "not yet supported" refusal is reached by no verb of this
// binary; a new verb with a store flag must be made to work on a bucket
// or be refused there knowingly.
func TestEveryStoreVerbTakesABucket(t *testing.T) {
	for name, v := range verbs() {
		fs := v.flags()
		for _, flag := range []string{"store", "from-store"} {
			if fs.Lookup(flag) != nil && !objectStoreVerbs[name] {
				t.Errorf("airgap %s has --%s but does not take an s3:// store (objectStoreVerbs)", name, flag)
			}
		}
	}
}
