package harness

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Replica is one 'airgap serve' process over the shared store.
type Replica struct {
	Port int
	Cmd  *exec.Cmd
	logs *LockedBuffer
	Done chan struct{}
}

func StartReplica(t *testing.T, root string, port int, extra ...string) *Replica {
	t.Helper()
	r := &Replica{Port: port, logs: &LockedBuffer{}, Done: make(chan struct{})}
	args := append([]string{"serve", "--store", root, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--hostname", "localhost", "--log-level", "warn", "--metrics-listen", "off"}, extra...)
	r.Cmd = exec.Command(Bin, args...)
	r.Cmd.Env = BaseEnv()
	r.Cmd.Stdout, r.Cmd.Stderr = r.logs, r.logs
	if err := r.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.Cmd.Wait(); close(r.Done) }()
	t.Cleanup(func() {
		r.Cmd.Process.Kill()
		<-r.Done
		if t.Failed() {
			t.Logf("replica :%d log:\n%s", port, r.logs.String())
		}
	})
	return r
}

// StartHAProxy runs HAProxy in front of the replicas (TCP passthrough,
// round robin, check-ssl health checks on /healthz every 200 ms) and
// returns its base URL (no trailing slash) and its log.
func StartHAProxy(t *testing.T, haproxy, caFile string, reps []*Replica) (string, *LockedBuffer) {
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
