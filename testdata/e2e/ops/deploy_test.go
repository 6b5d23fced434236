package ops

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// notifySocket is a stand-in for systemd's notification socket.
type notifySocket struct {
	path string
	msgs chan string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ns := &notifySocket{path: filepath.Join(dir, "notify"), msgs: make(chan string, 16)}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ns.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := c.ReadFromUnix(buf)
			if err != nil {
				close(ns.msgs)
				return
			}
			ns.msgs <- string(buf[:n])
		}
	}()
	return ns
}

func (ns *notifySocket) expect(t *testing.T, want string, within time.Duration) {
	t.Helper()
	select {
	case m := <-ns.msgs:
		if !strings.Contains(m, want) {
			t.Fatalf("sd_notify: got %q, want %q", m, want)
		}
	case <-time.After(within):
		t.Fatalf("sd_notify: no %q within %v", want, within)
	}
}

func promtoolCheck(t *testing.T, metrics []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not on PATH: install Debian's prometheus package (.ci/run does)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(metrics)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestServeOperations runs the real binary as systemd would: from a config
// file, with NOTIFY_SOCKET, JSON logs and metrics; then reloads it with
// SIGHUP and stops it with SIGTERM.
func TestServeOperations(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	port, mport := harness.FreePort(t), harness.FreePort(t)
	cfgPath := filepath.Join(t.TempDir(), "serve.hcl")
	cfgText := fmt.Sprintf(`store = %q
listen = "127.0.0.1:%d"
hostname = ["localhost"]
log-format = "json"
trusted-proxy = ["127.0.0.1"]
`, root, port)
	harness.WriteConfig(t, cfgPath, cfgText)
	ns := newNotifySocket(t)
	srv := harness.Serve(t, harness.ServeOptions{Raw: true, Env: []string{"NOTIFY_SOCKET=" + ns.path},
		Args: []string{"--config", cfgPath, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport)}})
	cmd, logs := srv.Cmd, srv.Logs
	ns.expect(t, "READY=1", 30*time.Second)

	// Ready means answering: no polling needed.
	cl, pool, caFile := harness.CAClient(t, root)
	base := fmt.Sprintf("https://localhost:%d", port)
	if resp, _ := harness.HTTPGet(t, cl, base+"/healthz"); resp.StatusCode != 200 {
		t.Fatalf("healthz right after READY=1: %s", resp.Status)
	}
	// The health check verb, as a container runtime would run it.
	harness.MustRun(t, "", nil, harness.Bin, "healthcheck", "--url", fmt.Sprintf("https://127.0.0.1:%d/healthz", port), "--ca", caFile)
	if out, err := harness.CmdRun(t, "", nil, harness.Bin, "healthcheck", "--url", fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err == nil {
		t.Fatalf("healthcheck trusted a certificate without the CA: %s", out)
	}
	if out, err := harness.CmdRun(t, "", nil, harness.Bin, "healthcheck", "--url", fmt.Sprintf("https://127.0.0.1:%d/healthz", harness.FreePort(t)), "--ca", caFile, "--timeout", "2s"); err == nil {
		t.Fatalf("healthcheck succeeded against a closed port: %s", out)
	}

	// Requests as Terraform makes them, with a credential and through a
	// trusted proxy.
	const token = "Bearer tok-3f9a-never-in-logs"
	var dl struct {
		DownloadURL string `json:"download_url"`
	}
	resp, b := harness.HTTPGet(t, cl, base+"/v1/providers/hashicorp/random/3.6.0/download/linux/amd64",
		"User-Agent", "Terraform/1.11.0 (+https://www.terraform.io)", "Authorization", token, "X-Forwarded-For", "192.0.2.44")
	if resp.StatusCode != 200 || json.Unmarshal(b, &dl) != nil {
		t.Fatalf("download answer: %s %s", resp.Status, b)
	}
	if resp, _ := harness.HTTPGet(t, cl, harness.ResolveRef(base+"/v1/providers/hashicorp/random/3.6.0/download/linux/amd64", dl.DownloadURL), "User-Agent", "OpenTofu/1.11.14", "Authorization", token); resp.StatusCode != 200 {
		t.Fatalf("package: %s", resp.Status)
	}
	rec := harness.WaitLog(t, logs, "the package download", func(r map[string]any) bool {
		return r["msg"] == "request" && r["provider"] != nil
	})
	for k, v := range map[string]any{"client": "127.0.0.1", "method": "GET", "status": 200.0, "client_name": "tofu",
		"client_version": "1.11.14", "provider": "registry.terraform.io/hashicorp/random", "version": "3.6.0", "platform": "linux_amd64"} {
		if rec[k] != v {
			t.Errorf("access line %s = %#v, want %#v", k, rec[k], v)
		}
	}
	for _, k := range []string{"time", "path", "bytes", "dur_us", "host"} {
		if rec[k] == nil {
			t.Errorf("access line lacks %s", k)
		}
	}
	rec = harness.WaitLog(t, logs, "the registry answer", func(r map[string]any) bool {
		return r["msg"] == "request" && strings.HasSuffix(fmt.Sprint(r["path"]), "/download/linux/amd64")
	})
	if rec["client"] != "192.0.2.44" || rec["peer"] != "127.0.0.1" || rec["client_name"] != "terraform" {
		t.Errorf("registry answer line: %v", rec)
	}
	if strings.Contains(logs.String(), "tok-3f9a") {
		t.Fatal("the Authorization header reached the log")
	}

	// Metrics on their own plain-HTTP listener, checked by promtool.
	mresp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	promtoolCheck(t, metrics)
	m := string(metrics)
	if v := harness.MetricValue(m, `airgap_downloads_total{address="registry.terraform.io/hashicorp/random",kind="provider",version="3.6.0"}`); v != 1 {
		t.Errorf("downloads counter %v, want 1", v)
	}
	if v := harness.MetricValue(m, "airgap_tls_certificate_expiry_timestamp_seconds"); v < float64(time.Now().Add(24*time.Hour).Unix()) {
		t.Errorf("certificate expiry %v", v)
	}
	if v := harness.MetricValue(m, "airgap_store_last_import_timestamp_seconds"); v < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("last import %v", v)
	}
	if v := harness.MetricValue(m, "airgap_http_connections_total"); v < 1 {
		t.Errorf("connections %v", v)
	}
	if resp, _ := harness.HTTPGet(t, cl, base+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("/metrics on the main listener with --metrics-listen set: %s", resp.Status)
	}

	// SIGHUP: a new hostname (a certificate for it, no restart), a quieter
	// log level, and a change that needs a restart.
	harness.WriteConfig(t, cfgPath, strings.Replace(cfgText, `hostname = ["localhost"]`, `hostname = ["localhost", "replica.airgap.test"]`, 1)+
		"log-level = \"warn\"\ntls = \"local\"\nacme-email = \"ops@site.test\"\n")
	cmd.Process.Signal(syscall.SIGHUP)
	ns.expect(t, "RELOADING=1", 10*time.Second)
	ns.expect(t, "READY=1", 30*time.Second)
	rec = harness.WaitLog(t, logs, "the reload", func(r map[string]any) bool {
		return strings.HasPrefix(fmt.Sprint(r["msg"]), "SIGHUP: configuration reloaded")
	})
	if a := fmt.Sprint(rec["applied"]); !strings.Contains(a, "log-level=warn") || !strings.Contains(a, "replica.airgap.test") || rec["needs_restart"] != "acme-email" {
		t.Errorf("reload record: %v", rec)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{RootCAs: pool, ServerName: "replica.airgap.test"})
	if err != nil {
		t.Fatalf("no certificate for the hostname added by SIGHUP: %v", err)
	}
	conn.Close()
	before := strings.Count(logs.String(), `"msg":"request"`)
	harness.HTTPGet(t, cl, base+"/healthz")
	time.Sleep(200 * time.Millisecond)
	if after := strings.Count(logs.String(), `"msg":"request"`); after != before {
		t.Errorf("access lines still written at log-level warn")
	}

	// A broken file changes nothing and says where it is broken.
	harness.WriteConfig(t, cfgPath, cfgText+"log-levle = \"debug\"\n")
	cmd.Process.Signal(syscall.SIGHUP)
	ns.expect(t, "RELOADING=1", 10*time.Second)
	ns.expect(t, "READY=1", 10*time.Second)
	rec = harness.WaitLog(t, logs, "the failed reload", func(r map[string]any) bool { return r["level"] == "ERROR" })
	if e := fmt.Sprint(rec["err"]); !strings.Contains(e, cfgPath+":6:1") || !strings.Contains(e, `Did you mean "log-level"?`) {
		t.Errorf("failed reload: %v", rec)
	}
	if resp, _ := harness.HTTPGet(t, cl, base+"/healthz"); resp.StatusCode != 200 {
		t.Fatalf("not serving after a failed reload: %s", resp.Status)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	ns.expect(t, "STOPPING=1", 10*time.Second)
	waitExited(t, srv)
}

// waitExited waits up to 40 s for serve to exit cleanly after SIGTERM.
func waitExited(t *testing.T, srv *harness.Served) {
	t.Helper()
	select {
	case <-srv.Done:
		if err := srv.Err; err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
}

// TestServeConfigFile: --check-config over a file, flags and AIRGAP_
// variables, and the errors an operator sees.
func TestServeConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	os.Mkdir(store, 0o755)
	cfg := filepath.Join(dir, "serve.hcl")
	harness.WriteConfig(t, cfg, fmt.Sprintf(`# comment
store         = %q
listen        = "127.0.0.1:9999"
hostname      = ["a.site.test", "b.site.test"]
log-format    = "json"
trusted-proxy = ["10.0.0.0/8", "192.0.2.1"]
`, store))
	out := harness.MustRun(t, dir, []string{"AIRGAP_LISTEN=127.0.0.1:7777"}, harness.Bin, "serve", "--config", cfg, "--check-config", "--log-level", "debug")
	for _, want := range []string{
		fmt.Sprintf(`store              = %q # %s:2:17`, store, cfg),
		`listen             = "127.0.0.1:7777" # env AIRGAP_LISTEN`,
		fmt.Sprintf(`hostname           = ["a.site.test", "b.site.test"] # %s:4:17`, cfg),
		`log-level          = "debug" # flag`,
		`tls                = "local" # default`,
		`trusted-proxy      = ["10.0.0.0/8", "192.0.2.1"]`,
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want+" ") {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
	// Flags beat the environment.
	out = harness.MustRun(t, dir, []string{"AIRGAP_LISTEN=127.0.0.1:7777"}, harness.Bin, "serve", "--config", cfg, "--check-config", "--listen", ":8443")
	if !strings.Contains(out, `listen             = ":8443" # flag`) {
		t.Errorf("flag did not win:\n%s", out)
	}
	// The printed configuration is itself a valid --config file.
	again := filepath.Join(dir, "again.hcl")
	harness.WriteConfig(t, again, out)
	out2 := harness.MustRun(t, dir, nil, harness.Bin, "serve", "--config", again, "--check-config")
	strip := regexp.MustCompile(` # .*`)
	if strip.ReplaceAllString(out2, "") != strip.ReplaceAllString(out, "") {
		t.Errorf("round trip differs:\n%s\n---\n%s", out, out2)
	}

	for _, c := range []struct{ text, want string }{
		{"store = \"/s\"\nacme_ca = \"https://ca\"\n", `:2:1: Unsupported argument: An argument named "acme_ca" is not expected here. Did you mean "acme-ca"?`},
		{"store = \"/s\"\nlisten = \"nowhere\"\n", `:2:10: listen: "nowhere"`},
		{"store = \"/s\"\n\nhostname = \"one\"\n", `:3:13: Unsuitable value type`},
		{"store = \"/s\"\nlog-format = \"xml\"\n", `:2:14: log-format: "xml": want text or json`},
		{"store = \"/s\"\ntrusted-proxy = [\"10.0.0.0/33\"]\n", `:2:17: trusted-proxy: "10.0.0.0/33": netip.ParsePrefix`},
		{"store = \"/s\"\ntls = \"files\"\n", `:2:7: tls: files needs cert and key`},
		{"store = \"/s\"\nmax-conns-per-ip = -1\n", `:2:20: max-conns-per-ip: -1: want a number of connections`},
		{"store = \"/s\"\nsend-timeout = \"soon\"\n", `:2:16: send-timeout: "soon": want a duration`},
		{"store = \"/s\"\nmetrics-listen = \"mian\"\n", `:2:18: metrics-listen: "mian"`},
		{"store = \n", `:1:9: Invalid expression`},
		{"listen = \":1\"\n", `no store: give --store DIR`},
	} {
		harness.WriteConfig(t, cfg, c.text)
		out, err := harness.CmdRun(t, dir, nil, harness.Bin, "serve", "--config", cfg, "--check-config")
		if err == nil {
			t.Errorf("%q: accepted:\n%s", c.text, out)
			continue
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("%q: exit %v, want 2", c.text, err)
		}
		if !strings.Contains(out, c.want) || (strings.HasPrefix(c.want, ":") && !strings.Contains(out, cfg+c.want)) {
			t.Errorf("%q: error lacks %q:\n%s", c.text, c.want, out)
		}
	}
	if out, err := harness.CmdRun(t, dir, []string{"AIRGAP_HOSTNAME=bad host"}, harness.Bin, "serve", "--store", store, "--check-config"); err == nil ||
		!strings.Contains(out, `AIRGAP_HOSTNAME: "bad host" is not a host name`) {
		t.Errorf("bad AIRGAP_HOSTNAME: %v\n%s", err, out)
	}
	if out, err := harness.CmdRun(t, dir, nil, harness.Bin, "serve", "--config", filepath.Join(dir, "missing.hcl"), "--check-config"); err == nil ||
		!strings.Contains(out, "missing.hcl") {
		t.Errorf("missing file: %v\n%s", err, out)
	}
}

// TestSystemdUnit checks server/deploy/airgap.service with the real
// systemd-analyze: it must verify, and its exposure score must stay at or
// below 2.0 (docs/operations.md records the figure).
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not on PATH: install Debian's systemd package (.ci/run does)")
	}
	unit, err := os.ReadFile(filepath.Join(harness.Root(), "server", "deploy", "airgap.service"))
	if err != nil {
		t.Fatal(err)
	}
	const exec0 = "ExecStart=/usr/local/bin/airgap "
	if !bytes.Contains(unit, []byte(exec0)) {
		t.Fatalf("the unit has no %q line", exec0)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "airgap.service")
	os.WriteFile(path, bytes.Replace(unit, []byte(exec0), []byte("ExecStart="+harness.Bin+" "), 1), 0o644)
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=true", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for airgap\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security exposure: %.1f", score)
	if score > 2.0 {
		t.Fatalf("exposure %.1f > 2.0:\n%s", score, out)
	}
	for _, want := range []string{"Type=notify", "ExecReload=", "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/airgap/store/tls /var/lib/airgap/store/state", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE", "LimitNOFILE="} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	// The sample configuration it points at is valid.
	sample := filepath.Join(harness.Root(), "server", "deploy", "serve.hcl")
	store := filepath.Join(dir, "store")
	os.Mkdir(store, 0o755)
	if out, err := harness.CmdRun(t, "", nil, harness.Bin, "serve", "--config", sample, "--store", store, "--check-config"); err != nil {
		t.Fatalf("server/deploy/serve.hcl does not validate: %v\n%s", err, out)
	}
}

// containerfile reads server/deploy/Containerfile into instructions of the
// final stage (continuation lines joined, comments dropped).
func containerfile(t *testing.T) (stages []string, final map[string][]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.Root(), "server", "deploy", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur += s
			continue
		}
		cur += l
		if strings.TrimSpace(cur) != "" {
			lines = append(lines, strings.TrimSpace(cur))
		}
		cur = ""
	}
	for _, l := range lines {
		ins, rest, _ := strings.Cut(l, " ")
		ins = strings.ToUpper(ins)
		if ins == "FROM" {
			stages = append(stages, rest)
			final = map[string][]string{}
		}
		final[ins] = append(final[ins], strings.TrimSpace(rest))
	}
	return stages, final
}

// execForm parses a JSON-array instruction argument.
func execForm(t *testing.T, what, s string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("%s is not in exec (JSON array) form: %s", what, s)
	}
	return out
}

// TestContainerfile checks the container recipe as far as it can be
// without a container engine (none runs here or in CI): a static binary
// on scratch, a non-root user, the store as a volume, and an ENTRYPOINT,
// CMD, ENV and HEALTHCHECK that work together, run with the real binary
// (paths mapped to a test store, the port to a free one).
func TestContainerfile(t *testing.T) {
	t.Parallel()
	stages, final := containerfile(t)
	if len(stages) != 2 || !strings.Contains(stages[0], " AS build") || stages[1] != "scratch" {
		t.Fatalf("want a build stage and a scratch stage, got %q", stages)
	}
	if u := final["USER"]; len(u) != 1 || strings.HasPrefix(u[0], "0") || strings.HasPrefix(u[0], "root") {
		t.Errorf("USER %q: must be one non-root numeric user (scratch has no /etc/passwd)", u)
	}
	if v := final["VOLUME"]; len(v) != 1 || !strings.Contains(v[0], `"/store"`) {
		t.Errorf("VOLUME %q", v)
	}
	raw, _ := os.ReadFile(filepath.Join(harness.Root(), "server", "deploy", "Containerfile"))
	if !bytes.Contains(raw, []byte("RUN CGO_ENABLED=0 go build -trimpath")) {
		t.Error("the binary is not built static (CGO_ENABLED=0)")
	}
	hc := final["HEALTHCHECK"]
	if len(hc) != 1 {
		t.Fatalf("HEALTHCHECK %q", hc)
	}
	_, hcCmd, ok := strings.Cut(hc[0], "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK without CMD: %s", hc[0])
	}
	entry := execForm(t, "ENTRYPOINT", final["ENTRYPOINT"][0])
	cmdArgs := execForm(t, "CMD", final["CMD"][0])
	probe := execForm(t, "HEALTHCHECK CMD", hcCmd)

	root, _, _ := harness.OpsStore(t)
	port := fmt.Sprint(harness.FreePort(t))
	mapArg := func(a string) string {
		a = strings.ReplaceAll(a, "/store", root)
		return strings.ReplaceAll(a, "8443", port)
	}
	var env []string
	for _, e := range final["ENV"] {
		k, v, _ := strings.Cut(e, "=")
		env = append(env, k+"="+mapArg(v))
	}
	argv := append(append([]string{}, entry...), cmdArgs...)
	if argv[0] != "/airgap" || probe[0] != "/airgap" {
		t.Fatalf("ENTRYPOINT/HEALTHCHECK do not run /airgap: %q %q", argv, probe)
	}
	for i := range argv {
		argv[i] = mapArg(argv[i])
	}
	for i := range probe {
		probe[i] = mapArg(probe[i])
	}
	srv := exec.Command(harness.Bin, argv[1:]...)
	srv.Env = append(harness.BaseEnv(), env...)
	logs := &harness.LockedBuffer{}
	srv.Stdout, srv.Stderr = logs, logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := harness.CmdRun(t, "", nil, harness.Bin, probe[1:]...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HEALTHCHECK command never succeeded against the container's command: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The output reaches logs through a pipe and a copying goroutine, which
	// may run after the probe has succeeded on a loaded machine.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `"msg":"serving"`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the container's CMD does not log JSON:\n%s", logs.String())
			break
		}
	}
}

// selfSigned writes a self-signed certificate for localhost and 127.0.0.1
// with the given common name to certPath/keyPath.
func selfSigned(t *testing.T, cn, certPath, keyPath string) *x509.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(k)
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	c, _ := x509.ParseCertificate(der)
	return c
}

// TestReloadCertificateFiles: with --tls files, SIGHUP serves the new
// certificate at once, and a broken pair keeps the old one.
func TestReloadCertificateFiles(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	old := selfSigned(t, "first", certPath, keyPath)
	port := harness.FreePort(t)
	ns := newNotifySocket(t)
	srv := harness.Serve(t, harness.ServeOptions{Raw: true, Env: []string{"NOTIFY_SOCKET=" + ns.path}, Args: []string{"--store", root, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls", "files", "--cert", certPath, "--key", keyPath, "--log-format", "json"}})
	cmd, logs := srv.Cmd, srv.Logs
	ns.expect(t, "READY=1", 30*time.Second)
	served := func() *x509.Certificate {
		t.Helper()
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	if got := served(); !got.Equal(old) {
		t.Fatalf("serving %s, want the first certificate", got.Subject)
	}
	next := selfSigned(t, "second", certPath, keyPath)
	cmd.Process.Signal(syscall.SIGHUP)
	ns.expect(t, "RELOADING=1", 10*time.Second)
	ns.expect(t, "READY=1", 10*time.Second)
	if got := served(); !got.Equal(next) {
		t.Fatalf("after SIGHUP serving %s, want the second certificate", got.Subject)
	}
	rec := harness.WaitLog(t, logs, "the reload", func(r map[string]any) bool { return r["msg"] == "SIGHUP: configuration reloaded" })
	if !strings.Contains(fmt.Sprint(rec["applied"]), "certificate re-read from "+certPath) || rec["cert_expires"] == nil {
		t.Errorf("reload record: %v", rec)
	}
	// A key that does not match: the previous certificate stays.
	os.WriteFile(keyPath, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	ns.expect(t, "RELOADING=1", 10*time.Second)
	ns.expect(t, "READY=1", 10*time.Second)
	harness.WaitLog(t, logs, "the refused certificate", func(r map[string]any) bool {
		return r["msg"] == "SIGHUP: keeping the previous certificate"
	})
	if got := served(); !got.Equal(next) {
		t.Fatalf("after a broken key serving %s, want the second certificate still", got.Subject)
	}
}

// TestContainerfileExamples runs the one-shot commands the Containerfile's
// comments show ('podman run … airgap:VERSION VERB …', not serve) with the
// real binary, /store mapped to a test directory laid out as they assume
// (the keyring in /store, the bundle in /store/in): a documented command
// that lacks a flag fails here.
func TestContainerfileExamples(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(harness.Root(), "server", "deploy", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	_, keyring, extra := harness.OpsStore(t)
	root := t.TempDir()
	pub, _ := os.ReadFile(keyring)
	os.WriteFile(filepath.Join(root, "site.pub.asc"), pub, 0o644)
	os.MkdirAll(filepath.Join(root, "in"), 0o755)
	b, _ := os.ReadFile(extra("container"))
	os.WriteFile(filepath.Join(root, "in", "site.bundle"), b, 0o644)
	image := regexp.MustCompile(`podman run .* airgap:[0-9.]+ ([a-z-]+)( .*)?$`)
	ran := 0
	for _, l := range strings.Split(string(raw), "\n") {
		m := image.FindStringSubmatch(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")))
		if m == nil || m[1] == "serve" {
			continue
		}
		args := append([]string{m[1]}, strings.Fields(strings.ReplaceAll(m[2], "/store", root))...)
		if out, err := harness.CmdRun(t, "", nil, harness.Bin, args...); err != nil {
			t.Errorf("the Containerfile's example %q fails: %v\n%s", strings.TrimSpace(l), err, out)
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("found no one-shot example in the Containerfile: the test tests nothing")
	}
}

// TestHealthcheckWait: 'healthcheck --wait' started before serve keeps
// asking and succeeds once serve answers (what a script that just started
// serve in the background needs); against nothing, it gives up after the
// wait with the last reason and exit status 1.
func TestHealthcheckWait(t *testing.T) {
	root, _, _ := harness.OpsStore(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, []byte(harness.MustRun(t, "", nil, harness.Bin, "ca", "--store", root)), 0o644)
	port := harness.FreePort(t)
	url := fmt.Sprintf("https://localhost:%d/healthz", port)

	start := time.Now()
	out, err := harness.CmdRun(t, "", nil, harness.Bin, "healthcheck", "--url", url, "--ca", caFile, "--wait", "1s")
	if err == nil || !strings.Contains(out, "not healthy after 1s") || !strings.Contains(out, "connection refused") {
		t.Fatalf("healthcheck --wait 1s against nothing: %v\n%s", err, out)
	}
	if d := time.Since(start); d < time.Second || d > 10*time.Second {
		t.Errorf("healthcheck --wait 1s gave up after %s", d)
	}

	hc := exec.Command(harness.Bin, "healthcheck", "--url", url, "--ca", caFile, "--wait", "60s")
	hc.Env = harness.BaseEnv()
	var hcOut harness.LockedBuffer
	hc.Stdout, hc.Stderr = &hcOut, &hcOut
	if err := hc.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // it has asked a few times by now
	harness.Serve(t, harness.ServeOptions{Store: root, Port: port})
	done := make(chan error, 1)
	go func() { done <- hc.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("healthcheck --wait did not succeed once serve answered: %v\n%s", err, hcOut.String())
		}
	case <-time.After(45 * time.Second):
		hc.Process.Kill()
		t.Fatalf("healthcheck --wait still waiting 45 s after serve started:\n%s", hcOut.String())
	}
}
