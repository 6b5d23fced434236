package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/airgap/airgap/dist"
)

// The provider network mirror protocol, client side, as Terraform speaks
// it (in internal/getproviders, its HTTP mirror source): for a provider
// HOST/NAMESPACE/TYPE, GET <base>HOST/NAMESPACE/TYPE/index.json lists its
// versions and <base>HOST/NAMESPACE/TYPE/VERSION.json its archives, each
// platform's URL (resolved against the version document's final URL) and
// hashes. Both must be 200 application/json (404: the mirror does not have
// it); the mirror host's token goes with them (https only, not after a
// redirect to another origin), never with the archive downloads.
//
// The protocol carries no signatures: what a mirror says is only what the
// mirror says. dist/export checks the bytes against the publisher's signed
// SHA256SUMS from the origin registry, or carries them marked "mirror hashes
// only". Every answer is bounded (MaxAPIDocumentSize), every string checked
// for control characters, every archive URL must be on the mirror's origin
// (ErrForeignURL), and each archive lists at most MaxMirrorHashes hashes.

// MaxMirrorHashes bounds the hashes one archive of a mirror's version
// document may list (real mirrors list one h1: and one zh:).
const MaxMirrorHashes = 16

// MirrorArchive is one platform's package in a network mirror.
type MirrorArchive struct {
	URL string // absolute, on the mirror's origin
	// Hashes are the h1: and zh: hashes the mirror lists, well-formed;
	// other schemes are dropped (as Terraform ignores them).
	Hashes []string
}

var (
	reMirrorH1 = regexp.MustCompile(`^h1:[A-Za-z0-9+/]{43}=$`)
	reMirrorZH = regexp.MustCompile(`^zh:[0-9a-f]{64}$`)
)

// mirrorPath is the URL of one of p's documents in the mirror at base.
func mirrorPath(base *url.URL, p dist.Provider, file string) (*url.URL, error) {
	if strings.Contains(p.Host, ":") {
		return nil, fmt.Errorf("provider %s: a provider host with a port cannot be named in a network mirror's paths (Terraform cannot either)", p)
	}
	return rel(base, p.Host, p.Namespace, p.Type, file), nil
}

// mirrorJSON fetches a mirror document into v: 200 with a JSON media type,
// within MaxAPIDocumentSize, with the mirror host's token.
func (c *Client) mirrorJSON(ctx context.Context, base, u *url.URL, v any) (*url.URL, error) {
	host, err := dist.NormalizeHost(base.Host)
	if err != nil {
		return nil, fmt.Errorf("network mirror %s: %w", base.Redacted(), err)
	}
	return c.getJSONAs(ctx, u, v, host, true)
}

// MirrorVersions lists the versions the network mirror at base (https,
// ending in "/") offers of p, skipping those airgap cannot carry (see
// usableVersion). A provider the mirror lacks is ErrNotFound.
func (c *Client) MirrorVersions(ctx context.Context, base *url.URL, p dist.Provider) ([]string, error) {
	u, err := mirrorPath(base, p, "index.json")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if _, err := c.mirrorJSON(ctx, base, u, &doc); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("provider %s is not in the network mirror %s: %w", p, base.Redacted(), ErrNotFound)
		}
		return nil, err
	}
	what := fmt.Sprintf("provider %s in the network mirror %s", p, base.Redacted())
	var out []string
	for v := range doc.Versions {
		if err := checkText(what, "versions", v); err != nil {
			return nil, err
		}
		if s, ok := c.usableVersion(what, v); ok {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return dist.CompareVersions(out[i], out[j]) < 0 })
	return out, nil
}

// MirrorArchives returns the packages the network mirror at base has of p
// at version, by platform (os_arch).
func (c *Client) MirrorArchives(ctx context.Context, base *url.URL, p dist.Provider, version string) (map[string]MirrorArchive, error) {
	u, err := mirrorPath(base, p, version+".json")
	if err != nil {
		return nil, err
	}
	var doc mirrorVersionDoc
	final, err := c.mirrorJSON(ctx, base, u, &doc)
	if err != nil {
		return nil, err
	}
	return doc.archives(base, final, fmt.Sprintf("provider %s %s in the network mirror %s", p, version, base.Redacted()))
}

// mirrorVersionDoc is a mirror's <version>.json.
type mirrorVersionDoc struct {
	Archives map[string]struct {
		URL    string   `json:"url"`
		Hashes []string `json:"hashes"`
	} `json:"archives"`
}

// archives checks the document (fetched from final, of the mirror at base)
// and returns its archives with absolute URLs.
func (doc *mirrorVersionDoc) archives(base, final *url.URL, what string) (map[string]MirrorArchive, error) {
	out := make(map[string]MirrorArchive, len(doc.Archives))
	for plat, a := range doc.Archives {
		osName, arch, ok := strings.Cut(plat, "_")
		if !ok || !dist.ValidPlatformPart(osName) || !dist.ValidPlatformPart(arch) {
			return nil, fmt.Errorf("%s: %w: archives has a platform %s that is not os_arch", what, ErrInvalidAnswer, quote(plat))
		}
		if err := checkText(what, "url", a.URL); err != nil {
			return nil, err
		}
		ref, err := url.Parse(a.URL)
		if err != nil || a.URL == "" {
			return nil, fmt.Errorf("%s %s: %w: invalid url %s", what, plat, ErrInvalidAnswer, quote(a.URL))
		}
		abs := final.ResolveReference(ref).String()
		if err := checkMirrorURL(base, what+" "+plat, abs); err != nil {
			return nil, err
		}
		if len(a.Hashes) > MaxMirrorHashes {
			return nil, fmt.Errorf("%s %s: %w: %d hashes (at most %d)", what, plat, ErrInvalidAnswer, len(a.Hashes), MaxMirrorHashes)
		}
		ma := MirrorArchive{URL: abs}
		for _, h := range a.Hashes {
			if err := checkText(what, "hashes", h); err != nil {
				return nil, err
			}
			if reMirrorH1.MatchString(h) || reMirrorZH.MatchString(h) {
				ma.Hashes = append(ma.Hashes, h)
			}
		}
		sort.Strings(ma.Hashes)
		out[plat] = ma
	}
	return out, nil
}
