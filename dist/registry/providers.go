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
	what := fmt.Sprintf("provider %s/%s/%s", host, ns, typ)
	out := doc.Versions[:0]
	for _, v := range doc.Versions {
		for _, p := range v.Protocols {
			if err := checkText(what, "protocols", p); err != nil {
				return nil, err
			}
		}
		for _, p := range v.Platforms {
			if err := checkText(what, "platforms", p.OS+"_"+p.Arch); err != nil {
				return nil, err
			}
		}
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
	if err := checkDownload(what, &m); err != nil {
		return nil, err
	}
	if m.OS != osName || m.Arch != arch {
		return nil, fmt.Errorf("%s: the registry answered for %s_%s", what, m.OS, m.Arch)
	}
	m.Shasum = strings.ToLower(m.Shasum)
	if !verify.IsHex64(m.Shasum) {
		return nil, fmt.Errorf("%s: invalid shasum %s", what, quote(m.Shasum))
	}
	if want := dist.ProviderPackageName(typ, version, osName, arch); m.Filename != want {
		// Every registry names packages so; the name is what ties the
		// publisher's signed SHA256SUMS line to this type, version and
		// platform (check.Manifest requires it again offline).
		return nil, fmt.Errorf("%s: the registry names the package %s, not %q", what, quote(m.Filename), want)
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
		if err := c.CheckProxied(host, what, *f); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// checkDownload refuses a download document with control characters in any
// string field, or with more signing keys than one keyring may hold.
func checkDownload(what string, m *PackageMeta) error {
	fields := []struct{ name, v string }{
		{"os", m.OS}, {"arch", m.Arch}, {"filename", m.Filename}, {"download_url", m.DownloadURL},
		{"shasums_url", m.ShasumsURL}, {"shasums_signature_url", m.ShasumsSignatureURL}, {"shasum", m.Shasum},
	}
	for _, p := range m.Protocols {
		fields = append(fields, struct{ name, v string }{"protocols", p})
	}
	keys := m.SigningKeys.GPGPublicKeys
	if len(keys) > verify.MaxKeysPerKeyring {
		return fmt.Errorf("%s: %w: %d signing keys (at most %d)", what, ErrInvalidAnswer, len(keys), verify.MaxKeysPerKeyring)
	}
	for _, k := range keys {
		fields = append(fields, struct{ name, v string }{"signing_keys.key_id", k.KeyID}, struct{ name, v string }{"signing_keys.trust_signature", k.TrustSignature},
			struct{ name, v string }{"signing_keys.source", k.Source}, struct{ name, v string }{"signing_keys.source_url", k.SourceURL})
	}
	for _, f := range fields {
		if err := checkText(what, f.name, f.v); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := checkArmor(what, "signing_keys.ascii_armor", k.ASCIIArmor); err != nil {
			return err
		}
	}
	return nil
}

// ProviderSource is the source repository registry.terraform.io names for
// a provider version ("source" of GET /v1/providers/NS/TYPE/VERSION, e.g.
// https://github.com/hashicorp/terraform-provider-aws): where its
// documentation is. It is not part of the provider registry protocol, so
// other registries may not answer it: then ("", nil), and the caller uses
// the convention. Only an https:// URL of printable text (at most 512
// bytes) is returned.
func (c *Client) ProviderSource(ctx context.Context, host, ns, typ, version string) (string, error) {
	base, err := c.service(ctx, host, "providers.v1")
	if err != nil {
		return "", err
	}
	var doc struct {
		Source string `json:"source"`
	}
	if _, err := c.getJSON(ctx, rel(base, ns, typ, version), &doc, host); err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidAnswer) {
			return "", nil
		}
		return "", err
	}
	if !strings.HasPrefix(doc.Source, "https://") || len(doc.Source) > 512 || dist.Printable(doc.Source) != doc.Source {
		return "", nil
	}
	return doc.Source, nil
}
