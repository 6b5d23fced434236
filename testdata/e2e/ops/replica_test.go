package ops

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// sample is one request of the load.
type sample struct {
	start, end time.Time
	err        error
}

// TestReplicasBehindHAProxy: three replicas over one store behind a real
// HAProxy on loopback (TLS passthrough, health checks on /healthz over
// TLS). Under a steady, bounded stream of registry requests, a bundle is
// imported and then one replica is killed (SIGKILL). Every replica must
// serve the new catalog within 2 s of the import, a replica that lists the
// new provider must also serve its package (no mixed state), and no
// request may fail except those already in flight on the killed replica
// (which no balancer can move). p50/p99 latency is logged.
func TestReplicasBehindHAProxy(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not on PATH: install Debian's haproxy package (.ci/run does)")
	}
	root, keyring, newBundle := harness.OpsStore(t)
	next := newBundle("newprov")

	// Three replicas started at once over one store: they must agree on
	// one CA and share certificates through STORE/tls.
	var reps []*harness.Served
	for i := 0; i < 3; i++ {
		reps = append(reps, harness.StartReplica(t, root, harness.FreePort(t)))
	}
	cl, pool, caFile := harness.CAClient(t, root)
	serials := map[string]bool{}
	for _, r := range reps {
		harness.WaitHealthy(t, cl, fmt.Sprintf("https://localhost:%d/healthz", r.Port))
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.Port), &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		serials[c.ConnectionState().PeerCertificates[0].SerialNumber.String()] = true
		c.Close()
	}
	if len(serials) != 1 {
		t.Errorf("the replicas serve %d different leaves for localhost; want one, shared through STORE/tls", len(serials))
	}

	base, hpLogs := harness.StartHAProxy(t, haproxy, caFile, reps)
	harness.WaitHealthy(t, cl, base+"/healthz")
	time.Sleep(600 * time.Millisecond) // every server through its first checks

	// The load: 4 clients, each with its own keep-alive connection, about
	// 50 requests/s each, for a bounded time.
	const (
		workers  = 4
		interval = 20 * time.Millisecond
		duration = 9 * time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var (
		mu       sync.Mutex
		samples  []sample
		imported time.Time // zero until the import has finished
		mixed    []string
	)
	paths := []string{
		"/v1/providers/hashicorp/random/versions",
		"/v1/providers/hashicorp/random/3.6.0/download/linux/amd64",
		"/mirror/registry.terraform.io/hashicorp/random/index.json",
		"/v1/modules/example/vpc/aws/versions",
		"/.well-known/terraform.json",
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			tr := cl.Transport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = 1
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			defer tr.CloseIdleConnections()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for i := w; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				s := sample{start: time.Now()}
				p := paths[i%len(paths)]
				newProv := i%7 == 0
				if newProv {
					p = "/v1/providers/example/newprov/versions"
				}
				code, body, err := harness.Fetch(c, base+p)
				if err == nil && p == paths[1] && code == 200 {
					// follow the download to the package bytes
					var d struct {
						DownloadURL string `json:"download_url"`
					}
					json.Unmarshal(body, &d)
					code, _, err = harness.Fetch(c, harness.ResolveRef(base+p, d.DownloadURL))
				}
				if err == nil && newProv && code == 200 {
					// listed: its package must be served too (no mixed state)
					var d struct {
						DownloadURL string `json:"download_url"`
					}
					var c2 int
					c2, body, err = harness.Fetch(c, base+"/v1/providers/example/newprov/1.0.0/download/linux/amd64")
					if err == nil && c2 == 200 && json.Unmarshal(body, &d) == nil {
						c2, _, err = harness.Fetch(c, harness.ResolveRef(base+"/v1/providers/example/newprov/1.0.0/download/linux/amd64", d.DownloadURL))
					}
					if err == nil && c2 != 200 {
						mu.Lock()
						mixed = append(mixed, fmt.Sprintf("newprov listed but its download answered %d", c2))
						mu.Unlock()
					}
				}
				s.end = time.Now()
				mu.Lock()
				switch {
				case err != nil:
					s.err = err
				case newProv && code == 404 && (imported.IsZero() || s.start.Before(imported.Add(2*time.Second))):
					// not yet imported, or within the 2 s the replicas have to notice
				case code != 200:
					s.err = fmt.Errorf("GET %s: %d", p, code)
				}
				samples = append(samples, s)
				mu.Unlock()
			}
		}(w)
	}

	// The import, while the load runs.
	time.Sleep(1500 * time.Millisecond)
	harness.MustRun(t, "", nil, harness.Bin, "import", "--keyring", keyring, "--store", root, next)
	done := time.Now()
	mu.Lock()
	imported = done
	mu.Unlock()
	var lag []time.Duration
	for _, r := range reps {
		u := fmt.Sprintf("https://localhost:%d/v1/providers/example/newprov/versions", r.Port)
		for {
			code, _, err := harness.Fetch(cl, u)
			if err == nil && code == 200 {
				lag = append(lag, time.Since(done))
				break
			}
			if time.Since(done) > 2*time.Second {
				t.Fatalf("replica :%d does not serve the new catalog 2 s after the import (last: %d %v)", r.Port, code, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Kill one replica outright.
	time.Sleep(1500 * time.Millisecond)
	killed := time.Now()
	reps[1].Cmd.Process.Signal(syscall.SIGKILL)
	<-reps[1].Done

	wg.Wait()
	var lat []time.Duration
	var failed, inFlight int
	for _, s := range samples {
		if s.err == nil {
			lat = append(lat, s.end.Sub(s.start))
			continue
		}
		if !s.start.After(killed) && !s.end.Before(killed) {
			inFlight++ // routed to the killed replica before it died
			continue
		}
		failed++
		if failed <= 5 {
			t.Errorf("request failed (started %v after the kill): %v", s.start.Sub(killed).Round(time.Millisecond), s.err)
		}
	}
	if len(mixed) > 0 {
		t.Errorf("mixed state: %q", mixed)
	}
	if failed > 0 {
		t.Errorf("%d of %d requests failed that the balancer could have routed", failed, len(samples))
	}
	if len(lat) < len(samples)/2 || len(samples) < 100 {
		t.Fatalf("too few successful requests: %d of %d", len(lat), len(samples))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("replicas: %d client operations of 1-3 requests (%d ok, %d in flight on the killed replica), p50 %v, p99 %v, max %v; new catalog on every replica %v after the import",
		len(samples), len(lat), inFlight, pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond), lag)
	// HAProxy's own health check saw the kill.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(hpLogs.String(), "replicas/r2 is DOWN") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(hpLogs.String(), "replicas/r2 is DOWN") {
		t.Errorf("haproxy never marked the killed replica down:\n%s", hpLogs.String())
	}
	// The survivors still answer through the balancer.
	if code, _, err := harness.Fetch(cl, base+"/healthz"); err != nil || code != 200 {
		t.Fatalf("after the kill: %d %v", code, err)
	}
}
