package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airgap/airgap/dist"
)

// ErrNoPublisherSignature: a bundle carries provider versions that no
// publisher signature vouches for, and the import requires one
// (requirePublisherSignatures).
var ErrNoPublisherSignature = errors.New("refused by --require-publisher-signatures")

// maxListed bounds how many provider versions a refusal names.
const maxListed = 20

// requirePublisherSignatures is the policy of 'airgap import
// --require-publisher-signatures': every provider version the bundle
// carries must have a SHA256SUMS signed by a key its registry lists. It
// refuses the whole bundle (nothing is imported) if any carries a network
// mirror's hashes only (dist.TrustMirror: exported with
// --trust-mirror-hashes while the origin could not be reached) or is
// re-signed by the site (dist.TrustSite: its registry published its
// SHA256SUMS without a key). The refusal names each such version, its tier
// and, for a mirror, the mirror; the store is not changed.
//
// Provider versions the store already has are judged by the bundle as
// well: the policy is about what this bundle brings in. It records nothing.
func requirePublisherSignatures() Policy {
	return PolicyFunc(func(in *PolicyInput, out *PolicyResult) error {
		var bad []string
		var rs []Refusal
		for _, p := range in.Manifest.Catalog.Providers {
			tier := p.Trust()
			if tier == dist.TrustPublisher {
				continue
			}
			line := fmt.Sprintf("%s: %s", p, dist.TrustLabel(tier))
			why := dist.TrustLabel(tier) + ": no publisher signature, and the store requires one"
			if p.MirrorHashesOnly {
				line += " (from the network mirror " + p.Mirror + ")"
				why += " (from the network mirror " + p.Mirror + ")"
			}
			bad = append(bad, dist.Printable(line))
			rs = append(rs, providerRefusal(rulePublisherSignature, p, why))
		}
		if len(bad) == 0 {
			return nil
		}
		n, more := len(bad), ""
		if len(bad) > maxListed {
			more = fmt.Sprintf("\n  … and %d more", len(bad)-maxListed)
			bad = bad[:maxListed]
		}
		out.Refuse(fmt.Errorf("%w: %d provider version(s) in the bundle carry no publisher signature:\n  %s%s\nhint: export them again where their origin registries can be reached (without --trust-mirror-hashes), or import this bundle without --require-publisher-signatures (and without require_publisher_signatures in %s) if the site accepts them",
			ErrNoPublisherSignature, n, strings.Join(bad, "\n  "), more, ImportConfigName), rs...)
		return nil
	})
}
