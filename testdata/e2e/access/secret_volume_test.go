package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestAccessFromKubernetesSecret: an access file laid out as the kubelet
// mounts a Secret under a pod's fsGroup (root:65532, mode 0440, reached
// through ..data) is accepted by serve; when the Secret changes (the
// kubelet swaps ..data to a new folder) every request sees the new tokens
// within seconds, without a signal; the same Secret mounted with the
// Kubernetes default mode (0644: others may read it) keeps serve from
// starting, with the rule in the message.
func TestAccessFromKubernetesSecret(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test lays files out as the kubelet does (chown root:GROUP): run it as root")
	}
	root, _, _ := harness.OpsStore(t)
	work := t.TempDir()
	tok := func(file, name string) (string, string) {
		secret := strings.TrimSpace(harness.MustRunStdout(t, "", "token", "create", "--access", file, "--name", name, "--allow", "**"))
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return secret, string(b)
	}
	a, first := tok(filepath.Join(work, "first.hcl"), "a")
	b, second := tok(filepath.Join(work, "second.hcl"), "b")

	// Kubernetes' default mode, 0644, under fsGroup: refused.
	open := filepath.Join(work, "open")
	harness.KubeletVolume(t, open, "access.hcl", first, 0o644, 65532)
	out, err := harness.CmdRun(t, "", nil, harness.Bin, "serve", "--store", root, "--access", filepath.Join(open, "access.hcl"), "--check-config")
	if err == nil || !strings.Contains(out, "has mode 0644, owner 0:65532") || !strings.Contains(out, "when root owns it, its group may read it too") {
		t.Errorf("serve with an access file others may read: %v\n%s", err, out)
	}

	vol := filepath.Join(work, "access")
	harness.KubeletVolume(t, vol, "access.hcl", first, 0o440, 65532)
	srv := harness.StartServe(t, root, "--access", filepath.Join(vol, "access.hcl"))
	cl, _, _ := harness.CAClient(t, root)
	code := func(secret string) int {
		resp, _ := harness.HTTPGet(t, cl, srv.Base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+secret)
		return resp.StatusCode
	}
	if ca, cb := code(a), code(b); ca != 200 || cb != 401 {
		t.Fatalf("from the Secret: a %d, b %d; want 200, 401", ca, cb)
	}
	// The Secret changes: the kubelet writes a new folder and swaps ..data.
	harness.KubeletVolume(t, vol, "access.hcl", second, 0o440, 65532)
	deadline := time.Now().Add(10 * time.Second)
	for code(b) != 200 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if ca, cb := code(a), code(b); ca != 401 || cb != 200 {
		t.Errorf("after the Secret changed: a %d, b %d; want 401, 200", ca, cb)
	}
}
