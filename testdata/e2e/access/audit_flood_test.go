package access

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// auditGrowth measures what is appended to the audit log's files (FILE,
// FILE.refusals and their rotations), following each file by its inode
// through rotations.
type auditGrowth struct {
	base         string
	seen         map[uint64]int
	bytes, lines int
}

func (g *auditGrowth) poll() {
	paths, _ := filepath.Glob(g.base + "*")
	for _, p := range paths {
		if strings.HasSuffix(p, ".lock") {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		ino := fi.Sys().(*syscall.Stat_t).Ino
		b, err := os.ReadFile(p)
		if err != nil || len(b) <= g.seen[ino] {
			continue
		}
		g.bytes += len(b) - g.seen[ino]
		g.lines += bytes.Count(b[g.seen[ino]:], []byte("\n"))
		g.seen[ino] = len(b)
	}
}

// TestAuditRefusalFlood: one client without credentials sends refused
// sign-in requests as fast as it can for 5 s — authorization requests with
// a 400-byte redirect_uri, forged callbacks (throttled after ten), forged
// sign-outs — against the real serve with a small audit log (1 MiB, two
// rotations). The audit log grows by a few lines, not one per request; no
// line is over 1 KiB; a token_created record written before the flood is
// still there after it; and when serve stops, one "refusals" line counts
// the rest with a bounded sample.
func TestAuditRefusalFlood(t *testing.T) {
	f := newLoginFixture(t, loginOptions{plainIdP: true, onlyMock: true, serve: []string{"--audit-log-max-size", "1MiB", "--audit-log-keep", "2"}})
	harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", f.access, "--name", "ci-net", "--allow", "registry.terraform.io/**", "--out", filepath.Join(t.TempDir(), "ci.token"), "--audit-log", f.audit)
	waitAudit(t, f.audit, "the token's creation", func(e map[string]any) bool { return e["event"] == "token_created" && e["token"] == "ci-net" })

	cl, _, _ := harness.CAClient(t, f.store)
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	evil := url.QueryEscape("http://evil.example/" + strings.Repeat("a", 400))
	reqs := []func() (*http.Response, error){
		func() (*http.Response, error) {
			return cl.Get(f.base + "oauth/authorization?response_type=code&client_id=terraform-cli&state=x&redirect_uri=" + evil)
		},
		func() (*http.Response, error) {
			return cl.Get(f.base + "oauth/callback?code=x&state=" + strings.Repeat("A", 64))
		},
		func() (*http.Response, error) {
			r, _ := http.NewRequest("POST", f.base+"oauth/signout", strings.NewReader("csrf=x"))
			r.Header.Set("Origin", "https://evil.example")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return cl.Do(r)
		},
	}
	g := &auditGrowth{base: f.audit, seen: map[uint64]int{}}
	g.poll()
	g.bytes, g.lines = 0, 0
	var sent atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; !stop.Load(); i++ {
				if resp, err := reqs[i%len(reqs)](); err == nil {
					resp.Body.Close()
					sent.Add(1)
				}
			}
		}()
	}
	const flood = 5 * time.Second
	for end := time.Now().Add(flood); time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		g.poll()
	}
	stop.Store(true)
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	g.poll()
	secs := flood.Seconds()
	t.Logf("flood: %d refused requests in %s (%.0f/s); the audit log grew by %d lines (%.1f lines/s), %d bytes (%.0f bytes/s)",
		sent.Load(), flood, float64(sent.Load())/secs, g.lines, float64(g.lines)/secs, g.bytes, float64(g.bytes)/secs)
	if sent.Load() < 200 {
		t.Fatalf("only %d requests sent: the flood did not flood", sent.Load())
	}
	if g.lines > 40 || g.bytes > 16<<10 {
		t.Errorf("the audit log grew by %d lines, %d bytes in %s of refusals from one address: want a few lines (at most 5 per reason)", g.lines, g.bytes, flood)
	}
	waitAudit(t, f.audit, "the token's creation, after the flood", func(e map[string]any) bool { return e["event"] == "token_created" && e["token"] == "ci-net" })

	// serve's end writes the count of what was not written whole.
	f.serve.Signal(os.Interrupt)
	var count float64
	waitAudit(t, f.audit, "the count of refusals", func(e map[string]any) bool {
		if e["event"] != "refusals" || e["client"] != "127.0.0.1" {
			return false
		}
		count, _ = e["count"].(float64)
		sample, _ := e["sample"].([]any)
		b, _ := json.Marshal(e)
		t.Logf("the count: %s", b)
		return len(sample) >= 1 && len(sample) <= 3
	})
	if int64(count)+int64(g.lines) < sent.Load()*9/10 {
		t.Errorf("the refusals line counts %v of %d refused requests (%d written whole)", count, sent.Load(), g.lines)
	}
	for _, p := range []string{f.audit, f.audit + ".refusals"} {
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(b), "\n") {
			if len(l) > 1024 {
				t.Errorf("%s has a line of %d bytes: %.200s…", filepath.Base(p), len(l), l)
			}
		}
	}
}

// TestAuditDownloadFlood: anyone the rules let fetch — here anonymous
// requests — can write download records as fast as serve answers (some
// 13,000 a second from one client, measured), which turned over the
// default 1 GiB of audit log in under 5 minutes and took the security
// records with it. With a small log (1 MiB, one old file), a client
// without credentials downloads one module archive until the log has
// turned over twice: the token_created record written before is still in
// FILE.security, and 'airgap audit' counts it once, with the downloads.
func TestAuditDownloadFlood(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	accessFile, audit := filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	harness.MustRun(t, "", nil, harness.Bin, "token", "anonymous", "--access", accessFile, "--allow", "**")
	harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", accessFile, "--name", "ci-net", "--allow", "registry.terraform.io/**",
		"--out", filepath.Join(dir, "ci.token"), "--audit-log", audit)
	srv := harness.StartServe(t, root, "--access", accessFile, "--audit-log", audit, "--audit-log-max-size", "1MiB", "--audit-log-keep", "1")
	cl := harness.CAFileClient(t, srv.CAFile)
	resp, _ := harness.HTTPGet(t, cl, srv.Base+"v1/modules/example/vpc/aws/1.0.0/download")
	get := strings.Replace(resp.Header.Get("X-Terraform-Get"), "//modules/vpc", "", 1)
	if resp.StatusCode != 204 && resp.StatusCode != 200 || get == "" {
		t.Fatalf("the module's download answer: %d %q", resp.StatusCode, get)
	}
	u := srv.Base + strings.TrimPrefix(get, "/")
	var sent atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if r, err := cl.Get(u); err == nil {
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
					sent.Add(1)
				}
			}
		}()
	}
	// Turned over twice: 2 MiB and more of records at about 300 bytes.
	for sent.Load() < 8000 && time.Since(start) < time.Minute {
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d anonymous downloads in %s", sent.Load(), time.Since(start).Round(time.Millisecond))
	for _, p := range []string{audit, audit + ".1"} {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(`"token_created"`)) {
			t.Fatalf("%s still holds the token's creation: the log did not turn over", filepath.Base(p))
		}
	}
	b, _ := os.ReadFile(audit + ".security")
	if !bytes.Contains(b, []byte(`"event":"token_created","token":"ci-net"`)) {
		t.Errorf("the token's creation is not in FILE.security after the flood:\n%s", b)
	}
	out := harness.MustRunStdout(t, "", "audit", "--log", audit, "--json")
	var sum struct {
		Records int
		Events  []struct {
			Who    string
			Events map[string]int
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, w := range sum.Events {
		created += w.Events["token_created"]
	}
	if created != 1 || sum.Records == 0 {
		t.Errorf("airgap audit counts %d token_created events (want 1) and %d downloads:\n%.2000s", created, sum.Records, out)
	}
}
