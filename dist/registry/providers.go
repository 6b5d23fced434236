package registry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// ProviderVersion is one entry of a provider's versions document.
type ProviderVersion struct {
	Version   string   `json:"version"`
	Protocols []string `json:"protocols"`
	Platforms []struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	} `json:"platforms"`
}

// HasPlatform reports whether the version lists os_arch.
func (v ProviderVersion) HasPlatform(plat string) bool {
	for _, p := range v.Platforms {
		if p.OS+"_"+p.Arch == plat {
			return true
		}
	}
	return false
}

// ProviderVersions lists the versions of host/ns/type.
func (c *Client) ProviderVersions(ctx context.Context, host, ns, typ string) ([]ProviderVersion, error) {
	base, err := c.service(ctx, host, "providers.v1")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Versions []ProviderVersion `json:"versions"`
	}
	if _, err := c.getJSON(ctx, rel(base, ns, typ, "versions"), &doc, host); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("provider %s/%s/%s does not exist on its registry: %w", host, ns, typ, ErrNotFound)
		}
		return nil, err
	}
	out := doc.Versions[:0]
	for _, v := range doc.Versions {
		if ver, ok := c.usableVersion("provider "+host+"/"+ns+"/"+typ, v.Version); ok {
			v.Version = ver
			out = append(out, v)
		}
	}
	return out, nil
}

// PackageMeta is a provider registry download document; ProviderPackage
// resolves every URL in it to an absolute one.
type PackageMeta = dist.ProviderDownload

// ProviderPackage fetches the download document for one platform and checks
// it the way Terraform does.
func (c *Client) ProviderPackage(ctx context.Context, host, ns, typ, version, osName, arch string) (*PackageMeta, error) {
	base, err := c.service(ctx, host, "providers.v1")
	if err != nil {
		return nil, err
	}
	var m PackageMeta
	final, err := c.getJSON(ctx, rel(base, ns, typ, version, "download", osName, arch), &m, host)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("provider %s/%s/%s %s %s_%s", host, ns, typ, version, osName, arch)
	if m.OS != osName || m.Arch != arch {
		return nil, fmt.Errorf("%s: the registry answered for %s_%s", what, m.OS, m.Arch)
	}
	m.Shasum = strings.ToLower(m.Shasum)
	if !verify.IsHex64(m.Shasum) {
		return nil, fmt.Errorf("%s: invalid shasum %q", what, m.Shasum)
	}
	if want := dist.ProviderPackageName(typ, version, osName, arch); m.Filename != want {
		// Every registry names packages so; the name is what ties the
		// publisher's signed SHA256SUMS line to this type, version and
		// platform (bundle.CheckManifest requires it again offline).
		return nil, fmt.Errorf("%s: the registry names the package %q, not %q", what, dist.Printable(m.Filename), want)
	}
	if len(m.Protocols) > 0 {
		ok := false
		for _, p := range m.Protocols {
			if strings.HasPrefix(p, "5") || strings.HasPrefix(p, "6") {
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("%s: plugin protocols %v are not supported by Terraform (need 5.x or 6.x)", what, m.Protocols)
		}
	}
	for _, f := range []*string{&m.DownloadURL, &m.ShasumsURL, &m.ShasumsSignatureURL} {
		if *f == "" {
			return nil, fmt.Errorf("%s: the download document lacks a URL", what)
		}
		ref, err := url.Parse(*f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		*f = final.ResolveReference(ref).String()
	}
	return &m, nil
}
