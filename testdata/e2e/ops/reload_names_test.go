package ops

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestReloadKeepsMachineNames: with the local CA, serve's certificates
// cover the machine's own host name as well as --hostname. A SIGHUP that
// changes the hostnames keeps it covered; it used to be dropped, failing
// every client that reached the appliance by host name until a restart.
func TestReloadKeepsMachineNames(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host = strings.ToLower(host)
	port := harness.FreePort(t)
	cfgPath := filepath.Join(t.TempDir(), "serve.hcl")
	cfgText := fmt.Sprintf("store = %q\nlisten = \"127.0.0.1:%d\"\nhostname = [\"localhost\"]\nlog-format = \"json\"\n", root, port)
	harness.WriteConfig(t, cfgPath, cfgText)
	srv := harness.Serve(t, harness.ServeOptions{Raw: true, Args: []string{"--config", cfgPath}})
	cmd, logs := srv.Cmd, srv.Logs
	harness.WaitLog(t, logs, "serving", func(r map[string]any) bool { return r["msg"] == "serving" })
	_, pool, _ := harness.CAClient(t, root)
	handshake := func(name string) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
			&tls.Config{ServerName: name, RootCAs: pool})
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := handshake(host); err != nil {
		t.Fatalf("before the reload, a client asking for the machine's name %q: %v", host, err)
	}
	harness.WriteConfig(t, cfgPath, strings.Replace(cfgText, `hostname = ["localhost"]`, `hostname = ["localhost", "replica.airgap.test"]`, 1))
	cmd.Process.Signal(syscall.SIGHUP)
	rec := harness.WaitLog(t, logs, "the reload", func(r map[string]any) bool {
		return strings.HasPrefix(fmt.Sprint(r["msg"]), "SIGHUP: configuration reloaded")
	})
	if strings.Contains(fmt.Sprint(rec["applied"]), "removed for ["+host) {
		t.Errorf("the reload stopped maintaining the machine's name: %v", rec)
	}
	for _, name := range []string{"replica.airgap.test", host, "localhost"} {
		if err := handshake(name); err != nil {
			t.Errorf("after the reload, a client asking for %q: %v", name, err)
		}
	}
}
