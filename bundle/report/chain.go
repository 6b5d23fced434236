package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// The chain of custody in the review ('airgap verify'): every hop, oldest
// first, ending with the bundle itself.
//
// JSON: "chain" is [] for a bundle exported from the registries, else
// [{hop, bundle, this_bundle, signer, signed_at, imported, into, status,
// from, kind, tool, provider_versions, module_versions, withdrawals,
// brought}]: hop numbers the links (1 the oldest; bundles imported into
// the same store share one), status is "checked" (its signature verified
// again against the key it came with, its manifest read), "deferred" (its
// blobs are not in this delta: import checks them), "recorded" (the store
// did not keep its manifest: signer and time as the store noted them,
// unproven) or "this_bundle"; from is "registries" or "store" (it was
// itself exported from a store); into is the fingerprint of the key that
// signs the exports of the store that imported it (omitted for the store
// this bundle came from). Each provider and module has came_with, the bundle of the oldest
// hop whose signed manifest lists it.

// ChainHop is one link of the chain as the review shows it.
type ChainHop struct {
	Hop        int           `json:"hop"`
	Bundle     verify.Digest `json:"bundle"`
	ThisBundle bool          `json:"this_bundle,omitempty"`
	Signer     verify.Signer `json:"signer"`
	SignedAt   *time.Time    `json:"signed_at,omitempty"`
	Imported   *time.Time    `json:"imported,omitempty"`
	Into       string        `json:"into,omitempty"`
	Status     string        `json:"status"`
	From       string        `json:"from,omitempty"`
	Kind       string        `json:"kind,omitempty"`
	Tool       string        `json:"tool,omitempty"`
	Providers  int           `json:"provider_versions"`
	Modules    int           `json:"module_versions"`
	Withdraws  int           `json:"withdrawals"`
	Brought    int           `json:"brought"`
	// Approvals are the station approvals the importing store accepted
	// of the hop, each checked again (status "checked").
	Approvals []ChainApproval `json:"approvals"`
}

// ChainApproval is a station approval of a hop.
type ChainApproval struct {
	Station verify.Signer `json:"station"`
	Time    time.Time     `json:"time"`
}

// Chain statuses (ChainHop.Status).
const (
	HopChecked  = "checked"
	HopDeferred = "deferred"
	HopRecorded = "recorded"
	HopThis     = "this_bundle"
)

// AttentionCustody: the chain has hops whose manifests were not kept, so
// what came with them cannot be tied to a signature.
const AttentionCustody = "custody_unproven"

// chain fills the review's chain from the check, ending with the bundle.
func (rep *Report) chain(m *bundle.Manifest) {
	rep.Chain = []ChainHop{}
	if rep.Checks == nil || len(rep.Checks.Chain) == 0 {
		return
	}
	top := 0
	for _, h := range rep.Checks.Chain {
		top = max(top, h.Level)
	}
	for _, h := range rep.Checks.Chain {
		c := ChainHop{Hop: top - h.Level + 1, Bundle: h.Bundle, Signer: h.Signer, SignedAt: h.SignedAt, Into: h.Into, Status: HopChecked,
			Tool: h.Tool, Providers: h.Providers, Modules: h.Modules, Withdraws: h.Withdraws, Brought: h.Brought}
		imported := h.Imported
		c.Imported = &imported
		c.Approvals = []ChainApproval{}
		for _, a := range h.Approvals {
			c.Approvals = append(c.Approvals, ChainApproval{Station: a.Station, Time: a.Time.UTC()})
		}
		switch {
		case !h.Checkable():
			c.Status = HopRecorded
		case h.Deferred:
			c.Status = HopDeferred
		default:
			c.From, c.Kind = "registries", "full"
			if h.FromStore {
				c.From = "store"
			}
			if h.Delta {
				c.Kind = "delta"
			}
		}
		rep.Chain = append(rep.Chain, c)
	}
	this := ChainHop{Hop: top + 1, Bundle: verify.Digest(rep.Bundle), ThisBundle: true, Status: HopThis, From: "store", Kind: rep.Kind, Tool: m.Tool,
		Providers: len(m.Catalog.Providers), Modules: len(m.Catalog.Modules), Approvals: []ChainApproval{}}
	if rep.Signer != nil {
		this.Signer = *rep.Signer
	}
	this.SignedAt = rep.SignedAt
	for _, w := range m.Withdraw {
		this.Withdraws += len(w.Versions)
	}
	rep.Chain = append(rep.Chain, this)
	recorded := 0
	for _, h := range rep.Chain {
		if h.Status == HopRecorded {
			recorded++
		}
	}
	if recorded > 0 {
		rep.AddAttention(AttentionCustody, "chain", fmt.Sprintf("%d hop(s) of the chain of custody were imported before airgap kept bundles' signed manifests: their signer and time are as a store noted them, unproven, and %d record(s) of this bundle are tied to no checked signature (%s); a store whose import policy has a chain block refuses it",
			recorded, len(rep.Checks.Untied), strings.Join(firstN(rep.Checks.Untied, 3), "; ")))
	}
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string{}, s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
}

// chainText is the review's chain of custody for people.
func (rep *Report) chainText(b *strings.Builder) {
	q := dist.Printable
	if len(rep.Chain) == 0 {
		return
	}
	top := rep.Chain[len(rep.Chain)-1].Hop
	fmt.Fprintf(b, "\nChain of custody (%d hops, oldest first; every signature checked again against the key it came with):\n", top)
	signer := map[string]ChainHop{}
	for _, h := range rep.Chain {
		if _, ok := signer[h.Signer.Fingerprint]; !ok {
			signer[h.Signer.Fingerprint] = h
		}
	}
	for _, h := range rep.Chain {
		at := ""
		if h.SignedAt != nil {
			at = " on " + h.SignedAt.UTC().Format("2006-01-02 15:04Z")
		}
		if h.ThisBundle {
			fmt.Fprintf(b, "  hop %d: this bundle %s, exported from an offline store\n", h.Hop, h.Bundle.Short())
			fmt.Fprintf(b, "         signed by %s%s\n         fingerprint %s\n", q(identityOrID(h.Signer)), at, verify.GroupFingerprint(h.Signer.Fingerprint))
			continue
		}
		what := ""
		switch h.Status {
		case HopChecked:
			from := "exported from the registries"
			if h.From == "store" {
				from = "exported from an offline store"
			}
			what = fmt.Sprintf("%s %s, %s; %d provider versions, %d module versions", h.Kind, "bundle", from, h.Providers, h.Modules)
			if h.Withdraws > 0 {
				what += fmt.Sprintf(", %d withdrawn", h.Withdraws)
			}
		case HopDeferred:
			what = "not all of its manifest, signature and key are in this delta: import checks it with the store's copies"
		case HopRecorded:
			what = "RECORDED ONLY: the store did not keep its manifest; signer and time as the store noted them"
		}
		fmt.Fprintf(b, "  hop %d: bundle %s (%s)\n", h.Hop, h.Bundle.Short(), what)
		sig := ": signature checked"
		switch h.Status {
		case HopRecorded:
			sig = " (not checked)"
		case HopDeferred:
			sig = ""
		}
		fmt.Fprintf(b, "         signed by %s%s%s\n         fingerprint %s\n", q(identityOrID(h.Signer)), at, sig, verify.GroupFingerprint(h.Signer.Fingerprint))
		into := "the store that exported this bundle"
		if g, ok := signer[h.Into]; ok && h.Into != "" {
			into = fmt.Sprintf("the store of %s (hop %d)", q(identityOrID(g.Signer)), g.Hop)
		}
		if h.Imported != nil {
			fmt.Fprintf(b, "         imported %s into %s", h.Imported.UTC().Format("2006-01-02 15:04Z"), into)
		}
		if h.Brought > 0 {
			fmt.Fprintf(b, "; first to bring %d entr%s of this bundle", h.Brought, map[bool]string{true: "y", false: "ies"}[h.Brought == 1])
		}
		b.WriteString("\n")
		checked := ": approval checked"
		if h.Status != HopChecked {
			checked = " (import checks it)"
		}
		for _, a := range h.Approvals {
			fmt.Fprintf(b, "         approved at the transfer station by %s on %s%s\n", q(KeyName(a.Station)), a.Time.Format("2006-01-02 15:04Z"), checked)
		}
	}
	if rep.Checks != nil && len(rep.Checks.Untied) == 0 && !rep.chainDeferred() {
		b.WriteString("  every entry, package and gate result is tied to the signed manifest of a hop that carried it\n")
	}
}

func (rep *Report) chainDeferred() bool {
	for _, h := range rep.Chain {
		if h.Status == HopDeferred {
			return true
		}
	}
	return false
}

// cameWith is the line saying which hop first brought an entry ("" when
// the bundle has no chain).
func (rep *Report) cameWith(d verify.Digest) string {
	if d == "" {
		return ""
	}
	for _, h := range rep.Chain {
		if h.Bundle == d {
			return fmt.Sprintf("    came with hop %d (bundle %s, signed by %s)\n", h.Hop, d.Short(), dist.Printable(identityOrID(h.Signer)))
		}
	}
	return ""
}
