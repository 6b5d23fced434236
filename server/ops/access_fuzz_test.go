package ops_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/ops"
)

// FuzzAccessFields feeds hostile User-Agent, X-Forwarded-For, peer
// addresses and paths to what turns them into log fields and labels: the
// client address must always be a parsed IP (or "unknown"), the client
// version only version characters, the endpoint kind one of the fixed set.
func FuzzAccessFields(f *testing.F) {
	f.Add("Terraform/1.11.0 (+https://www.terraform.io)", "203.0.113.7, 10.0.0.1", "10.0.0.2:443", "/v1/providers/a/b/versions")
	f.Add("OpenTofu/1.11.14", "garbage,,, ::1", "[::1]:1", "/origin/x/.well-known/terraform.json")
	f.Add("Terraform/\x00\n", strings.Repeat("1.1.1.1,", 100), "nonsense", "/origin/")
	f.Add("", "", "[::ffff:10.0.0.3]:5", "/")
	f.Add("", "", "[2001:DB8::1]:5", "/")
	tp, err := access.ParseTrustedProxies([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		f.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, k := range []string{ops.KindDiscovery, ops.KindProviderVersions, ops.KindProviderDownload, ops.KindModuleVersions,
		ops.KindModuleDownload, ops.KindMirrorIndex, ops.KindMirrorVersion, ops.KindBlob, ops.KindArchive,
		ops.KindHealthz, ops.KindCA, ops.KindOrigins, ops.KindMetrics, ops.KindOther} {
		kinds[k] = true
	}
	f.Fuzz(func(t *testing.T, ua, xff, remote, path string) {
		name, ver := ops.ClientFromUserAgent(ua)
		if name != "" && name != "terraform" && name != "tofu" {
			t.Fatalf("client name %q", name)
		}
		for _, c := range ver {
			if !strings.ContainsRune("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-+", c) {
				t.Fatalf("client version %q", ver)
			}
		}
		r := &http.Request{RemoteAddr: remote, Header: http.Header{"X-Forwarded-For": {xff}}}
		client, peer := tp.ClientAddr(r)
		for _, a := range []string{client, peer} {
			ip, err := netip.ParseAddr(a)
			if err != nil && a != "unknown" {
				t.Fatalf("address %q is not an IP", a)
			}
			if err == nil && ip.Unmap().String() != a {
				t.Fatalf("address %q is not in canonical form (%s)", a, ip.Unmap())
			}
		}
		if !kinds[ops.EndpointKind(path)] {
			t.Fatalf("kind %q", ops.EndpointKind(path))
		}
	})
}
