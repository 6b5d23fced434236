package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Forecast is what an import into the store an inventory describes would
// decide ('airgap verify --against'): bundle/store's Forecast runs the
// import's own rules over the inventory (its catalog, withdrawals, key
// history, revocations and import policy) and fills it.
//
// JSON (the report's "forecast"): {verdict ("accept", "refuse"), policy:
// [string] (the store's rules, for people), refused: [refusal], approvals
// ({required, keyring, valid: [{file, station, time, note,
// publisher_keys}], invalid: [{file, reason}]}; only when the store
// requires approvals), trust_changes: [trust change], undecided: [string]
// (what only the import can decide, as a delta's omitted signatures),
// pins: [pin]}. pin: {namespace, key: signer, first_use (the namespace has
// no publisher key before it), how (dist.Pin*: first_use,
// approved_at_station, declared_by_bundle, accepted_at_import,
// pins_file)}: every key the import would pin.
// refusal: {rule, kind, address, version, reason}; kind is "" (and address
// and version absent) for the bundle as a whole. trust change: {provider,
// change ("signature", "sha256sums"), before, after: signer}.
type Forecast struct {
	Verdict      string             `json:"verdict"`
	Policy       []string           `json:"policy"`
	Refused      []Refusal          `json:"refused"`
	Approvals    *ApprovalsForecast `json:"approvals,omitempty"`
	TrustChanges []TrustChange      `json:"trust_changes"`
	Undecided    []string           `json:"undecided"`
	Pins         []PinForecast      `json:"pins"`
}

// PinForecast is a publisher key the import would pin for a namespace.
type PinForecast struct {
	Namespace string        `json:"namespace"`
	Key       verify.Signer `json:"key"`
	FirstUse  bool          `json:"first_use"`
	How       string        `json:"how"`
}

func (p PinForecast) String() string {
	what := "new key"
	if p.FirstUse {
		what = "first use"
	}
	s := fmt.Sprintf("%s: will pin %s for %s", what, KeyName(p.Key), p.Namespace)
	switch p.How {
	case dist.PinStation:
		s += " (approved at the transfer station)"
	case dist.PinDeclared:
		s += " (the bundle declares it approved)"
	case dist.PinOperator:
		s += " (approved with --accept-publisher-key)"
	case dist.PinFile:
		s += " (listed in the pins file)"
	case dist.PinFirstUse:
		s += " (trust on first use: check its fingerprint with the publisher)"
	}
	return s
}

// Forecast verdicts.
const (
	VerdictAccept = "accept"
	VerdictRefuse = "refuse"
)

// Refusal is one entry an import refuses, and why: a provider or module
// version (Kind, Address, Version), or the bundle as a whole (Kind "").
// Rule is which of the import's rules refused it (bundle/store's Rule*).
type Refusal struct {
	Rule    string `json:"rule"`
	Kind    string `json:"kind,omitempty"`
	Address string `json:"address,omitempty"`
	Version string `json:"version,omitempty"`
	Reason  string `json:"reason"`
}

// Entry is "provider ADDRESS VERSION", or "the bundle".
func (r Refusal) Entry() string {
	if r.Kind == "" {
		return "the bundle"
	}
	return r.Kind + " " + r.Address + " " + r.Version
}

// TrustChange is a provider version the store already serves whose
// SHA256SUMS or signature an import replaces: what its clients check
// changes, so verify and the import list it and the history keeps it.
type TrustChange struct {
	Provider string `json:"provider"` // "host/namespace/type version"
	// Change is "signature" (the same SHA256SUMS, signed again, perhaps by
	// another key) or "sha256sums" (a mirror-hashes-only SHA256SUMS
	// replaced by the publisher's).
	Change string        `json:"change"`
	Before verify.Signer `json:"before"` // the key of the signature served until now (empty: unknown)
	After  verify.Signer `json:"after"`  // the key of the bundle's signature (empty: not checked here)
}

func (c TrustChange) String() string {
	what := "SHA256SUMS signature"
	if c.Change == "sha256sums" {
		what = "SHA256SUMS (mirror hashes only) and signature"
	}
	before, after := "an unknown key", "a key not checked here"
	if c.Before.Fingerprint != "" {
		before = KeyName(c.Before)
	}
	if c.After.Fingerprint != "" {
		after = KeyName(c.After)
	}
	if c.Before.Fingerprint == c.After.Fingerprint && c.Before.Fingerprint != "" {
		return fmt.Sprintf("provider %s: its %s is replaced by a new signature of the same key %s", c.Provider, what, after)
	}
	return fmt.Sprintf("provider %s: its %s changes from %s to %s", c.Provider, what, before, after)
}

// KeyName is a key for people: its fingerprint in groups of four, and its
// identity (escaped).
func KeyName(s verify.Signer) string {
	if s.Identity == "" {
		return verify.GroupFingerprint(s.Fingerprint)
	}
	return verify.GroupFingerprint(s.Fingerprint) + " (" + dist.Printable(s.Identity) + ")"
}

// ApprovalsForecast is what the forecast found of the approvals a store
// requires.
type ApprovalsForecast struct {
	Required int               `json:"required"`
	Keyring  string            `json:"keyring"`
	Valid    []ApprovalSeen    `json:"valid"`
	Invalid  []ApprovalInvalid `json:"invalid"`
}

// ApprovalSeen is a valid approval ("file" is "" for the one being made).
type ApprovalSeen struct {
	File          string         `json:"file,omitempty"`
	Station       verify.Signer  `json:"station"`
	Time          time.Time      `json:"time"`
	Note          string         `json:"note,omitempty"`
	PublisherKeys []PublisherKey `json:"publisher_keys"`
}

// PublisherKey is a publisher key approved for a namespace.
type PublisherKey struct {
	Namespace   string `json:"namespace"`
	Fingerprint string `json:"fingerprint"`
}

// ApprovalInvalid is an approval file that does not count, and why.
type ApprovalInvalid struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// RefusesImport reports whether the report forecasts a refusal.
func (rep *Report) RefusesImport() bool {
	return rep.Forecast != nil && rep.Forecast.Verdict == VerdictRefuse
}

// OnlyUnapproved reports whether the forecast refuses the bundle for
// nothing but missing station approvals: a good bundle that the import
// will accept once it is approved ('airgap approve').
func (rep *Report) OnlyUnapproved() bool {
	f := rep.Forecast
	if f == nil || f.Verdict != VerdictRefuse || len(f.Refused) == 0 {
		return false
	}
	for _, r := range f.Refused {
		if r.Rule != ruleApproval {
			return false
		}
	}
	return true
}

// ruleApproval is bundle/store's RuleApproval (the store's rules stand on
// this package, not the other way round).
const ruleApproval = "approval"

// verdictLine is the report's last line: what the import will do.
func (rep *Report) verdictLine() string {
	f := rep.Forecast
	switch {
	case rep.OnlyUnapproved():
		return "Verdict: import will accept once approved: " + approvalsMissing(f) + " ('airgap approve' at the transfer station)"
	case f == nil:
		return "Verdict: verified; the import is not forecast (give --against the store's 'airgap inventory --json')"
	case f.Verdict == VerdictAccept && len(f.Undecided) > 0:
		return fmt.Sprintf("Verdict: import will accept, unless what only it can check fails (%d item(s) above)", len(f.Undecided))
	case f.Verdict == VerdictAccept:
		return "Verdict: import will accept"
	}
	return "Verdict: import will refuse: " + refusalSummary(f.Refused)
}

// approvalsMissing says how many station approvals f lacks.
func approvalsMissing(f *Forecast) string {
	if a := f.Approvals; a != nil {
		return fmt.Sprintf("%d of %d required approval(s) missing", a.Required-len(a.Valid), a.Required)
	}
	return "its approval is missing"
}

// refusalSummary counts the refused entries and names the rules.
func refusalSummary(rs []Refusal) string {
	entries := map[string]bool{}
	var rules []string
	seenRule := map[string]bool{}
	whole := false
	for _, r := range rs {
		if r.Kind == "" {
			whole = true
		} else {
			entries[r.Entry()] = true
		}
		if !seenRule[r.Rule] {
			seenRule[r.Rule] = true
			rules = append(rules, strings.ReplaceAll(r.Rule, "_", " "))
		}
	}
	var parts []string
	if len(entries) > 0 {
		parts = append(parts, fmt.Sprintf("%d entr%s", len(entries), map[bool]string{true: "y", false: "ies"}[len(entries) == 1]))
	}
	if whole {
		parts = append(parts, "the bundle as a whole")
	}
	return strings.Join(parts, " and ") + " (" + strings.Join(rules, ", ") + ")"
}

// forecastText is the report's forecast section.
func (rep *Report) forecastText(b *strings.Builder) {
	q := dist.Printable
	f := rep.Forecast
	if f == nil {
		return
	}
	inv := ""
	if rep.Against != nil {
		inv = " " + q(rep.Against.Inventory)
	}
	fmt.Fprintf(b, "\nImport forecast (the store's own rules, from%s):\n", inv)
	if len(f.Policy) == 0 {
		b.WriteString("  policy: none beyond withdrawals, conflicts and publisher-key pins\n")
	}
	for _, l := range f.Policy {
		fmt.Fprintf(b, "  policy: %s\n", q(l))
	}
	if a := f.Approvals; a != nil {
		fmt.Fprintf(b, "  approvals: %d of %d required (station keyring %s)\n", len(a.Valid), a.Required, q(a.Keyring))
		for _, v := range a.Valid {
			file := "this approval"
			if v.File != "" {
				file = v.File
			}
			fmt.Fprintf(b, "    valid: %s by %s on %s", q(file), KeyName(v.Station), v.Time.Format("2006-01-02 15:04Z"))
			if v.Note != "" {
				fmt.Fprintf(b, ": %q", q(v.Note))
			}
			b.WriteString("\n")
			for _, k := range v.PublisherKeys {
				fmt.Fprintf(b, "      accepts publisher key %s for %s\n", verify.GroupFingerprint(k.Fingerprint), q(k.Namespace))
			}
		}
		for _, v := range a.Invalid {
			fmt.Fprintf(b, "    not counted: %s: %s\n", q(v.File), q(v.Reason))
		}
	}
	fmt.Fprintf(b, "  trust changes: %d\n", len(f.TrustChanges))
	for _, c := range f.TrustChanges {
		fmt.Fprintf(b, "    %s\n", q(c.String()))
	}
	for _, u := range f.Undecided {
		fmt.Fprintf(b, "  decided at import: %s\n", q(u))
	}
	for _, p := range f.Pins {
		fmt.Fprintf(b, "  %s\n", q(p.String()))
	}
	if f.Verdict == VerdictAccept {
		b.WriteString("  refused: 0\n")
		return
	}
	fmt.Fprintf(b, "  refused: %s\n", refusalSummary(f.Refused))
	for _, r := range f.Refused {
		fmt.Fprintf(b, "    %s: %s: %s\n", q(r.Entry()), strings.ReplaceAll(r.Rule, "_", " "), q(r.Reason))
	}
}
