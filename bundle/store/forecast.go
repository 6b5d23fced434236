package store

import (
	"fmt"
	"time"

	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// forecastRun is what a forecast decided, for Review.
type forecastRun struct {
	keys     *KeyPins
	refusals []Refusal
}

// forecast runs, over the inventory's view of the store, exactly the rules
// an import runs — CatalogRules, then the policies StorePolicy.Rules builds
// from the store's import policy (as the inventory carries it) and the
// import's flags (opt.Extra) — with the approvals that come with the
// bundle, and fills rep.Forecast with their decision: the verdict, every
// entry refused and why, the approvals counted and not, and the versions
// whose signature the import would replace. The decisions are the
// import's own code; only the store is the inventory's description of it
// (an altered inventory can mislead the review, never the import).
func forecast(rep *report.Report, opt ReviewOptions) (*forecastRun, error) {
	a, m := opt.Against, rep.Manifest()
	sp := a.Policy
	if sp == nil {
		sp = &StorePolicy{PublisherKeyApprovals: keyApprovalsAnywhere}
	}
	x := opt.Extra
	x.Pins = opt.Pins
	rules, err := sp.Rules(x)
	if err != nil {
		return nil, err
	}
	ix := &Index{Catalog: a.Catalog, Withdrawn: a.Withdrawn, PublisherKeys: a.PublisherKeys, RevokedKeys: a.RevokedKeys, Signers: a.Signers}
	var signer verify.Signer
	if rep.Signer != nil {
		signer = *rep.Signer
	}
	var signedAt time.Time
	if rep.SignedAt != nil {
		signedAt = *rep.SignedAt
	}
	_, unknown := a.history()
	in := &PolicyInput{Manifest: m, Bundle: verify.Digest(rep.Bundle), Signer: signer, SignedAt: signedAt, Index: ix, Checked: rep.Checks, Now: opt.Now,
		History: a.PublisherKeys, Unknown: unknown, Approvals: opt.Approvals, Pending: opt.Pending, SiteKeys: opt.SiteKeys}
	var out PolicyResult
	for _, p := range append(CatalogRules(), rules.Policies...) {
		if err := p.Check(in, &out); err != nil {
			return nil, err
		}
	}
	f := &report.Forecast{Verdict: report.VerdictAccept, Refused: out.Refusals(), TrustChanges: trustChanges(&ix.Catalog, SignersByVersion(ix.Signers), m, rep.Checks)}
	if len(f.Refused) > 0 {
		f.Verdict = report.VerdictRefuse
	}
	if a.Policy == nil {
		f.Policy = append(f.Policy, "unknown: the inventory was printed by an airgap that did not carry the store's import policy (the forecast applies withdrawals, conflicts and key pins only)")
	} else {
		f.Policy = sp.Lines()
	}
	seen := map[string]bool{}
	for _, d := range rules.Keys.Decisions {
		if d.Status == keyUnknown {
			f.Undecided = append(f.Undecided, fmt.Sprintf("the publisher key of provider %s (%s)", d.Provider, d.Note))
		}
		if d.Pin != nil && !seen[d.Namespace+" "+d.Pin.Fingerprint] {
			seen[d.Namespace+" "+d.Pin.Fingerprint] = true
			known := dist.NamespaceKeys{Keys: d.Known}
			f.Pins = append(f.Pins, report.PinForecast{Namespace: d.Namespace, Key: d.Signer, FirstUse: !known.HasTier(dist.TrustPublisher), How: d.Pin.How})
		}
	}
	if sp.Chain != nil && rep.Checks != nil {
		for _, h := range rep.Checks.Chain {
			if h.Deferred {
				f.Undecided = append(f.Undecided, fmt.Sprintf("the signature of chain hop %s with the chain keyring's copy of its key (its manifest is not in this delta: the import checks it with the store's copy)", h.Bundle.Short()))
			}
		}
	}
	if ap := rules.Approvals; ap != nil {
		f.Approvals = approvalsForecast(ap)
	}
	rep.Forecast = f
	return &forecastRun{keys: rules.Keys, refusals: f.Refused}, nil
}

// approvalsForecast is what the approvals rule found, for the report.
func approvalsForecast(ap *Approvals) *report.ApprovalsForecast {
	af := &report.ApprovalsForecast{Required: ap.Policy.Required, Keyring: ap.Policy.Keyring}
	for _, v := range ap.Valid {
		seen := report.ApprovalSeen{File: v.File, Station: v.Station, Time: v.Time, Note: v.Note}
		for _, k := range v.Keys {
			seen.PublisherKeys = append(seen.PublisherKeys, report.PublisherKey{Namespace: k.Namespace, Fingerprint: k.Fingerprint})
		}
		af.Valid = append(af.Valid, seen)
	}
	for _, v := range ap.Invalid {
		af.Invalid = append(af.Invalid, report.ApprovalInvalid{File: v.File, Reason: v.Reason})
	}
	return af
}
