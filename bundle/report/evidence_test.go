package report_test

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
)

// requestedManifest is the Standard set's manifest with reasons.
func requestedManifest(t *testing.T, rs ...dist.Reason) *bundle.Manifest {
	t.Helper()
	set := bundletest.Standard(t, t.TempDir(), bundletest.Key(t, "site"))
	m := set.Manifest(t)
	m.RequestedBy = rs
	return m
}

// TestRequestedByChecked: requested_by is a format-3 field, held to the
// catalog and bounded before any blob is read (check.Manifest).
func TestRequestedByChecked(t *testing.T) {
	vpc := "registry.terraform.io/example/vpc/aws 1.0.0"
	good := []dist.Reason{
		{Kind: "module", Address: "registry.terraform.io/example/vpc/aws", Version: "1.0.0", Where: "airgap.hcl:9"},
		{Kind: "provider", Address: "registry.opentofu.org/hashicorp/null", Version: "3.2.2", Where: "airgap.hcl:9", Via: []string{vpc}},
		{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "3.6.0", Where: "airgap.hcl:2"},
	}
	if err := check.Manifest(requestedManifest(t, good...)); err != nil {
		t.Fatalf("a manifest with good reasons: %v", err)
	}
	m := requestedManifest(t, good...)
	m.Format = 2
	if err := check.Manifest(m); err == nil || !strings.Contains(err.Error(), "requested_by, which only format 3 has") {
		t.Errorf("a format-2 manifest with requested_by: %v", err)
	}
	with := func(mod func(r []dist.Reason) []dist.Reason) []dist.Reason {
		r := make([]dist.Reason, len(good))
		copy(r, good)
		return mod(r)
	}
	for name, c := range map[string]struct {
		rs   []dist.Reason
		want string
	}{
		"not in the catalog": {with(func(r []dist.Reason) []dist.Reason { r[2].Version = "9.9.9"; return r }), "not an entry of the catalog"},
		"twice":              {with(func(r []dist.Reason) []dist.Reason { return append(r[:2], r[1]) }), "listed twice"},
		"more than entries":  {with(func(r []dist.Reason) []dist.Reason { return append(r, r[2]) }), "4 reasons for 3 catalog entries"},
		"unsorted":           {with(func(r []dist.Reason) []dist.Reason { r[0], r[2] = r[2], r[0]; return r }), "not sorted"},
		"escape in at":       {with(func(r []dist.Reason) []dist.Reason { r[0].Where = "airgap.hcl:9\x1b[2J"; return r }), "not printable"},
		"long at":            {with(func(r []dist.Reason) []dist.Reason { r[0].Where = strings.Repeat("a", dist.MaxReasonText+1); return r }), "over 1024 bytes"},
		"via a provider": {with(func(r []dist.Reason) []dist.Reason {
			r[1].Via = []string{"registry.terraform.io/hashicorp/random 3.6.0"}
			return r
		}), "not a module version of the catalog"},
		"long chain": {with(func(r []dist.Reason) []dist.Reason {
			for range dist.MaxReasonVia + 1 {
				r[1].Via = append(r[1].Via, vpc)
			}
			return r
		}), "module calls, over"},
	} {
		if err := check.Manifest(requestedManifest(t, c.rs...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestReportTextGroups: a provider version of many platforms is one line
// of platforms (its packages' digests are in --json), not one a platform;
// a bundle without gates says no scanner gate ran.
func TestReportTextGroups(t *testing.T) {
	rep := report.Report{File: "b", Status: report.StatusVerified, ProviderVersions: 1, Packages: 5}
	p := report.ProviderEntry{Address: "registry.terraform.io/hashicorp/aws", Version: "5.0.0", Trust: dist.TrustPublisher, KeyStatus: "pinned",
		RequestedBy: &report.Requested{Where: "airgap.hcl:3", Via: []string{}}}
	for _, plat := range []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"} {
		p.Platforms = append(p.Platforms, report.PackageEntry{Platform: plat, SHA256: strings.Repeat("a", 64), SizeBytes: 1 << 20})
	}
	rep.Providers = []report.ProviderEntry{p}
	rep.Finish(nil)
	text := rep.Text()
	for _, want := range []string{"    5 packages, 5.0 MiB: darwin_amd64, darwin_arm64, linux_amd64, linux_arm64, windows_amd64\n",
		"gates:     no scanner gate ran", "  airgap.hcl:3\n    provider registry.terraform.io/hashicorp/aws 5.0.0\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the review lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "sha256:aaaa") {
		t.Errorf("the review lists every package of a 5-platform version:\n%s", text)
	}
}
