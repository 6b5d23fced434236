package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestVersionsWithBuildMetadataSkipped: a version with build metadata
// ("3.6.0+evil", which clients treat as 3.6.0) is skipped with a notice,
// for providers and modules; the others are kept and export goes on.
func TestVersionsWithBuildMetadataSkipped(t *testing.T) {
	hs := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/v1/modules/") {
			fmt.Fprint(w, `{"modules":[{"versions":[{"version":"1.0.0"},{"version":"1.0.0+evil"},{"version":"v1.1.0"}]}]}`)
			return
		}
		fmt.Fprint(w, `{"versions":[{"version":"3.6.0"},{"version":"3.6.0+evil"},{"version":"v3.7.0"}]}`)
	})
	c := testClient(hs.srv.Client().Transport)
	var notices []string
	c.Notice = func(format string, a ...any) { notices = append(notices, fmt.Sprintf(format, a...)) }
	host := strings.TrimPrefix(hs.srv.URL, "https://")
	pu, _ := url.Parse(hs.srv.URL + "/v1/providers/")
	mu, _ := url.Parse(hs.srv.URL + "/v1/modules/")
	c.SetServices(host, map[string]*url.URL{"providers.v1": pu, "modules.v1": mu})
	pvs, err := c.ProviderVersions(context.Background(), host, "hashicorp", "random")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range pvs {
		got = append(got, v.Version)
	}
	mvs, err := c.ModuleVersions(context.Background(), host, "example", "vpc", "aws")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, mvs...)
	if strings.Join(got, " ") != "3.6.0 3.7.0 1.0.0 1.1.0" {
		t.Errorf("versions kept: %v", got)
	}
	if len(notices) != 2 || !strings.Contains(notices[0], "3.6.0+evil") || !strings.Contains(notices[1], "1.0.0+evil") {
		t.Errorf("notices: %q", notices)
	}
}

// TestPackageNamedForItsVersion: a download document whose filename is not
// terraform-provider-TYPE_VERSION_OS_ARCH.zip (here another version's
// package, which the publisher's SHA256SUMS for that version does list) is
// refused at export.
func TestPackageNamedForItsVersion(t *testing.T) {
	name := "terraform-provider-random_3.6.0_linux_amd64.zip"
	hs := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"os":"linux","arch":"amd64","filename":%q,"shasum":%q,"download_url":"/z","shasums_url":"/s","shasums_signature_url":"/g"}`,
			name, strings.Repeat("a", 64))
	})
	c := testClient(hs.srv.Client().Transport)
	host := strings.TrimPrefix(hs.srv.URL, "https://")
	pu, _ := url.Parse(hs.srv.URL + "/v1/providers/")
	c.SetServices(host, map[string]*url.URL{"providers.v1": pu})
	if _, err := c.ProviderPackage(context.Background(), host, "hashicorp", "random", "3.6.0", "linux", "amd64"); err != nil {
		t.Fatalf("a well-named package: %v", err)
	}
	_, err := c.ProviderPackage(context.Background(), host, "hashicorp", "random", "9.9.9", "linux", "amd64")
	if err == nil || !strings.Contains(err.Error(), "terraform-provider-random_9.9.9_linux_amd64.zip") {
		t.Errorf("3.6.0's package offered as 9.9.9: %v", err)
	}
}
