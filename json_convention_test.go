package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/dist/registrytest"
)

// The JSON convention every --json document and JSON log record keeps
// (see docs/architecture.md, "JSON output"): snake_case keys; no null (lists are
// [], optional things left out); a number that is a duration has its unit
// in its key; times are RFC 3339 UTC; one document on stdout, with "ok", and
// on failure "ok": false and "error".
var (
	snakeKey     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	durationWord = regexp.MustCompile(`(^|_)(dur|duration|elapsed|startup|took|timeout|latency|seconds|age|interval)(_|$)`)
	unitSuffix   = regexp.MustCompile(`_(ns|us|ms|s)$`)
	timeKey      = regexp.MustCompile(`(^|_)(time|at)$`)
)

// jsonViolations walks v and lists every place it breaks the convention.
func jsonViolations(path string, v any) []string {
	var out []string
	switch x := v.(type) {
	case nil:
		out = append(out, path+": null")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + k
			if !snakeKey.MatchString(k) {
				out = append(out, p+": key is not snake_case")
			}
			switch val := x[k].(type) {
			case float64:
				if durationWord.MatchString(k) && !unitSuffix.MatchString(k) {
					out = append(out, fmt.Sprintf("%s: the duration %v has no unit in its key", p, val))
				}
				if unitSuffix.MatchString(k) && durationWord.MatchString(k) && val != float64(int64(val)) {
					out = append(out, fmt.Sprintf("%s: the duration %v is not an integer", p, val))
				}
			case string:
				if timeKey.MatchString(k) {
					if ts, err := time.Parse(time.RFC3339Nano, val); err != nil || ts.Location() != time.UTC {
						out = append(out, fmt.Sprintf("%s: the time %q is not RFC 3339 UTC", p, val))
					}
				}
			}
			out = append(out, jsonViolations(p, x[k])...)
		}
	case []any:
		for i, e := range x {
			out = append(out, jsonViolations(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
	}
	return out
}

// checkJSONDoc checks stdout is exactly one JSON object keeping the
// convention, with ok == wantOK (and an error when it is false).
func checkJSONDoc(t *testing.T, name, stdout string, wantOK bool) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Errorf("%s: stdout is not one JSON object: %v\n%s", name, err, stdout)
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("%s: stdout holds more than one JSON document:\n%s", name, stdout)
	}
	if ok, isBool := doc["ok"].(bool); !isBool || ok != wantOK {
		t.Errorf("%s: \"ok\" is %v, want %v", name, doc["ok"], wantOK)
	}
	if e, _ := doc["error"].(string); !wantOK && e == "" {
		t.Errorf("%s: a failure document without \"error\"", name)
	}
	for _, v := range jsonViolations("$", doc) {
		t.Errorf("%s: %s", name, v)
	}
	return doc
}

// TestJSONConvention runs every verb that has --json, once succeeding and
// once failing, and checks each document against the convention; and it
// checks every record of serve's JSON log. A verb given --json later fails
// here until it is added.
func TestJSONConvention(t *testing.T) {
	in := registrytest.World(t)
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	mustRun(t, work, nil, airgapBin, "keygen", "--out", "k/site", "--no-passphrase")
	mustRun(t, work, nil, airgapBin, "keygen", "--out", "k/other", "--no-passphrase")
	mustRun(t, work, nil, airgapBin, "keys", "generate", "--out", "k/station", "--no-passphrase")
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
	reg := startRegistry(t)
	pushEnv := []string{"SSL_CERT_FILE=" + reg.caFile, oci.PasswordEnv + "=" + reg.password, "DOCKER_CONFIG=" + t.TempDir()}

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
		{"push", []run{{pushEnv, []string{"push", "--store", "store", "--to", reg.host + "/site", "--username", reg.user, "--json"}}},
			[]run{{pushEnv, []string{"push", "--store", "store", "--to", fmt.Sprintf("127.0.0.1:%d/site", freePort(t)), "--json"}}}},
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
			stdout, stderr, code := runSplit(t, work, r.env, r.args...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", strings.Join(r.args, " "), code, stderr)
			}
			checkJSONDoc(t, strings.Join(r.args, " "), stdout, true)
		}
		for _, r := range c.fails {
			stdout, stderr, code := runSplit(t, work, r.env, r.args...)
			// The same exit status as without --json.
			var plain []string
			for _, a := range r.args {
				if a != "--json" {
					plain = append(plain, a)
				}
			}
			_, _, plainCode := runSplit(t, work, r.env, plain...)
			if code == 0 || code != plainCode {
				t.Errorf("%s: exit %d (without --json %d)\n%s", strings.Join(r.args, " "), code, plainCode, stderr)
			}
			checkJSONDoc(t, strings.Join(r.args, " "), stdout, false)
		}
	}
	sort.Strings(withJSON)
	sort.Strings(tested)
	if strings.Join(withJSON, " ") != strings.Join(tested, " ") {
		t.Errorf("verbs with --json: %v; tested here: %v", withJSON, tested)
	}

	// serve's JSON log: start-up, a request, a reload, shut-down.
	port := freePort(t)
	cmd := exec.Command(airgapBin, "serve", "--store", "store", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-format", "json")
	cmd.Dir, cmd.Env = work, baseEnv()
	var logs syncBuffer
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
	ca, _ := exec.Command(airgapBin, "ca", "--store", filepath.Join(work, "store")).Output()
	os.WriteFile(filepath.Join(work, "ca.pem"), ca, 0o644)
	mustRun(t, work, nil, airgapBin, "healthcheck", "--url", fmt.Sprintf("https://localhost:%d/healthz", port), "--ca", "ca.pem")
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
		for _, v := range jsonViolations("$", rec) {
			t.Errorf("serve log %q: %s", rec["msg"], v)
		}
	}
	if n < 4 || !strings.Contains(logs.String(), `"startup_ms":`) || !strings.Contains(logs.String(), `"dur_us":`) {
		t.Errorf("serve's JSON log lacks start-up or access records:\n%s", logs.String())
	}
}

// TestJSONViolations: the checker itself finds what it must.
func TestJSONViolations(t *testing.T) {
	var doc any
	json.Unmarshal([]byte(`{"ok":true,"Checks":{"KeysExpired":null},"blobs_removed":null,"startup":4000000,"took_ms":1.5,"time":"2026-01-01T00:00:00+02:00","list":[{"x":null}]}`), &doc)
	got := strings.Join(jsonViolations("$", doc), "\n")
	for _, w := range []string{"$.Checks: key is not snake_case", "$.Checks.KeysExpired: null", "$.blobs_removed: null", "$.startup: the duration", "$.took_ms: the duration 1.5 is not an integer", "$.time: the time", "$.list[0].x: null"} {
		if !strings.Contains(got, w) {
			t.Errorf("the checker misses %q; it found:\n%s", w, got)
		}
	}
}
