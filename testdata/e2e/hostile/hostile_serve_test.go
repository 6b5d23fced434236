package hostile

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// encodeSome percent-encodes every third letter or digit of a path, so
// that each request spells the same path differently.
func encodeSome(path string, n int) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c != '/' && (i+n)%3 == 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// TestHostileServeMemory attacks the real 'airgap serve' with the requests
// that grew the old answer cache without bound (issue 11, finding 2): 4,000
// provider- and module-download requests, each with a distinct Host of
// 16–30 KiB and a differently percent-encoded path. Answers must stay
// correct and must not contain the Host, and serve's resident memory must
// stay within 32 MiB of where it was after a warm-up of the same traffic
// (the old cache, keyed by Host and raw path, grew from 13 to 883 MB).
func TestHostileServeMemory(t *testing.T) {
	storeDir, _ := harness.ImportStandard(t)
	srv := harness.StartServe(t, storeDir)
	base, caFile, proc := srv.Base, srv.CAFile, srv.Proc

	pemData, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	const workers = 8
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: workers}}
	paths := []string{
		"/v1/providers/hashicorp/random/3.6.0/download/linux/amd64",
		"/v1/providers/hashicorp/random/3.6.0/download/darwin/arm64",
		"/v1/modules/example/vpc/aws/1.0.0/download",
	}
	var failed atomic.Int32
	flood := func(from, n int) {
		var wg sync.WaitGroup
		next := atomic.Int64{}
		next.Store(int64(from))
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= from+n || failed.Load() > 0 {
						return
					}
					p := paths[i%len(paths)]
					// A distinct Host of 16–30 KiB (the header limit is 32 KiB).
					host := fmt.Sprintf("h%d.", i) + strings.Repeat("a", 16<<10+(i*7919)%(14<<10)) + ".site.test"
					req, _ := http.NewRequest("GET", strings.TrimSuffix(base, "/")+encodeSome(p, i), nil)
					req.Host = host
					resp, err := cl.Do(req)
					if err != nil {
						failed.Add(1)
						t.Errorf("request %d: %v", i, err)
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var doc struct {
						DownloadURL string `json:"download_url"`
						Location    string `json:"location"`
					}
					if resp.StatusCode != 200 || json.Unmarshal(body, &doc) != nil || doc.DownloadURL+doc.Location == "" {
						failed.Add(1)
						t.Errorf("request %d (%s): %s %.200s", i, p, resp.Status, body)
						return
					}
					if u := doc.DownloadURL + doc.Location + resp.Header.Get("X-Terraform-Get"); strings.Contains(u, "aaaa") || !strings.HasPrefix(u, "/") {
						failed.Add(1)
						t.Errorf("request %d: the answer carries the Host or an absolute URL: %.200s", i, u)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	// Warm-up: the same traffic, so that buffers, connections and the
	// collector's heap target reach their steady state.
	flood(0, 1000)
	time.Sleep(2 * time.Second)
	before := harness.VMRSS(t, proc.Pid)

	peakSince := harness.SamplePeakRSS(t, proc.Pid, before)
	start := time.Now()
	flood(1000, 4000)
	peak := peakSince()
	took := time.Since(start)
	after := harness.VMRSS(t, proc.Pid)
	peak = max(peak, after)
	if failed.Load() > 0 {
		t.FailNow()
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("serve RSS: %s after the warm-up, peak %s and %s after 4,000 requests with distinct 16–30 KiB Hosts and encoded paths (%v)",
		mib(before), mib(peak), mib(after), took.Round(time.Millisecond))
	// serve collects at GOGC=400: its heap may reach five times what is
	// live before a collection, so the flood's garbage alone (8 workers'
	// 16–30 KiB headers) showed peaks 4–18 MiB over the warm-up in seven
	// runs on 2 cores. Anything that keeps what the flood sends keeps at
	// least 4,000 × 16 KiB = 62.5 MiB of Host bytes.
	const allowed = 32 << 20
	if grown := peak - before; grown > allowed {
		t.Errorf("serve's RSS grew by %s under the Host flood (allowed %s): the answer cache depends on what clients send", mib(grown), mib(allowed))
	}
}
