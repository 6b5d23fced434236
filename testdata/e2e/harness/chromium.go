package harness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/dist/registrytest"
)

// AxeVersion is the axe-core release the browser test runs on every page
// the appliance serves.
const AxeVersion = "4.14.1"

var (
	axeOnce sync.Once
	axeJS   string
	axeErr  string
)

// axeSource returns axe-core's axe.min.js, installing the npm package into
// the test cache ($AIRGAP_TEST_CACHE, default ~/.cache/airgap) on first use
// (npm, from the npm registry; about 2 s). A missing axe-core fails the
// test: the pages' accessibility must not go unchecked.
func axeSource(t *testing.T) string {
	t.Helper()
	axeOnce.Do(func() { axeJS, axeErr = installAxe() })
	if axeErr != "" {
		t.Fatalf("axe-core %s is required by the browser test and could not be installed: %s\nhint: it is installed with npm (apt-get install -y npm; .ci/run does) from the npm registry", AxeVersion, axeErr)
	}
	return axeJS
}

func installAxe() (string, string) {
	cache, err := CacheDir()
	if err != nil {
		return "", err.Error()
	}
	dir := filepath.Join(cache, "axe-core-"+AxeVersion)
	file := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
		return string(b), ""
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "npm is not installed"
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err.Error()
	}
	tmp, err := os.MkdirTemp(cache, ".axe-core-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--no-save", "--ignore-scripts", "axe-core@"+AxeVersion)
	cmd.Env = registrytest.UnguardedEnv() // from the npm registry, once
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("npm install axe-core@%s: %v\n%s", AxeVersion, err, out)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err.Error()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err.Error()
	}
	return string(b), ""
}

// axeViolation is one rule axe-core found broken, with the elements.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

// AxeCheck runs axe-core (every rule it runs by default: WCAG 2.x A and AA
// and best practices) on the page loaded in ctx and fails the test for
// every violation.
func AxeCheck(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axeSource(t)+"\n;true"))
	var res string
	if err == nil {
		res, err = chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`,
			chromedp.EvalAwaitPromise))
	}
	if err != nil {
		t.Fatalf("axe-core on %s: %v", page, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(res), &vs); err != nil {
		t.Fatalf("axe-core on %s: %v\n%s", page, err, res)
	}
	for _, v := range vs {
		var targets []string
		for _, n := range v.Nodes {
			targets = append(targets, fmt.Sprint(n.Target...))
		}
		t.Errorf("axe-core on %s: %s (%s): %s: %s", page, v.ID, v.Impact, v.Help, strings.Join(targets, ", "))
	}
}

// NewChromium starts headless Chromium that trusts exactly the appliance
// at base: the served chain is verified against its CA in Go, then that
// leaf's key is pinned with --ignore-certificate-errors-spki-list (Chromium
// on Linux reads CAs only from an NSS database, which would need
// certutil). The context ends after 120 s. It reaches no host off this
// machine: cancel fails the test if its net log shows a lookup or a
// connection that was not on loopback (checkChromiumNetLog).
func NewChromium(t *testing.T, base, caFile, work string) (context.Context, context.CancelFunc) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
	}
	pemCA, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	u, _ := url.Parse(base)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
	if err != nil {
		t.Fatalf("the appliance's certificate does not verify against its CA: %v", err)
	}
	spki := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
	conn.Close()

	netLog := filepath.Join(work, "chromium-netlog.json")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(work, "chromium-profile")),
		chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(spki[:])),
		chromedp.WindowSize(1280, 1000),
		// No host but loopback, and no lookup: Chromium's background
		// services (accounts.google.com, content-autofill.googleapis.com,
		// update.googleapis.com, clients2.google.com, even with the flags
		// above) would otherwise ask the machine's resolver for their
		// names, or the network guard's proxy (HTTPS_PROXY), which would
		// fail every run on them. Every other name fails inside Chromium
		// (ERR_NAME_NOT_RESOLVED). Left is its IPv6 reachability probe,
		// which no flag turns off: a UDP socket connect()ed to
		// 2001:4860:4860::8888 to read the source address the kernel
		// would pick, then closed; nothing is sent.
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", chromiumResolverRules),
		// Fewer background requests to refuse.
		chromedp.Flag("no-pings", true), chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("metrics-recording-only", true), chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-default-apps", true), chromedp.Flag("disable-breakpad", true),
		// What it asked for, checked when it has quit (checkChromiumNetLog).
		chromedp.Flag("log-net-log", netLog),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	return ctx, func() {
		cancelT()
		cancelC()
		cancelA() // waits for Chromium to exit
		checkChromiumNetLog(t, netLog)
	}
}

// JSEval returns a function that evaluates a JavaScript expression of
// string value in the page of ctx.
func JSEval(t *testing.T, ctx context.Context) func(string) string {
	return func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
}

func Contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// chromiumResolverRules is Chromium's --host-resolver-rules in the tests:
// every name but loopback's fails inside Chromium (ERR_NAME_NOT_RESOLVED)
// without a lookup; an address is not a name and is not mapped.
const chromiumResolverRules = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE [::1]"

// chromiumIPv6Probe is where Chromium's IPv6 reachability check connect()s
// a UDP socket, to read the source address the kernel would pick; nothing
// is sent, and no flag turns it off.
const chromiumIPv6Probe = "[2001:4860:4860::8888]:443"

// checkChromiumNetLog fails t if the net log Chromium wrote (--log-net-log)
// at path shows it asked for a name or an address off this machine, or if
// the log is missing or records no request at all (a check of nothing).
func checkChromiumNetLog(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("chromium's net log: %v", err)
		return
	}
	defer f.Close()
	off, requests, err := ChromiumOffMachine(f)
	switch {
	case err != nil:
		t.Errorf("chromium's net log %s: %v", path, err)
	case requests == 0:
		t.Errorf("chromium's net log %s records no host resolution at all: the check would miss a lookup", path)
	case len(off) > 0:
		t.Errorf("chromium asked for hosts off this machine (net log %s):\n  %s\nhint: tests reach loopback only: see chromiumResolverRules and the flags in newChromium", path, strings.Join(off, "\n  "))
	}
}

// ChromiumOffMachine reads a Chromium net log (JSON, one event a line, as
// Chromium writes it; a log cut short by a killed browser still reads) and
// returns each host resolution of a name that is not loopback's and each
// connection to an address off loopback (but chromiumIPv6Probe's UDP
// connect), one line each, and how many host resolutions it read.
func ChromiumOffMachine(r io.Reader) (off []string, requests int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20) // the first line holds every constant (about 50 kB)
	var consts struct {
		Constants struct {
			EventTypes  map[string]int `json:"logEventTypes"`
			SourceTypes map[string]int `json:"logSourceType"`
		} `json:"constants"`
	}
	if !sc.Scan() {
		return nil, 0, fmt.Errorf("empty: %v", sc.Err())
	}
	first := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
	if err := json.Unmarshal(append(first, '}'), &consts); err != nil || consts.Constants.EventTypes == nil {
		return nil, 0, fmt.Errorf("its first line is not the constants: %v", err)
	}
	eventName, sourceName := map[int]string{}, map[int]string{}
	for k, v := range consts.Constants.EventTypes {
		eventName[v] = k
	}
	for k, v := range consts.Constants.SourceTypes {
		sourceName[v] = k
	}
	seen := map[string]bool{}
	note := func(s string) {
		if !seen[s] {
			seen[s] = true
			off = append(off, s)
		}
	}
	for sc.Scan() {
		var e struct {
			Type   int `json:"type"`
			Source struct {
				Type int `json:"type"`
			} `json:"source"`
			Params map[string]any `json:"params"`
		}
		line := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			continue // "events": [, the closing lines, a line cut short
		}
		name := eventName[e.Type]
		switch {
		case name == "HOST_RESOLVER_MANAGER_REQUEST" || name == "HOST_RESOLVER_MANAGER_JOB":
			host, _ := e.Params["host"].(string)
			if host == "" {
				continue
			}
			requests++
			if !loopbackName(host) {
				note(fmt.Sprintf("%s %s", name, host))
			}
		case strings.Contains(name, "CONNECT") && !strings.Contains(name, "LOCAL"):
			addr, _ := e.Params["address"].(string)
			if addr == "" || onLoopback(addr) {
				continue
			}
			if addr == chromiumIPv6Probe && strings.HasPrefix(sourceName[e.Source.Type], "UDP_") {
				continue
			}
			note(fmt.Sprintf("%s %s (%s)", name, addr, sourceName[e.Source.Type]))
		}
	}
	return off, requests, sc.Err()
}

// loopbackName: a host of a net log's resolution ("https://HOST:PORT",
// "HOST:PORT" or "HOST") that Chromium answers without asking anyone: a
// loopback address, localhost, or ~NOTFOUND (chromiumResolverRules).
func loopbackName(host string) bool {
	if strings.Contains(host, "://") {
		if u, err := url.Parse(host); err == nil {
			host = u.Host
		}
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "~notfound" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onLoopback: ADDRESS:PORT on loopback.
func onLoopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		h = addr
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
