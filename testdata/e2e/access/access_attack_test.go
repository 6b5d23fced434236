package access

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// Attacks on 'airgap serve --access' by a hostile client on the site
// network, against the real binary. Each test is the regression test of a
// reviewer finding.

// attackTarget is the standard store served with an access file whose
// token "ci" may read everything, and an audit log.
type attackTarget struct {
	root, access, audit, ci string
	base, caFile            string
	port                    int
	proc                    *os.Process
	logs                    *harness.LockedBuffer
}

// newAttackTarget starts serve (JSON logs) with extra flags.
func newAttackTarget(t *testing.T, extra ...string) *attackTarget {
	t.Helper()
	a := &attackTarget{}
	a.root, _, _ = harness.OpsStore(t)
	dir := t.TempDir()
	a.access, a.audit = filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	a.ci = harness.CreateToken(t, a.access, "ci", "**")
	srv := harness.StartServe(t, a.root, append([]string{"--access", a.access, "--audit-log", a.audit, "--log-format", "json"}, extra...)...)
	a.base, a.caFile, a.proc, a.logs = srv.Base, srv.CAFile, srv.Proc, srv.Logs
	fmt.Sscan(strings.TrimSuffix(a.base[strings.LastIndex(a.base, ":")+1:], "/"), &a.port)
	return a
}

// randomDownload is the registry download answer the attacks fetch a
// package through.
const randomDownload = "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64"

// signedURL asks base (the appliance, or a balancer before it) for the
// download answer with hdr and returns its signed download_url, resolved.
func signedURL(t *testing.T, cl *http.Client, base string, hdr ...string) string {
	t.Helper()
	resp, body := harness.HTTPGet(t, cl, base+randomDownload, hdr...)
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &d) != nil || d.DownloadURL == "" {
		t.Fatalf("download answer from %s: %s %s", base, resp.Status, body)
	}
	return harness.ResolveRef(base+randomDownload, d.DownloadURL)
}

// startHTTPProxy runs a real HAProxy in HTTP mode on loopback in front of
// one serve: plain HTTP to the client, TLS (verified) to serve, and
// "option forwardfor", which appends the client's address to the request
// as an X-Forwarded-For line of its own. It returns the proxy's base URL.
func startHTTPProxy(t *testing.T, caFile string, backendPort int) string {
	t.Helper()
	front := harness.FreePort(t)
	harness.RunHAProxy(t, harness.HAProxyBin(t), fmt.Sprintf(`global
  maxconn 64
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:%d
  option forwardfor
  default_backend serve
backend serve
  server s1 127.0.0.1:%d ssl verify required ca-file %s sni str(localhost)
`, front, backendPort, caFile))
	base := fmt.Sprintf("http://127.0.0.1:%d", front)
	harness.WaitHealthy(t, &http.Client{Timeout: 5 * time.Second}, base+"/healthz")
	return base
}

// clientFrom is an HTTP client whose connections come from a loopback
// address of its own (127.0.0.0/8 is all loopback on Linux): one client of
// the site network each.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: d.DialContext,
	}}
}

// Finding (high): behind an HTTP proxy that appends the client as an
// X-Forwarded-For line of its own (HAProxy's option forwardfor), a client
// that sent more than 64 X-Forwarded-For entries itself chose its address:
// serve stopped reading before the proxy's line and took the client's
// rightmost entry. So it could write any address into the audit log and
// the access log, dodge the failed-attempt limit, and lock any other client
// (a CI runner) out with 429s by failing in its name.
func TestAccessForwardedForSpoofing(t *testing.T) {
	t.Parallel()
	a := newAttackTarget(t, "--trusted-proxy", "127.0.0.1")
	ci := a.ci
	proxy := startHTTPProxy(t, a.caFile, a.port)

	var spoof []string
	for i := 0; i < 70; i++ {
		spoof = append(spoof, fmt.Sprintf("198.51.100.%d", i))
	}
	forged := func(last string) string { return strings.Join(append(spoof, last), ", ") }
	get := func(cl *http.Client, u, token, xff string) (*http.Response, []byte) {
		hdr := []string{"Authorization", "Bearer " + token}
		if xff != "" {
			hdr = append(hdr, "X-Forwarded-For", xff)
		}
		return harness.HTTPGet(t, cl, u, hdr...)
	}
	attacker, victim := clientFrom("127.0.0.2"), clientFrom("127.0.0.3")

	// A download with forged entries: the audit log and the access log
	// name the address the proxy saw.
	u := signedURL(t, attacker, proxy, "Authorization", "Bearer "+ci, "X-Forwarded-For", forged("203.0.113.66"))
	if resp, _ := get(attacker, u, ci, forged("203.0.113.66")); resp.StatusCode != 200 {
		t.Fatalf("the package through the proxy: %s", resp.Status)
	}
	harness.WaitLog(t, a.logs, "the download's access line", func(r map[string]any) bool {
		return r["provider"] == "registry.terraform.io/hashicorp/random" && r["peer"] == "127.0.0.1"
	})
	for _, r := range harness.JSONLines(t, a.logs.String()) {
		if r["peer"] == "127.0.0.1" && r["client"] != "127.0.0.2" {
			t.Errorf("an access line names client %v; the proxy saw 127.0.0.2", r["client"])
		}
	}
	text, _ := os.ReadFile(a.audit)
	if !strings.Contains(string(text), `"client":"127.0.0.2"`) || strings.Contains(string(text), "203.0.113.66") {
		t.Errorf("the audit log does not name the address the proxy saw:\n%s", text)
	}

	// Failing in another client's name: the attacker is limited, the
	// victim is not.
	guess := "airgap_" + strings.Repeat("G", 43)
	for i := 0; i < 10; i++ {
		if resp, _ := get(attacker, proxy+"/v1/providers/hashicorp/random/versions", guess, forged("127.0.0.3")); resp.StatusCode != 401 {
			t.Fatalf("guess %d: %s", i, resp.Status)
		}
	}
	if resp, b := get(victim, proxy+"/v1/providers/hashicorp/random/versions", ci, ""); resp.StatusCode != 200 {
		t.Errorf("the victim, after an attacker failed in its name: %s %s", resp.Status, b)
	}
	if resp, _ := get(attacker, proxy+"/v1/providers/hashicorp/random/versions", guess, forged(fmt.Sprintf("10.%d.0.1", 9))); resp.StatusCode != 429 {
		t.Errorf("the attacker after 10 failures, under yet another forged address: %s (want 429)", resp.Status)
	}
}

// Finding (high): what serve issued to a token (OCI bearers, signed
// download URLs) named the token but was not bound to it. Revoking a
// leaked token and creating a new one under the same name (the way to
// rotate a team's token: create refuses a name in use) left the leaked
// token's bearers and URLs working; and /v2/token took a bearer as
// credentials, so one bearer renewed itself for ever. The holder of a
// leaked token kept OCI access after its revocation, indefinitely.
func TestAccessRevokedTokenLeavesNothing(t *testing.T) {
	t.Parallel()
	a := newAttackTarget(t)
	leaked, base, logs := a.ci, a.base, a.logs
	cl, _, _ := harness.CAClient(t, a.root)
	bearerFor := func(auth string) (int, string) {
		resp, body := harness.HTTPGet(t, cl, base+"v2/token?service=airgap", "Authorization", auth)
		var d struct{ Token string }
		json.Unmarshal(body, &d)
		return resp.StatusCode, d.Token
	}
	code, bearer := bearerFor(basicAuth(leaked))
	if code != 200 || !strings.HasPrefix(bearer, "agb1:ci:") {
		t.Fatalf("/v2/token with the token: %d %q", code, bearer)
	}
	const tags = "v2/registry.terraform.io/hashicorp/random/tags/list"
	if resp, _ := harness.HTTPGet(t, cl, base+tags, "Authorization", "Bearer "+bearer); resp.StatusCode != 200 {
		t.Fatalf("the bearer on /v2/: %s", resp.Status)
	}
	// A bearer does not get another bearer.
	if code, renewed := bearerFor("Bearer " + bearer); code != 401 {
		t.Errorf("/v2/token with a bearer: %d %q (want 401: a bearer must not renew itself)", code, renewed)
	}
	signed := signedURL(t, cl, strings.TrimSuffix(base, "/"), "Authorization", "Bearer "+leaked)

	// The operator rotates the leaked token: revoke, create under the
	// same name.
	harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--access", a.access, "ci")
	fresh := harness.CreateToken(t, a.access, "ci", "**")
	harness.WaitLog(t, logs, "the reload", func(r map[string]any) bool { return r["msg"] == "access file reloaded" })
	time.Sleep(1500 * time.Millisecond) // both edits read (within a second each)
	if resp, _ := harness.HTTPGet(t, cl, base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+fresh); resp.StatusCode != 200 {
		t.Fatalf("the new token: %s", resp.Status)
	}
	if resp, _ := harness.HTTPGet(t, cl, base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+leaked); resp.StatusCode != 401 {
		t.Errorf("the revoked token: %s", resp.Status)
	}
	if resp, b := harness.HTTPGet(t, cl, base+tags, "Authorization", "Bearer "+bearer); resp.StatusCode != 401 {
		t.Errorf("a bearer of the revoked token on /v2/: %s %s", resp.Status, b)
	}
	if code, _ := bearerFor("Bearer " + bearer); code != 401 {
		t.Errorf("a bearer of the revoked token on /v2/token: %d", code)
	}
	if resp, _ := harness.HTTPGet(t, cl, signed); resp.StatusCode != 403 {
		t.Errorf("a download URL of the revoked token: %s", resp.Status)
	}
}

func basicAuth(secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+secret))
}

// Finding (medium): a signed download URL kept working after its token's
// rules were narrowed to exclude the address (until it expired: up to
// download-url-ttl, at most a week), while revoking the token ended it at
// once. Narrowing a team's need-to-know must take effect as revoking does.
func TestAccessNarrowedRulesEndSignedURLs(t *testing.T) {
	t.Parallel()
	a := newAttackTarget(t, "--download-url-ttl", "168h")
	ci, base, logs, access := a.ci, a.base, a.logs, a.access
	cl, _, _ := harness.CAClient(t, a.root)
	signed := signedURL(t, cl, strings.TrimSuffix(base, "/"), "Authorization", "Bearer "+ci)
	if resp, _ := harness.HTTPGet(t, cl, signed); resp.StatusCode != 200 {
		t.Fatalf("the signed URL: %s", resp.Status)
	}
	// The operator narrows ci to the OpenTofu registry's providers (an edit
	// by hand, as docs/access-control.md describes).
	text, _ := os.ReadFile(access)
	narrowed := strings.Replace(string(text), `allow   = ["**"]`, `allow   = ["registry.opentofu.org/**"]`, 1)
	if narrowed == string(text) {
		t.Fatalf("no allow line to narrow in:\n%s", text)
	}
	writeAtomically(t, access, narrowed)
	harness.WaitLog(t, logs, "the reload", func(r map[string]any) bool { return r["msg"] == "access file reloaded" })
	if resp, _ := harness.HTTPGet(t, cl, base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+ci); resp.StatusCode != 404 {
		t.Fatalf("the narrowed token on the address: %s", resp.Status)
	}
	resp, body := harness.HTTPGet(t, cl, signed)
	missing, mbody := harness.HTTPGet(t, cl, base+"blobs/sha256/"+strings.Repeat("0", 64)+"/x.zip", "Authorization", "Bearer "+ci)
	if resp.StatusCode != 404 || missing.StatusCode != 404 {
		t.Errorf("a URL issued before the token was narrowed: %s (want 404, as for a missing blob: %s %s)", resp.Status, missing.Status, mbody)
	} else if strings.Contains(string(body), "0000000") || !strings.Contains(string(body), "is not served by this appliance") {
		t.Errorf("the refusal is not the missing blob's: %s", body)
	}
}

// Finding (medium): with --metrics-listen main, /metrics answers on the
// main listener without a token; with an access file it showed every
// client of the network, token or not, the addresses and versions
// downloaded (airgap_downloads_total) and the catalog's size, which the
// access file hides everywhere else. serve now refuses the combination.
func TestAccessRefusesMetricsOnMain(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	access := filepath.Join(dir, "access.hcl")
	harness.CreateToken(t, access, "ci", "**")
	cfg := filepath.Join(dir, "serve.hcl")
	harness.WriteConfig(t, cfg, "access = \""+access+"\"\nmetrics-listen = \"main\"\n")
	for _, args := range [][]string{
		{"serve", "--store", root, "--listen", "127.0.0.1:0", "--access", access, "--metrics-listen", "main"},
		{"serve", "--store", root, "--config", cfg, "--check-config"},
		{"serve", "--store", root, "--listen", "127.0.0.1:0", "--config", cfg},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a serve that starts is a failure
		cmd := exec.CommandContext(ctx, harness.Bin, args...)
		cmd.Env = harness.BaseEnv()
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut || !strings.Contains(string(out), "serves /metrics to every client without a token") || !strings.Contains(string(out), "metrics-listen = \"127.0.0.1:9443\"") {
			t.Errorf("airgap %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Metrics on a listener of their own stay possible.
	srv := harness.StartServe(t, root, "--access", access, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)))
	base := srv.Base
	cl, _, _ := harness.CAClient(t, root)
	if resp, _ := harness.HTTPGet(t, cl, base+"metrics"); resp.StatusCode != 401 {
		t.Errorf("/metrics on the main listener without a token: %s (want 401, as any path)", resp.Status)
	}
}

// Finding (low): a write to the audit log cut short by a full disk left
// part of its line in the file, and the next line, written once there was
// room again, was glued to it: that download was lost from the audit
// ('airgap audit' skips the torn line) although it was written and not
// counted as an error. The disk is made full with a file size limit
// (RLIMIT_FSIZE, prlimit) on the running serve.
func TestAccessAuditLogSurvivesFullDisk(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatal("prlimit is not on PATH: it is in Debian's util-linux package")
	}
	a := newAttackTarget(t)
	cl, _, _ := harness.CAClient(t, a.root)
	u := signedURL(t, cl, strings.TrimSuffix(a.base, "/"), "Authorization", "Bearer "+a.ci)
	download := func() {
		t.Helper()
		if resp, _ := harness.HTTPGet(t, cl, u); resp.StatusCode != 200 {
			t.Fatalf("download: %s", resp.Status)
		}
	}
	download()
	fi, err := os.Stat(a.audit)
	if err != nil || fi.Size() < 200 {
		t.Fatalf("the first audit line: %v %v", fi, err)
	}
	// Room for half a line more: the next write is cut short.
	limit := func(bytes string) {
		t.Helper()
		if out, err := exec.Command(prlimit, "--pid", fmt.Sprint(a.proc.Pid), "--fsize="+bytes+":unlimited").CombinedOutput(); err != nil {
			t.Fatalf("prlimit: %v %s", err, out)
		}
	}
	limit(fmt.Sprint(fi.Size() + fi.Size()/2))
	download()
	harness.WaitLog(t, a.logs, "the failed write", func(r map[string]any) bool { return r["msg"] == "writing the audit log; the download was served" })
	limit("unlimited")
	download()
	out := harness.MustRun(t, "", nil, harness.Bin, "audit", "--log", a.audit, "--json")
	var sum struct {
		Records int
		Skipped int `json:"skipped_lines"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	if sum.Records != 2 || sum.Skipped != 0 {
		text, _ := os.ReadFile(a.audit)
		t.Errorf("after a full disk: %d records, %d lines skipped (want the 2 downloads whose lines were written, none torn):\n%s", sum.Records, sum.Skipped, text)
	}
}

// Finding (high): the documentation told operators behind a load balancer that
// passes TLS through (HAProxy in TCP mode, as the replica tests run it) to
// list it in trusted-proxy, for the per-address cap; but serve believes
// X-Forwarded-For from a trusted proxy, and through TLS passthrough that
// header is the client's own. Any client chose the address the access
// log, the audit log and the failed-attempt limit saw, with one header.
// A passthrough balancer now goes in passthrough-proxy: exempt from the
// per-address limits, its X-Forwarded-For never believed.
func TestAccessPassthroughBalancer(t *testing.T) {
	t.Parallel()
	haproxy := harness.HAProxyBin(t)
	a := newAttackTarget(t, "--passthrough-proxy", "127.0.0.1", "--max-conns-per-ip", "2")
	lb, _ := harness.StartHAProxy(t, haproxy, a.caFile, []*harness.Served{{Port: a.port}})
	_, pool, _ := harness.CAClient(t, a.root)
	from := func(ip string) *http.Client {
		cl := clientFrom(ip)
		cl.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
		return cl
	}
	attacker, victim := from("127.0.0.2"), from("127.0.0.3")
	harness.WaitHealthy(t, attacker, lb+"/healthz")

	forged := []string{"Authorization", "Bearer " + a.ci, "X-Forwarded-For", "203.0.113.77"}
	if resp, _ := harness.HTTPGet(t, attacker, signedURL(t, attacker, lb, forged...), forged...); resp.StatusCode != 200 {
		t.Fatalf("the package through the balancer: %s", resp.Status)
	}
	harness.WaitLog(t, a.logs, "the download's access line", func(r map[string]any) bool { return r["provider"] == "registry.terraform.io/hashicorp/random" })
	if strings.Contains(a.logs.String(), "203.0.113.77") {
		t.Error("serve's log names the address the client wrote into X-Forwarded-For")
	}
	if text, _ := os.ReadFile(a.audit); !strings.Contains(string(text), `"client":"127.0.0.1"`) || strings.Contains(string(text), "203.0.113.77") {
		t.Errorf("the audit log does not name the balancer:\n%s", text)
	}
	// Failures in another client's name lock nobody out (the balancer is
	// exempt; clients are capped on it).
	guess := "airgap_" + strings.Repeat("G", 43)
	for i := 0; i < 11; i++ {
		harness.HTTPGet(t, attacker, lb+"/v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+guess, "X-Forwarded-For", "127.0.0.3")
	}
	if resp, b := harness.HTTPGet(t, victim, lb+"/v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+a.ci); resp.StatusCode != 200 {
		t.Errorf("a client after another failed in its name: %s %s", resp.Status, b)
	}
	// The balancer is exempt from max-conns-per-ip (2): three clients hold
	// a connection each through it.
	var held []*http.Client
	for i := 0; i < 3; i++ {
		cl := from(fmt.Sprintf("127.0.0.%d", 10+i))
		if resp, _ := harness.HTTPGet(t, cl, lb+"/healthz"); resp.StatusCode != 200 {
			t.Errorf("client %d through the balancer: %s", i, resp.Status)
		}
		held = append(held, cl)
	}
	for _, cl := range held {
		cl.CloseIdleConnections()
	}
}
