package export

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// PublisherKey is one key that signed SHA256SUMS of the export, per
// namespace: what the offline side will pin (and what
// --accept-new-publisher-key names).
type PublisherKey struct {
	Namespace   string   `json:"namespace"`
	Fingerprint string   `json:"fingerprint"`
	KeyID       string   `json:"key_id"`
	Identity    string   `json:"identity,omitempty"`
	Trust       string   `json:"trust"`
	Providers   []string `json:"providers"`
	Declared    bool     `json:"declared_new"` // --accept-new-publisher-key named it
}

// signatures checks, once more and as the offline side will, every
// provider's SHA256SUMS signature of m (from files), and returns the
// publisher keys per namespace, the bundle's signature time and the
// declarations to write: the bundle is signed no earlier than modTime and
// no earlier than the newest SHA256SUMS signature (deterministic, like
// modTime itself; zero modTime means now); a SHA256SUMS signature dated
// more than check.MaxClockAhead after now is refused (this side's clock
// is the one with the internet); each fingerprint of accept must sign a
// provider of the export, and is declared for each namespace it signs.
func signatures(m *bundle.Manifest, files map[verify.Digest]string, modTime, now time.Time, accept []string) ([]PublisherKey, time.Time, []bundle.PublisherKeyDecl, error) {
	signAt := modTime
	byKey := map[string]*PublisherKey{}
	for _, p := range m.Catalog.Providers {
		c, err := checkSums(p, files)
		if err != nil {
			return nil, time.Time{}, nil, err
		}
		if c.Created.After(now.Add(check.MaxClockAhead)) {
			return nil, time.Time{}, nil, fmt.Errorf("provider %s: its SHA256SUMS signature is dated %s, in the future\nhint: the publisher's signature carries a forged date, or this machine's clock is wrong; nothing was written",
				p, c.Created.UTC().Format(time.RFC3339))
		}
		if !modTime.IsZero() && c.Created.After(signAt) {
			signAt = c.Created
		}
		k := p.NamespaceKey() + " " + c.Signer.Fingerprint
		pk := byKey[k]
		if pk == nil {
			pk = &PublisherKey{Namespace: p.NamespaceKey(), Fingerprint: c.Signer.Fingerprint, KeyID: c.Signer.KeyID, Identity: c.Signer.Identity, Trust: check.Trust(p)}
			byKey[k] = pk
		}
		pk.Providers = append(pk.Providers, p.String())
	}
	keys := make([]PublisherKey, 0, len(byKey))
	for _, pk := range byKey {
		keys = append(keys, *pk)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].Namespace+" "+keys[i].Fingerprint < keys[j].Namespace+" "+keys[j].Fingerprint
	})
	var decls []bundle.PublisherKeyDecl
	for _, fp := range accept {
		found := false
		for i := range keys {
			if keys[i].Fingerprint == fp {
				keys[i].Declared, found = true, true
				decls = append(decls, bundle.PublisherKeyDecl{Namespace: keys[i].Namespace, Fingerprint: fp})
			}
		}
		if !found {
			return nil, time.Time{}, nil, fmt.Errorf("--accept-new-publisher-key %s: no provider of this export is signed by that key; its providers are signed by: %s\nhint: give the fingerprint of the key that signs the providers whose new key you approve; nothing was written",
				verify.GroupFingerprint(fp), keyList(keys))
		}
	}
	bundle.SortPublisherKeys(decls)
	return keys, signAt, decls, nil
}

// checkSums checks p's SHA256SUMS signature from the files export wrote.
func checkSums(p dist.ProviderVersion, files map[verify.Digest]string) (verify.Checked, error) {
	sums, err := os.ReadFile(files[p.Shasums])
	if err != nil {
		return verify.Checked{}, fmt.Errorf("provider %s: %w", p, err)
	}
	sig, err := os.ReadFile(files[p.ShasumsSig])
	if err != nil {
		return verify.Checked{}, fmt.Errorf("provider %s: %w", p, err)
	}
	c, err := check.ProviderSignature(p, sums, sig)
	if err != nil {
		return c, fmt.Errorf("provider %s: SHA256SUMS signature: %w", p, err)
	}
	return c, nil
}

func keyList(keys []PublisherKey) string {
	if len(keys) == 0 {
		return "(no provider)"
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %s %s", k.Namespace, verify.GroupFingerprint(k.Fingerprint), dist.Printable(k.Identity)))
	}
	return strings.Join(parts, "; ")
}
