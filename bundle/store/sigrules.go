package store

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// The store's signature-time rules, written once (docs/trust-model.md,
// "Revocations, retirements and signature times", says the same for
// people). verify.CheckSignature judges a signature by the copy of the key
// at hand (expiry at the signature's creation; a revocation the copy
// carries refuses it whatever the dates); the store then judges the key
// by what it has recorded, which a copy cannot undo: judgeSignature below.
// Every signature an import accepts — the bundle's, each station
// approval's, each chain hop's and each hop approval's, each provider's
// SHA256SUMS — goes through it, and so does every forecast ('verify
// --against', 'approve --against'), which runs the import's rules.

// ErrRevokedKey: a signature the bundle needs is by a key whose revocation
// the store has recorded.
var ErrRevokedKey = errors.New("signed by a key this store has revoked")

// ruleRevokedKey: the bundle (or a hop of its chain) is signed by a key
// the store has revoked.
const ruleRevokedKey = "revoked_key"

// keyStanding is what the store has recorded of one key: its revocation
// (from 'airgap keys revoke' or a bundle's carried keys), and for a
// publisher key its retirement for the namespace ('airgap keys retire').
type keyStanding struct {
	revoked *RevokedKey
	retired *time.Time
}

// standingOf is the standing of the key fp in ix (revocation only: a
// retirement is per namespace, for publisher keys).
func standingOf(ix *Index, fp string) keyStanding {
	for i := range ix.RevokedKeys {
		if ix.RevokedKeys[i].Fingerprint == fp {
			return keyStanding{revoked: &ix.RevokedKeys[i]}
		}
	}
	return keyStanding{}
}

// judgeSignature is the rule: whether the store takes a signature by the
// key of standing s, made at created, where held says the store already
// holds this very signature (a provider version it serves with that
// SHA256SUMS signature). It returns "" when the store takes it, else the
// status (keyRevoked, keyRetired) and why, naming the key.
//
//   - a revoked key signs nothing new: a signature the store does not
//     hold is refused whatever its date (whoever holds a revoked key can
//     date a signature before the revocation); one it holds stays good
//     only if made before the revocation;
//   - a retired key signs nothing new for its namespace; what the store
//     holds stays.
//
// Bundles, approvals and chain hops are never held: they are new each
// time, so a revoked site, station or hop key is refused outright.
func judgeSignature(s keyStanding, key verify.Signer, created time.Time, held bool) (status, why string) {
	if r := s.revoked; r != nil && (!held || !created.Before(r.Revoked)) {
		return keyRevoked, fmt.Sprintf("the store has recorded the revocation of %s (revoked %s, %s; from %s): it signs nothing new here, whatever a copy of the key says",
			keyName(key), r.Revoked.UTC().Format("2006-01-02"), orNoReason(r.Reason), r.Source)
	}
	if s.retired != nil && !held {
		return keyRetired, fmt.Sprintf("the store retired %s for the namespace on %s ('airgap keys retire'): it signs nothing new there",
			keyName(key), s.retired.UTC().Format("2006-01-02"))
	}
	return "", ""
}

// revokedSignersRule refuses a bundle whose own signature, or a chain
// hop's, or a hop's station approval, is by a key the store has revoked.
// (Station approvals of this bundle are judged by Approvals: one by a
// revoked key does not count.)
func revokedSignersRule(in *PolicyInput, out *PolicyResult) error {
	var lines []string
	judge := func(what string, key verify.Signer, at time.Time) {
		if key.Fingerprint == "" {
			return
		}
		if st, why := judgeSignature(standingOf(in.Index, key.Fingerprint), key, at, false); st != "" {
			lines = append(lines, dist.Printable(what+": "+why))
		}
	}
	judge("the bundle's signature", in.Signer, in.SignedAt)
	if in.Checked != nil {
		for _, h := range in.Checked.Chain {
			var at time.Time
			if h.SignedAt != nil {
				at = *h.SignedAt
			}
			judge("the signature of chain hop "+h.Bundle.Short(), h.Signer, at)
			for _, a := range h.Approvals {
				judge("the station approval of chain hop "+h.Bundle.Short(), a.Station, a.Time)
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	var rs []Refusal
	for _, l := range lines {
		rs = append(rs, Refusal{Rule: ruleRevokedKey, Reason: l})
	}
	out.Refuse(fmt.Errorf("%w:\n  %s\nhint: a revoked key's signatures are not accepted here whatever their date: bring the content in a bundle signed (and, through enclaves, carried) only by keys that are not revoked; 'airgap inventory --store DIR' lists the keys this store has revoked",
		ErrRevokedKey, strings.Join(lines, "\n  ")), rs...)
	return nil
}
