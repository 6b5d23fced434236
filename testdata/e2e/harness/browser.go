package harness

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

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
