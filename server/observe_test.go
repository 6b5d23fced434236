package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/ops"
)

// syncBuffer is a log sink the server goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLines waits until the sink holds at least n lines (the access line
// is written when the handler returns, which can be just after the client
// has read the body).
func (s *syncBuffer) waitLines(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		lines := strings.Split(strings.TrimRight(s.String(), "\n"), "\n")
		if len(lines) >= n && lines[0] != "" || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type observed struct {
	*env
	logs    *syncBuffer
	metrics *ops.Metrics
}

// setupObserved serves the standard store through Observe (JSON access
// log, metrics at /metrics, 127.0.0.0/8 trusted as a proxy when trust is
// set) on a real TLS server whose ConnState feeds the metrics.
func setupObserved(t *testing.T, trust bool, format string) *observed {
	t.Helper()
	e := setup(t)
	logs := &syncBuffer{}
	var h slog.Handler = slog.NewJSONHandler(logs, nil)
	if format == "text" {
		h = slog.NewTextHandler(logs, nil)
	}
	var proxies []string
	if trust {
		proxies = []string{"127.0.0.0/8"}
	}
	tp, err := access.ParseTrustedProxies(proxies)
	if err != nil {
		t.Fatal(err)
	}
	m := ops.NewMetrics(ops.MetricsOptions{Version: "test", Catalog: e.st.Catalog,
		LastImport: func() time.Time { ix := e.st.Index(); return ix.Imports[len(ix.Imports)-1].Time }})
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewUnstartedServer(ops.Observe(m.Mount(srv), ops.ObserveOptions{
		Log: slog.New(h), Metrics: m, Proxies: tp, Catalog: e.st.Catalog}))
	ts.Config.ConnState = m.ConnState
	ts.StartTLS()
	t.Cleanup(ts.Close)
	e2 := *e
	e2.ts, e2.cl = ts, ts.Client()
	return &observed{env: &e2, logs: logs, metrics: m}
}

const secret = "Bearer s3cr3t-t0ken-never-logged"

func TestAccessLogJSON(t *testing.T) {
	o := setupObserved(t, true, "json")
	ua := "Terraform/1.11.0 (+https://www.terraform.io)"
	var dl struct {
		DownloadURL string `json:"download_url"`
	}
	o.getJSON(t, "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64?token=querysecret", &dl,
		"User-Agent", ua, "Authorization", secret, "X-Forwarded-For", "203.0.113.7, 127.0.0.9")
	blobPath := strings.TrimPrefix(dl.DownloadURL, o.ts.URL)
	if r, b := o.get(t, blobPath, "User-Agent", "OpenTofu/1.11.14", "Authorization", secret); r.StatusCode != 200 || len(b) == 0 {
		t.Fatalf("package: %s", r.Status)
	}
	var mod struct{ Location string }
	o.getJSON(t, "/v1/modules/example/vpc/aws/1.0.0/download", &mod)
	archive, _, _ := strings.Cut(strings.TrimPrefix(mod.Location, o.ts.URL), "//")
	if r, _ := o.get(t, archive, "User-Agent", "curl/8.0 \u00e9"); r.StatusCode != 200 {
		t.Fatalf("archive: %s", r.Status)
	}
	// A path that decodes to control characters and a fake log line.
	if r, _ := o.get(t, "/v1/providers/%1b%5b31m%0a%7b%22status%22:200%7d/x/versions"); r.StatusCode != 404 {
		t.Fatalf("hostile path: %s", r.Status)
	}
	lines := o.logs.waitLines(t, 5)
	if len(lines) != 5 {
		t.Fatalf("want 5 access lines, got %d:\n%s", len(lines), o.logs.String())
	}
	if strings.Contains(o.logs.String(), "s3cr3t") || strings.Contains(o.logs.String(), "querysecret") || strings.Contains(o.logs.String(), "Authorization") {
		t.Fatalf("a secret reached the log:\n%s", o.logs.String())
	}
	recs := make([]map[string]any, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &recs[i]); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", i, err, l)
		}
		for _, f := range []string{"time", "level", "msg", "client", "method", "host", "path", "status", "bytes", "dur_us"} {
			if _, ok := recs[i][f]; !ok {
				t.Errorf("line %d lacks %q: %s", i, f, l)
			}
		}
		if recs[i]["msg"] != "request" || recs[i]["level"] != "INFO" {
			t.Errorf("line %d: %s", i, l)
		}
	}
	// 0: the registry download answer, through a trusted proxy chain.
	want := func(i int, k string, v any) {
		t.Helper()
		if got := recs[i][k]; got != v {
			t.Errorf("line %d: %s = %#v, want %#v\n%s", i, k, got, v, lines[i])
		}
	}
	want(0, "client", "203.0.113.7")
	want(0, "peer", "127.0.0.1")
	want(0, "path", "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64")
	want(0, "status", 200.0)
	want(0, "client_name", "terraform")
	want(0, "client_version", "1.11.0")
	// 1: the package itself, named from the catalog.
	want(1, "client", "127.0.0.1")
	want(1, "client_name", "tofu")
	want(1, "client_version", "1.11.14")
	want(1, "provider", "registry.terraform.io/hashicorp/random")
	want(1, "version", "3.6.0")
	want(1, "platform", "linux_amd64")
	if n, _ := recs[1]["bytes"].(float64); n < 60<<10 {
		t.Errorf("package bytes %v, want the package size", recs[1]["bytes"])
	}
	// 3: the module archive; an unknown client keeps its (quoted) UA.
	want(3, "module", "registry.terraform.io/example/vpc/aws")
	want(3, "version", "1.0.0")
	want(3, "user_agent", "curl/8.0 \u00e9")
	// 4: control characters stay inside one escaped field.
	want(4, "path", "/v1/providers/\x1b[31m\n{\"status\":200}/x/versions")
	want(4, "status", 404.0)
}

func TestAccessLogUntrustedForwardedFor(t *testing.T) {
	o := setupObserved(t, false, "text")
	o.get(t, "/healthz", "X-Forwarded-For", "198.51.100.1")
	o.get(t, "/v1/providers/%1b%5b31m%0aforged%3dline/x/versions")
	lines := o.logs.waitLines(t, 2)
	if len(lines) != 2 {
		t.Fatalf("want 2 lines (a newline in a path must not split one), got %d:\n%s", len(lines), o.logs.String())
	}
	if !strings.Contains(lines[0], "client=127.0.0.1 ") || strings.Contains(lines[0], "198.51.100.1") || strings.Contains(lines[0], "peer=") {
		t.Errorf("X-Forwarded-For believed from an untrusted peer: %s", lines[0])
	}
	if !strings.Contains(lines[1], `path="/v1/providers/\x1b[31m\nforged=line/x/versions"`) {
		t.Errorf("text handler did not quote the control characters: %s", lines[1])
	}
}

func TestClientFromUserAgent(t *testing.T) {
	for ua, want := range map[string][2]string{
		"Terraform/1.11.0 (+https://www.terraform.io)": {"terraform", "1.11.0"},
		"OpenTofu/1.11.14":                      {"tofu", "1.11.14"},
		"Terraform/1.12.0-alpha20250101":        {"terraform", "1.12.0-alpha20250101"},
		"Terraform/\x1b[31m":                    {"terraform", ""},
		"Terraform/" + strings.Repeat("9", 100): {"terraform", ""},
		"Go-http-client/1.1":                    {"", ""},
		"":                                      {"", ""},
	} {
		n, v := ops.ClientFromUserAgent(ua)
		if n != want[0] || v != want[1] {
			t.Errorf("%q: %q %q, want %q", ua, n, v, want)
		}
	}
}

func TestEndpointKind(t *testing.T) {
	for p, want := range map[string]string{
		"/.well-known/terraform.json":                                     ops.KindDiscovery,
		"/origin/registry.opentofu.org/.well-known/terraform.json":        ops.KindDiscovery,
		"/v1/providers/hashicorp/aws/versions":                            ops.KindProviderVersions,
		"/origin/x/v1/providers/hashicorp/aws/5.0.0/download/linux/amd64": ops.KindProviderDownload,
		"/v1/modules/a/b/c/versions":                                      ops.KindModuleVersions,
		"/v1/modules/a/b/c/1.0.0/download":                                ops.KindModuleDownload,
		"/mirror/registry.terraform.io/hashicorp/aws/index.json":          ops.KindMirrorIndex,
		"/mirror/registry.terraform.io/hashicorp/aws/5.0.0.json":          ops.KindMirrorVersion,
		"/blobs/sha256/00/x.zip":                                          ops.KindBlob,
		"/archives/sha256/00.tar.gz":                                      ops.KindArchive,
		"/healthz":                                                        ops.KindHealthz,
		"/metrics":                                                        ops.KindMetrics,
		"/origin/":                                                        ops.KindOther,
		"/../../etc/passwd":                                               ops.KindOther,
	} {
		if got := ops.EndpointKind(p); got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
}

// scrape fetches /metrics and checks it with the real promtool.
func scrape(t *testing.T, o *observed) string {
	t.Helper()
	resp, body := o.get(t, "/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not on PATH: install Debian's prometheus package (.ci/run does)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n--- metrics:\n%s", err, out, body)
	}
	return string(body)
}

// metric returns the value of one series ("name{labels}" exactly as
// exposed, labels sorted) or -1 when absent.
func metric(text, series string) float64 {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}

func TestMetrics(t *testing.T) {
	o := setupObserved(t, false, "json")
	before := scrape(t, o)
	for _, s := range []string{
		"airgap_catalog_provider_versions", "airgap_catalog_module_versions", "airgap_catalog_blobs",
		"airgap_catalog_bytes", "airgap_store_last_import_timestamp_seconds", `airgap_build_info{version="test"}`,
	} {
		if metric(before, s) <= 0 {
			t.Errorf("%s: %v", s, metric(before, s))
		}
	}
	if v := metric(before, "airgap_catalog_provider_versions"); v != 2 {
		t.Errorf("provider versions %v, want 2", v)
	}
	if v := metric(before, "airgap_http_open_connections"); v != 1 {
		t.Errorf("open connections %v, want 1 (this scrape's)", v)
	}
	const pv = `airgap_http_requests_total{code="200",kind="provider_versions"}`
	const dl = `airgap_downloads_total{address="registry.terraform.io/hashicorp/random",kind="provider",version="3.6.0"}`
	if metric(before, pv) != -1 || metric(before, dl) != -1 {
		t.Fatal("counters before any request")
	}
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	for i := 0; i < 3; i++ {
		var v any
		o.getJSON(t, "/v1/providers/hashicorp/random/versions", &v)
	}
	o.getJSON(t, "/v1/providers/hashicorp/random/3.6.0/download/darwin/arm64", &d)
	o.get(t, strings.TrimPrefix(d.DownloadURL, o.ts.URL))
	o.get(t, strings.TrimPrefix(d.DownloadURL, o.ts.URL), "Range", "bytes=0-99")
	o.get(t, "/blobs/sha256/"+strings.Repeat("ab", 32)+"/made-up.zip") // not in the catalog
	o.get(t, "/v1/providers/"+strings.Repeat("x", 40)+"/y/versions")
	// A second client connection.
	cl2 := &http.Client{Transport: o.ts.Client().Transport.(*http.Transport).Clone()}
	resp, err := cl2.Get(o.ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) // read to the end, or the client closes the connection
	resp.Body.Close()

	var after string
	deadline := time.Now().Add(5 * time.Second)
	for {
		after = scrape(t, o)
		if metric(after, dl) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := metric(after, pv); v != 3 {
		t.Errorf("%s = %v, want 3", pv, v)
	}
	if v := metric(after, dl); v != 1 {
		t.Errorf("%s = %v, want 1 (a full download counts, a ranged one does not)", dl, v)
	}
	if v := metric(after, `airgap_http_requests_total{code="206",kind="blob"}`); v != 1 {
		t.Errorf("206 blob requests %v", v)
	}
	if v := metric(after, `airgap_http_requests_total{code="404",kind="blob"}`); v != 1 {
		t.Errorf("404 blob requests %v", v)
	}
	if strings.Contains(after, "made-up") || strings.Contains(after, "xxxxxxxx") || strings.Count(after, "airgap_downloads_total{") != 1 {
		t.Errorf("client text became a label:\n%s", after)
	}
	if v := metric(after, `airgap_http_response_bytes_total{kind="blob"}`); v < 32<<10 {
		t.Errorf("blob bytes %v", v)
	}
	if v := metric(after, `airgap_http_request_duration_seconds_count{kind="provider_versions"}`); v != 4 { // 3 found, 1 not
		t.Errorf("duration count %v", v)
	}
	if v := metric(after, "airgap_http_open_connections"); v != 2 {
		t.Errorf("open connections %v, want 2 (accepted %v)", v, metric(after, "airgap_http_connections_total"))
	}
	cl2.CloseIdleConnections()
	deadline = time.Now().Add(5 * time.Second)
	for metric(after, "airgap_http_open_connections") != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		after = scrape(t, o)
	}
	if v := metric(after, "airgap_http_open_connections"); v != 1 {
		t.Errorf("open connections after a client left: %v, want 1", v)
	}
}

// TestAccessLogLevelChange: with no metrics, access lines follow the log
// level as SIGHUP changes it (a LevelVar), request by request: off at
// warn, on again at info; a request in flight while the level changes is
// logged only if access lines were on both when it arrived and when it
// ended.
func TestAccessLogLevelChange(t *testing.T) {
	e := setup(t)
	logs := &syncBuffer{}
	level := &slog.LevelVar{}
	level.Set(slog.LevelWarn)
	srv := server.New(e.st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	arrived, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
			w.Write([]byte("done"))
			return
		}
		srv.ServeHTTP(w, r)
	})
	ts := httptest.NewTLSServer(ops.Observe(h, ops.ObserveOptions{
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})), Catalog: e.st.Catalog}))
	t.Cleanup(ts.Close)
	e.ts, e.cl = ts, ts.Client()
	lines := func() int {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Count(logs.b.String(), "msg=request")
	}
	// inFlight sends a request, sets the level while it is being
	// answered, and waits for the answer.
	inFlight := func(to slog.Level) {
		done := make(chan struct{})
		go func() { e.get(t, "/slow"); close(done) }()
		<-arrived
		level.Set(to)
		release <- struct{}{}
		<-done
	}

	e.get(t, "/.well-known/terraform.json")
	if n := lines(); n != 0 {
		t.Fatalf("at warn: %d access lines, want none", n)
	}
	level.Set(slog.LevelInfo)
	e.get(t, "/.well-known/terraform.json")
	if n := lines(); n != 1 {
		t.Fatalf("at info: %d access lines, want 1", n)
	}
	inFlight(slog.LevelInfo) // on throughout
	if n := lines(); n != 2 {
		t.Fatalf("a request at info throughout: %d access lines in all, want 2", n)
	}
	inFlight(slog.LevelWarn) // arrived at info, ended at warn
	level.Set(slog.LevelWarn)
	inFlight(slog.LevelInfo) // arrived at warn, ended at info
	if n := lines(); n != 2 {
		t.Fatalf("requests in flight across a level change: %d access lines in all, want 2", n)
	}
	e.get(t, "/.well-known/terraform.json")
	if n := lines(); n != 3 {
		t.Fatalf("at info again: %d access lines in all, want 3", n)
	}
}
