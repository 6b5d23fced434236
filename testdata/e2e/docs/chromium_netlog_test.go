package docs

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestChromiumNetLogCheck: the net log check finds what Chromium asks for
// without chromiumResolverRules (lines from a run without them, in a
// network namespace with only loopback), and passes a run with them.
func TestChromiumNetLogCheck(t *testing.T) {
	t.Parallel()
	consts := `{"constants":{"logEventTypes":{"HOST_RESOLVER_MANAGER_REQUEST":10,"HOST_RESOLVER_MANAGER_JOB":11,"TCP_CONNECT_ATTEMPT":20,"UDP_CONNECT":21,"SOCKET_CONNECT":22,"UDP_LOCAL_ADDRESS":23},"logSourceType":{"SOCKET":1,"UDP_SOCKET":2,"UDP_CLIENT_SOCKET":3}},
"events": [
`
	withRules := consts + `{"params":{"host":"https://~notfound"},"phase":1,"source":{"id":4,"type":9},"type":10},
{"params":{"host":"http://127.0.0.1:18765"},"phase":1,"source":{"id":5,"type":9},"type":10},
{"params":{"address":"[2001:4860:4860::8888]:443"},"phase":0,"source":{"id":6,"type":2},"type":21},
{"params":{"address":"[2001:4860:4860::8888]:443"},"phase":0,"source":{"id":7,"type":3},"type":22},
{"params":{"address":"[fd00::2]:37418"},"phase":0,"source":{"id":6,"type":2},"type":23},
{"params":{"address":"127.0.0.1:18765"},"phase":1,"source":{"id":8,"type":1},"type":20},
{"params":{"host":"http://loc`
	off, n, err := harness.ChromiumOffMachine(strings.NewReader(withRules))
	if err != nil || n != 2 || len(off) != 0 {
		t.Errorf("a run with the rules: %q, %d resolutions, %v", off, n, err)
	}
	without := consts + `{"params":{"host":"http://clients2.google.com"},"phase":1,"source":{"id":4,"type":9},"type":11},
{"params":{"host":"https://update.googleapis.com"},"phase":1,"source":{"id":5,"type":9},"type":10},
{"params":{"address":"[2001:4860:4860::8888]:443"},"phase":1,"source":{"id":8,"type":1},"type":20},
{"params":{"address":"142.250.1.1:443"},"phase":1,"source":{"id":8,"type":1},"type":20}
]}
`
	off, _, err = harness.ChromiumOffMachine(strings.NewReader(without))
	want := []string{"HOST_RESOLVER_MANAGER_JOB http://clients2.google.com", "HOST_RESOLVER_MANAGER_REQUEST https://update.googleapis.com",
		"TCP_CONNECT_ATTEMPT [2001:4860:4860::8888]:443 (SOCKET)", "TCP_CONNECT_ATTEMPT 142.250.1.1:443 (SOCKET)"}
	if err != nil || strings.Join(off, "\n") != strings.Join(want, "\n") {
		t.Errorf("a run without the rules: %q, %v; want %q", off, err, want)
	}
	if _, _, err := harness.ChromiumOffMachine(strings.NewReader(`{"events": []}`)); err == nil {
		t.Error("a log without constants passed")
	}
}

// TestChromiumStaysOnLoopback: the tests' Chromium (harness.NewChromium) loads a
// page that asks for public hosts (a script, an image, a fetch); each
// fails inside Chromium, the page itself loads, and its net log, which
// recorded the page's own request, shows nothing off this machine.
func TestChromiumStaysOnLoopback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>t</title><img src="https://update.googleapis.com/x.png">
<script src="http://clients2.google.com/x.js"></script>
<script>window.fetched = fetch("https://example.com/").then(() => "reached", e => "failed: " + e);</script>`)
	}))
	defer srv.Close()
	work := t.TempDir()
	caFile := filepath.Join(work, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	ctx, cancel := harness.NewChromium(t, srv.URL, caFile, work)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	fetched, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.fetched`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fetched, "failed: ") {
		t.Errorf("fetch of https://example.com/ in the page: %s", fetched)
	}
}
