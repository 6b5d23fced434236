package harness

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// CreateToken runs 'airgap token create' and returns the secret.
func CreateToken(t *testing.T, access, name string, allow ...string) string {
	t.Helper()
	args := []string{"token", "create", "--access", access, "--name", name}
	for _, a := range allow {
		args = append(args, "--allow", a)
	}
	out := MustRunStdout(t, "", args...)
	return strings.TrimSpace(out)
}

// OpsStore imports the standard fixture bundle into a new store with the
// real binary and returns the store and the bundle's keyring.
func OpsStore(t *testing.T) (root, keyring string, signerSet func(name string) string) {
	t.Helper()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring = filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.Standard(t, filepath.Join(work, "fixtures"), signer)
	b := filepath.Join(work, "site.bundle")
	set.WriteBundleFile(t, b, signer, bundle.CompressionZstd)
	root = filepath.Join(work, "store")
	MustRun(t, work, nil, Bin, "import", "--keyring", keyring, "--store", root, b)
	// more bundles for tests that import while serving
	n := 0
	signerSet = func(name string) string {
		n++
		s := bundletest.NewSet()
		s.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, fmt.Sprint("extra", n)), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: name, Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 16 << 10,
		}))
		p := filepath.Join(work, name+".bundle")
		s.WriteBundleFile(t, p, signer, bundle.CompressionZstd)
		return p
	}
	return root, keyring, signerSet
}

// LockedBuffer collects a process's output while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// JSONLines returns the log records (one JSON object per line).
func JSONLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// WaitLog polls logs until one record satisfies ok.
func WaitLog(t *testing.T, logs *LockedBuffer, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range JSONLines(t, logs.String()) {
			if ok(r) {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log record for %s:\n%s", what, logs.String())
	return nil
}

func WriteConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func CAClient(t *testing.T, storeDir string) (*http.Client, *x509.CertPool, string) {
	t.Helper()
	pemOut := MustRun(t, "", nil, Bin, "ca", "--store", storeDir)
	i := strings.Index(pemOut, "-----BEGIN")
	pemOut = pemOut[i:]
	if j := strings.Index(pemOut, "-----END CERTIFICATE-----"); j >= 0 {
		pemOut = pemOut[:j+len("-----END CERTIFICATE-----")] + "\n"
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, []byte(pemOut), 0o644)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pemOut)) {
		t.Fatalf("airgap ca printed no certificate: %s", pemOut)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, pool, caFile
}

func HTTPGet(t *testing.T, cl *http.Client, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func MetricValue(text, series string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// ResolveRef resolves a URL from an answer (relative since the answers stopped
// repeating the Host) against the URL of the request, as the clients do.
func ResolveRef(request, ref string) string {
	b, err := url.Parse(request)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// ServeOptions says how Serve starts 'airgap serve'.
type ServeOptions struct {
	Store string   // --store, followed by --listen 127.0.0.1:Port and --hostname localhost
	Port  int      // the port it listens on; 0 is a free one (FreePort)
	Args  []string // its other flags; with Raw, its whole command line after "serve"
	Raw   bool     // no --store, --listen or --hostname added (a --config, a flag under test)
	Env   []string // added to BaseEnv
	Dir   string   // its working directory
	// Wait: return once it answers /healthz and offers the CA 'airgap ca'
	// prints at /ca.pem (CAFile is then that CA).
	Wait bool
	// Interrupt: at the test's end stop it with SIGINT and fail the test
	// if it takes over 10 s; else it is killed.
	Interrupt bool
}

// Served is a running 'airgap serve'.
type Served struct {
	Base   string // https://localhost:Port/
	CAFile string // with Wait: its CA, for clients
	Port   int
	Cmd    *exec.Cmd
	Proc   *os.Process
	Logs   *LockedBuffer // its output as it grows
	Done   chan struct{} // closed when it has exited, Err then its exit
	Err    error
}

// Serve starts 'airgap serve' as o says; the test's end stops it and, if
// the test failed, shows its output. It is the one way the end-to-end
// tests start serve: StartServe and StartReplica are its common options.
func Serve(t *testing.T, o ServeOptions) *Served {
	t.Helper()
	if o.Port == 0 && !o.Raw {
		o.Port = FreePort(t)
	}
	args := o.Args
	if !o.Raw {
		args = append([]string{"--store", o.Store, "--listen", fmt.Sprintf("127.0.0.1:%d", o.Port), "--hostname", "localhost"}, o.Args...)
	}
	s := &Served{Port: o.Port, Base: fmt.Sprintf("https://localhost:%d/", o.Port), Logs: &LockedBuffer{}, Done: make(chan struct{})}
	s.Cmd = exec.Command(Bin, append([]string{"serve"}, args...)...)
	s.Cmd.Dir, s.Cmd.Env = o.Dir, append(BaseEnv(), o.Env...)
	s.Cmd.Stdout, s.Cmd.Stderr = s.Logs, s.Logs
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Proc = s.Cmd.Process
	go func() { s.Err = s.Cmd.Wait(); close(s.Done) }()
	t.Cleanup(func() {
		if o.Interrupt {
			s.Proc.Signal(os.Interrupt)
			select {
			case <-s.Done:
			case <-time.After(10 * time.Second):
				s.Proc.Kill()
				t.Errorf("serve did not shut down on SIGINT")
			}
		} else {
			s.Proc.Kill()
			<-s.Done
		}
		if t.Failed() {
			t.Logf("serve :%d log:\n%s", o.Port, s.Logs.String())
		}
	})
	if o.Wait {
		s.CAFile = filepath.Join(t.TempDir(), "airgap-ca.pem")
		s.waitHealthy(t, o.Store)
	}
	return s
}

// StartServe runs 'airgap serve' over storeDir with extra flags and waits
// for it to answer /healthz; the test's end interrupts it.
func StartServe(t *testing.T, storeDir string, extra ...string) *Served {
	t.Helper()
	return Serve(t, ServeOptions{Store: storeDir, Args: extra, Wait: true, Interrupt: true})
}

// StartReplica runs one replica over a shared store: quiet logs, no
// metrics listener, not waited for (WaitHealthy, or HAProxy's checks).
func StartReplica(t *testing.T, root string, port int, extra ...string) *Served {
	t.Helper()
	return Serve(t, ServeOptions{Store: root, Port: port, Args: append([]string{"--log-level", "warn", "--metrics-listen", "off"}, extra...)})
}

// waitHealthy waits up to 20 s for serve to answer /healthz, writing its CA
// ('airgap ca') to CAFile, and checks /ca.pem offers the same CA.
func (s *Served) waitHealthy(t *testing.T, storeDir string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		pemOut, err := exec.Command(Bin, "ca", "--store", storeDir).Output()
		if err == nil && len(pemOut) > 0 {
			os.WriteFile(s.CAFile, pemOut, 0o644)
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pemOut)
			cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			if resp, err := cl.Get(s.Base + "healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					// The appliance offers the same CA at /ca.pem.
					if r2, err := cl.Get(s.Base + "ca.pem"); err != nil || r2.StatusCode != 200 {
						t.Fatalf("/ca.pem: %v %v", r2, err)
					} else {
						served, _ := io.ReadAll(r2.Body)
						r2.Body.Close()
						if !bytes.Equal(served, pemOut) {
							t.Fatal("/ca.pem differs from 'airgap ca'")
						}
					}
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve did not come up:\n%s", s.Logs.String())
}

// CheckConsistent: the index parses and every blob it refers to is present,
// read-only and holds the right bytes.
func CheckConsistent(t *testing.T, root string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil {
		t.Fatalf("index: %v", err)
	}
	var ix store.Index
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatalf("index is not valid JSON after a kill: %v", err)
	}
	n := 0
	for d := range ix.Catalog.Blobs() {
		p := store.BlobPath(root, d)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("the index refers to a missing blob %s", d.Short())
		}
		if fi.Mode().Perm() != 0o444 {
			t.Fatalf("blob %s mode %v", d.Short(), fi.Mode())
		}
		if got := bundletest.FileDigest(t, p); got != d {
			t.Fatalf("blob %s holds %s", d.Short(), got)
		}
		n++
	}
	return n
}

// StartHAProxy runs HAProxy in front of the replicas (TCP passthrough,
// round robin, check-ssl health checks on /healthz every 200 ms) and
// returns its base URL (no trailing slash) and its log.
func StartHAProxy(t *testing.T, haproxy, caFile string, reps []*Served) (string, *LockedBuffer) {
	t.Helper()
	front := FreePort(t)
	cfg := fmt.Sprintf(`global
  maxconn 512
defaults
  mode tcp
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 3
  option redispatch 1
frontend fe
  bind 127.0.0.1:%d
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk
  http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host localhost
  http-check expect status 200
  default-server check check-ssl check-sni localhost verify required ca-file %s inter 200ms fall 1 rise 2
`, front, caFile)
	for i, r := range reps {
		cfg += fmt.Sprintf("  server r%d 127.0.0.1:%d\n", i+1, r.Port)
	}
	return fmt.Sprintf("https://localhost:%d", front), RunHAProxy(t, haproxy, cfg)
}

// HAProxyBin is the haproxy on PATH; the test fails without one.
func HAProxyBin(t *testing.T) string {
	t.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not on PATH: install Debian's haproxy package (.ci/run does)")
	}
	return haproxy
}

// RunHAProxy checks and runs the haproxy binary with the configuration
// cfg until the test ends, and returns its log. cfg gets a "resolvers
// default" section on loopback: without one HAProxy (2.6) makes it from
// /etc/resolv.conf and connects a UDP socket to the machine's name server
// at start; the tests' backends are addresses, and nothing resolves.
func RunHAProxy(t *testing.T, haproxy, cfg string) *LockedBuffer {
	t.Helper()
	cfg += "resolvers default\n  nameserver loopback 127.0.0.1:53\n"
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	os.WriteFile(cfgPath, []byte(cfg), 0o644)
	if out, err := exec.Command(haproxy, "-c", "-f", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	hp := exec.Command(haproxy, "-db", "-f", cfgPath)
	hpLogs := &LockedBuffer{}
	hp.Stdout, hp.Stderr = hpLogs, hpLogs
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hp.Process.Kill()
		hp.Wait()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", hpLogs.String())
		}
	})
	return hpLogs
}

func Fetch(c *http.Client, u string) (int, []byte, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

func WaitHealthy(t *testing.T, cl *http.Client, u string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, err := Fetch(cl, u)
		if err == nil && code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never healthy: %d %v", u, code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
