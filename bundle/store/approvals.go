package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// ErrApproval: the store requires transfer-station approvals of every
// bundle (import.hcl's approvals block) and the bundle has too few.
var ErrApproval = errors.New("not enough transfer-station approvals")

// ApprovalPolicy is the store's approvals block (import.hcl):
//
//	approvals {
//	  keyring  = "stations.pub.asc"   # relative to the store
//	  required = 1
//	}
//
// Every bundle needs Required valid approvals (bundle/approval), each by
// a distinct key of the keyring, each of exactly this bundle, none by the
// key that signed the bundle or any key of the import's keyring.
type ApprovalPolicy struct {
	Keyring  string          `json:"keyring"` // as import.hcl names it
	Required int             `json:"required"`
	Keys     []verify.Signer `json:"keys"`
	// Armor is the keyring's public keys (a forecast checks approvals
	// against it: 'airgap verify --against' reads it from the inventory).
	Armor   string `json:"armor"`
	keyring openpgp.EntityList
}

// MaxRequiredApprovals bounds approvals.required.
const MaxRequiredApprovals = 8

// Approvals is the import rule of an approvals block (the store's
// ApprovalPolicy): it checks the approval files that came with the bundle
// and refuses the bundle with too few valid ones. It runs before KeyPins,
// which takes the publisher keys the valid approvals accept.
type Approvals struct {
	Policy *ApprovalPolicy
	// Valid and Invalid are what Check found (set by Check).
	Valid   []ValidApproval
	Invalid []InvalidApproval
}

// ValidApproval is an approval the rule counts.
type ValidApproval struct {
	File    string // where it came from ("" for a pending approval)
	Station verify.Signer
	Time    time.Time
	Note    string
	Keys    []approval.PublisherKey
	Pending bool               // being made by 'airgap approve' (not signed yet)
	a       *approval.Approval // nil when pending
}

// InvalidApproval is an approval file the rule does not count, and why.
type InvalidApproval struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// PublisherKeys are the publisher keys the valid approvals accept.
func (ap *Approvals) PublisherKeys() []approval.PublisherKey {
	var out []approval.PublisherKey
	for _, v := range ap.Valid {
		out = append(out, v.Keys...)
	}
	return out
}

// Check implements Policy.
func (ap *Approvals) Check(in *PolicyInput, out *PolicyResult) error {
	ap.Valid, ap.Invalid = nil, nil
	seen := map[string]bool{}
	count := func(v ValidApproval, file string) {
		if seen[v.Station.Fingerprint] {
			ap.Invalid = append(ap.Invalid, InvalidApproval{File: file, Reason: "another approval by the same station key " + keyName(v.Station) + " (each key counts once)"})
			return
		}
		seen[v.Station.Fingerprint] = true
		ap.Valid = append(ap.Valid, v)
	}
	for _, f := range in.Approvals {
		a, c, err := ap.read(f, in)
		if err != nil {
			ap.Invalid = append(ap.Invalid, InvalidApproval{File: f.Name, Reason: dist.Printable(firstLine(err.Error()))})
			continue
		}
		count(ValidApproval{File: f.Name, Station: c.Signer, Time: a.Time, Note: a.Note, Keys: a.PublisherKeys, a: a}, f.Name)
	}
	if st := in.Pending; st != nil {
		if err := ap.judge(st, in); err != nil {
			ap.Invalid = append(ap.Invalid, InvalidApproval{File: "(this approval)", Reason: firstLine(err.Error())})
		} else {
			count(ValidApproval{Station: st.Station, Time: st.Time, Note: st.Note, Keys: st.PublisherKeys, Pending: true}, "(this approval)")
		}
	}
	if len(ap.Valid) < ap.Policy.Required {
		out.Refuse(ap.missing(), Refusal{Rule: RuleApproval, Reason: ap.Summary()})
	}
	ap.record(in, out)
	return nil
}

// read parses an approval file and checks its signature and what it
// approves.
func (ap *Approvals) read(f approval.File, in *PolicyInput) (*approval.Approval, verify.Checked, error) {
	if f.Err != nil {
		return nil, verify.Checked{}, f.Err
	}
	a, err := approval.Parse(f.Data)
	if err != nil {
		return nil, verify.Checked{}, err
	}
	// Checked against the site keys too, so that an approval by one is
	// named as such (judge refuses it).
	c, err := a.Check(append(append(openpgp.EntityList{}, ap.Policy.keyring...), in.SiteKeys...))
	if errors.Is(err, approval.ErrSignature) && strings.Contains(err.Error(), verify.ErrUnknownSigner.Error()) {
		return nil, c, fmt.Errorf("signed by %s, which is not a key of the store's station keyring %s", keyName(a.Station), ap.Policy.Keyring)
	}
	if err != nil {
		return nil, c, err
	}
	return a, c, ap.judge(&a.Statement, in)
}

// judge checks what an approval approves — exactly this bundle, as
// signed by the key that signed it — and by which key.
func (ap *Approvals) judge(st *approval.Statement, in *PolicyInput) error {
	switch {
	case st.Bundle != in.Bundle:
		return fmt.Errorf("it approves another bundle (%s), not this one (%s)", st.Bundle.Short(), in.Bundle.Short())
	case st.BundleSigner != in.Signer.Fingerprint:
		return fmt.Errorf("it approves this bundle as signed by %s, but this copy is signed by %s (the station reviewed the other)",
			verify.GroupFingerprint(st.BundleSigner), keyName(in.Signer))
	case st.Station.Fingerprint == in.Signer.Fingerprint:
		return fmt.Errorf("it is signed by the key that signed the bundle (%s): a station key is never the bundle's signing key", keyName(in.Signer))
	case isSiteKey(in.SiteKeys, st.Station.Fingerprint):
		return fmt.Errorf("it is signed by a site key of the import's keyring (%s): a station key is never a site key", keyName(st.Station))
	case !isSiteKey(ap.Policy.keyring, st.Station.Fingerprint):
		return fmt.Errorf("its key %s is not in the store's station keyring %s", keyName(st.Station), ap.Policy.Keyring)
	case !in.Now.IsZero() && st.Time.After(in.Now.Add(check.MaxClockAhead)):
		return fmt.Errorf("it is dated %s, more than a day after this machine's clock", st.Time.Format(time.RFC3339))
	case revokedIn(ap.Policy.keyring, st.Station.Fingerprint):
		// An approval file by such a key fails its signature check
		// first; this is for the approval being made ('airgap approve').
		return fmt.Errorf("its key %s is revoked in the store's station keyring %s: a revoked key signs nothing", keyName(st.Station), ap.Policy.Keyring)
	}
	if s, why := judgeSignature(standingOf(in.Index, st.Station.Fingerprint), st.Station, st.Time, false); s != "" {
		return errors.New(why)
	}
	return nil
}

// revokedIn reports whether kr's copy of the key fp carries a revocation
// (of the key, or of the identity it signs under).
func revokedIn(kr openpgp.EntityList, fp string) bool {
	for _, e := range kr {
		if verify.Fingerprint(e) != fp {
			continue
		}
		if _, id := e.PrimarySelfSignature(); len(e.Revocations) > 0 || id != nil && len(id.Revocations) > 0 {
			return true
		}
	}
	return false
}

func isSiteKey(kr openpgp.EntityList, fp string) bool {
	for _, e := range kr {
		if verify.Fingerprint(e) == fp {
			return true
		}
	}
	return false
}

// Summary says how many valid approvals of how many required were found.
func (ap *Approvals) Summary() string {
	var names []string
	for _, v := range ap.Valid {
		names = append(names, keyName(v.Station))
	}
	s := fmt.Sprintf("%d of %d required approval(s) by keys of the station keyring %s", len(ap.Valid), ap.Policy.Required, ap.Policy.Keyring)
	if len(names) > 0 {
		s += ": " + strings.Join(names, ", ")
	}
	return s
}

// missing is the refusal of a bundle with too few approvals.
func (ap *Approvals) missing() error {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: the store requires %d approval(s) of this bundle by distinct keys of its station keyring %s (%s); found %d",
		ErrApproval, ap.Policy.Required, ap.Policy.Keyring, ImportConfigName, len(ap.Valid))
	if len(ap.Valid)+len(ap.Invalid) == 0 {
		b.WriteString(": no approval came with the bundle (none beside it as BUNDLE" + approval.Ext + ", none given with --approval)")
	}
	for _, v := range ap.Valid {
		fmt.Fprintf(&b, "\n  %s: valid, by %s", approvalName(v.File), keyName(v.Station))
	}
	for _, v := range ap.Invalid {
		fmt.Fprintf(&b, "\n  %s: not counted: %s", approvalName(v.File), v.Reason)
	}
	fmt.Fprintf(&b, "\nhint: at the transfer station, review the bundle and approve it with a station key of %s: "+
		"'airgap approve --key STATION.key.asc --keyring SITE.pub.asc --against have.json BUNDLE' writes BUNDLE%s beside it; carry both (or give the file with --approval)",
		ap.Policy.Keyring, approval.Ext)
	return wrapSentinel(ErrApproval, b.String())
}

func approvalName(file string) string {
	if file == "" {
		return "(this approval)"
	}
	return dist.Printable(filepath.Base(file))
}

// record keeps the valid approvals not yet in the store's history of this
// bundle: each as a blob (its file) and in this import's history entry.
func (ap *Approvals) record(in *PolicyInput, out *PolicyResult) {
	have := map[verify.Digest]bool{}
	for _, e := range in.Index.Imports {
		if e.Bundle == in.Bundle {
			for _, r := range e.Approvals {
				have[r.Blob] = true
			}
		}
	}
	var recs []ApprovalRecord
	for _, v := range ap.Valid {
		if v.a == nil || have[v.a.Digest()] {
			continue
		}
		d := out.Keep(v.a.Data)
		rec := ApprovalRecord{Blob: d, Station: v.Station, Time: v.Time, Note: v.Note, PublisherKeys: v.Keys}
		if key, err := signerArmor(ap.Policy.keyring, v.Station.Fingerprint); err == nil {
			rec.StationKey = out.Keep(key)
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return
	}
	out.Record(func(ix *Index) {
		e := &ix.Imports[len(ix.Imports)-1]
		e.Approvals = append(e.Approvals, recs...)
	})
}

// sentinelError is a message that wraps a sentinel error without repeating
// its text at the start (the message already begins with it).
type sentinelError struct {
	err error
	msg string
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.err }

func wrapSentinel(err error, msg string) error { return &sentinelError{err, msg} }
