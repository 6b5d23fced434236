package kube

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// apiServer is a kube-apiserver with its etcd on loopback, and a
// kubeconfig for kubectl.
type apiServer struct {
	kubeconfig string
}

// startAPIServer starts etcd and kube-apiserver (harness.KubeAPIServerBin)
// on free loopback ports, with a static admin token, and waits until
// /readyz answers ok (at most 3 minutes: the first start creates the
// built-in objects).
func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	bin := harness.KubeAPIServerBin(t)
	dir := t.TempDir()
	etcdPort, peerPort, apiPort := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)

	etcd := exec.Command(bin, "etcd", filepath.Join(dir, "etcd"), etcdURL, fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	etcdOut, err := etcd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var etcdErr harness.LockedBuffer
	etcd.Stderr = &etcdErr
	if err := etcd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Process.Signal(syscall.SIGTERM); etcd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(etcdOut)
		for sc.Scan() {
			if sc.Text() == "etcd ready" {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("etcd exited:\n%s", etcdErr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("etcd is not ready after 60s:\n%s", etcdErr.String())
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saKey := filepath.Join(dir, "sa.key")
	os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	token := rand.Text()
	tokens := filepath.Join(dir, "tokens.csv")
	os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600)
	api := exec.Command(bin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		// The import Job pulls a bundle as an OCI artifact through an
		// image volume (beta, off by default in this release).
		"--feature-gates=ImageVolume=true",
		"--profiling=false",
	)
	var apiLog harness.LockedBuffer
	api.Stdout, api.Stderr = &apiLog, &apiLog
	if err := api.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Process.Signal(syscall.SIGTERM); api.Wait() })
	s := &apiServer{kubeconfig: filepath.Join(dir, "kubeconfig")}
	os.WriteFile(s.kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:%d
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, apiPort, token), 0o600)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := s.kubectl("get", "--raw", "/readyz")
		if err == nil && strings.TrimSpace(out) == "ok" {
			break
		}
		if api.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("kube-apiserver is not ready (%v: %s); its log:\n%s", err, out, tail(apiLog.String(), 40))
		}
		time.Sleep(time.Second)
	}
	return s
}

func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// kubectl runs the installed kubectl against the server.
func (s *apiServer) kubectl(args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Env = append(harness.BaseEnv(), "HOME="+filepath.Dir(s.kubeconfig))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *apiServer) mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.kubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestChartAPIServer applies every profile's objects to a real
// kube-apiserver (server-side dry run: admission, the restricted Pod
// Security level, the CRDs' schemas) with warnings as errors: the
// restricted level only warns about a Deployment's pod template.
func TestChartAPIServer(t *testing.T) {
	s := startAPIServer(t)
	// The CRDs the optional objects need (Gateway API's HTTPRoute, the
	// Prometheus operator's ServiceMonitor), cut to the fields the chart
	// sets with the upstream types (testdata/crds), and the namespace,
	// enforcing restricted.
	s.mustKubectl(t, "apply", "-f", filepath.Join("testdata", "crds"))
	s.mustKubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/httproutes.gateway.networking.k8s.io", "crd/servicemonitors.monitoring.coreos.com")
	s.mustKubectl(t, "create", "namespace", namespace)
	s.mustKubectl(t, "label", "namespace", namespace,
		"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted",
		"pod-security.kubernetes.io/audit=restricted")

	for _, name := range []string{"volume", "s3", "ingress", "gateway", "networkpolicy", "secrets"} {
		t.Run(name, func(t *testing.T) {
			out, err := render(t, profiles[name])
			if err != nil {
				t.Fatal(err)
			}
			text, kinds := manifests(t, out)
			f := filepath.Join(t.TempDir(), name+".yaml")
			os.WriteFile(f, []byte(text), 0o644)
			res, err := s.kubectl("apply", "--dry-run=server", "--warnings-as-errors", "-n", namespace, "-f", f)
			if err != nil {
				t.Fatalf("the API server refuses profile %s (%v):\n%s\n--- the objects:\n%s", name, err, res, text)
			}
			if n := strings.Count(res, "(server dry run)"); n != len(kinds) {
				t.Errorf("profile %s: %d objects, %d accepted:\n%s", name, len(kinds), n, res)
			}
			t.Logf("profile %s: %s", name, strings.Join(kinds, ", "))
		})
	}

	// The check can fail: a pod template that breaks the restricted level
	// (the container's seccomp profile taken away) is refused with a
	// warning turned error.
	out, err := render(t, profiles["volume"])
	if err != nil {
		t.Fatal(err)
	}
	text, _ := manifests(t, out)
	bad := strings.Replace(text, "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", 1)
	if bad == text {
		t.Fatal("no allowPrivilegeEscalation in the rendered objects")
	}
	f := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(f, []byte(bad), 0o644)
	res, err := s.kubectl("apply", "--dry-run=server", "--warnings-as-errors", "-n", namespace, "-f", f)
	if err == nil || !strings.Contains(res, "restricted") {
		t.Fatalf("a pod template with allowPrivilegeEscalation true was accepted (%v):\n%s", err, res)
	}
}
