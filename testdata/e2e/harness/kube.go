package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// KubeVersion is the Kubernetes release whose kube-apiserver (with the
// etcd its go.mod pins) checks the Helm chart (testdata/e2e/kube).
const KubeVersion = "1.34.4"

// kubeAPIServerMain is kube-apiserver's own main, plus an "etcd"
// subcommand that runs the etcd server k8s.io/kubernetes pins (embedded):
// one binary, one build. The etcd side listens on the URLs it is given
// and nothing else.
const kubeAPIServerMain = `package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"net/url"
)

func main() {
	if len(os.Args) == 5 && os.Args[1] == "etcd" {
		os.Exit(etcd(os.Args[2], os.Args[3], os.Args[4]))
	}
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

// etcd DIR CLIENT-URL PEER-URL
func etcd(dir, client, peer string) int {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cu, err := url.Parse(client)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pu, err := url.Parse(peer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + peer
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-e.Server.ReadyNotify()
	fmt.Println("etcd ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, err)
	}
	e.Close()
	return 0
}
`

// kubeStaging are the modules k8s.io/kubernetes keeps in its staging/
// folder and requires as v0.0.0 with a replace to that folder; a module
// that requires k8s.io/kubernetes must pin each to the release's v0.X.Y
// (rancher/support-bundle-kit's simulator does the same).
var kubeStaging = []string{
	"api", "apiextensions-apiserver", "apimachinery", "apiserver", "cli-runtime",
	"client-go", "cloud-provider", "cluster-bootstrap", "code-generator",
	"component-base", "component-helpers", "controller-manager", "cri-api",
	"cri-client", "csi-translation-lib", "dynamic-resource-allocation",
	"endpointslice", "externaljwt", "kms", "kube-aggregator", "kube-controller-manager",
	"kube-proxy", "kube-scheduler", "kubectl", "kubelet", "metrics",
	"mount-utils", "pod-security-admission", "sample-apiserver",
	"sample-cli-plugin", "sample-controller",
}

var kubeBuild struct {
	once      sync.Once
	path, err string
}

// KubeAPIServerBin returns kube-apiserver KubeVersion (with the "etcd"
// subcommand), built once into the test cache from the Go module proxy
// (about 12 minutes on 2 cores the first time). A failed build fails the
// test: the chart must not go unchecked.
func KubeAPIServerBin(t *testing.T) string {
	t.Helper()
	kubeBuild.once.Do(func() { kubeBuild.path, kubeBuild.err = buildKubeAPIServer() })
	if kubeBuild.err != "" {
		t.Fatalf("kube-apiserver %s is required by the chart's tests and could not be built: %s\nhint: it is built from the Go module proxy (k8s.io/kubernetes@v%s); check that the proxy is reachable", KubeVersion, kubeBuild.err, KubeVersion)
	}
	return kubeBuild.path
}

func buildKubeAPIServer() (string, string) {
	bin, cached, errText := CacheBin("kube-apiserver-" + KubeVersion)
	if cached || errText != "" {
		return bin, errText
	}
	tmp, err := os.MkdirTemp("", "kube-apiserver-")
	if err != nil {
		return "", err.Error()
	}
	defer os.RemoveAll(tmp)
	staging := "v0." + strings.SplitN(KubeVersion, ".", 2)[1]
	var mod strings.Builder
	fmt.Fprintf(&mod, "module kubeapiserver\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n", KubeVersion)
	for _, m := range kubeStaging {
		fmt.Fprintf(&mod, "\tk8s.io/%s => k8s.io/%s %s\n", m, m, staging)
	}
	mod.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(mod.String()), 0o644); err != nil {
		return "", err.Error()
	}
	if err := os.WriteFile(filepath.Join(tmp, "main.go"), []byte(kubeAPIServerMain), 0o644); err != nil {
		return "", err.Error()
	}
	env := append(registrytest.UnguardedEnv(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	// go.sum from the kubernetes module's own, then 'go mod tidy' adds what
	// the staging pins need.
	dl := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@v"+KubeVersion)
	dl.Dir, dl.Env = tmp, env
	out, err := dl.Output()
	if err != nil {
		return "", "go mod download: " + err.Error() + ": " + string(out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", "go mod download gave no directory: " + string(out) + info.Error
	}
	if sums, err := os.ReadFile(filepath.Join(info.Dir, "go.sum")); err == nil {
		os.WriteFile(filepath.Join(tmp, "go.sum"), sums, 0o644)
	}
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir, tidy.Env = tmp, env
	if out, err := tidy.CombinedOutput(); err != nil {
		return "", "go mod tidy: " + err.Error() + "\n" + string(out)
	}
	part := fmt.Sprintf("%s.partial-%d", bin, os.Getpid())
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", part, ".")
	build.Dir, build.Env = tmp, env
	if out, err := build.CombinedOutput(); err != nil {
		os.Remove(part)
		return "", "go build kube-apiserver: " + err.Error() + "\n" + string(out)
	}
	if err := os.Rename(part, bin); err != nil {
		return "", err.Error()
	}
	return bin, ""
}
