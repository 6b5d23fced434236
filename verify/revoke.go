package verify

import (
	"fmt"
	"io"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Revocation is a key's own statement that it must no longer be trusted:
// a key revocation signature on its primary key, made by that key (the
// library keeps only revocations whose signature checks out).
type Revocation struct {
	Signer Signer
	At     time.Time // the revocation signature's creation time
	// Reason is the reason code and text the revocation gives, for people
	// ("key compromised: …"); "" when it gives none.
	Reason string
}

// maxReasonText bounds the reason text a Revocation keeps (it is shown
// to people and stored in a store's index).
const maxReasonText = 200

// Revocations lists the revocations of the primary keys of el, one per
// key (the earliest, which is when the key stopped being trustworthy).
// Keys come from ReadKeyring, so the document they came from was bounded.
func Revocations(el openpgp.EntityList) []Revocation {
	var out []Revocation
	for _, e := range el {
		var first *packet.Signature
		for _, r := range e.Revocations {
			if first == nil || r.CreationTime.Before(first.CreationTime) {
				first = r
			}
		}
		if first == nil {
			continue
		}
		out = append(out, Revocation{Signer: Signer{KeyID: KeyID(e), Fingerprint: Fingerprint(e), Identity: Identity(e)},
			At: first.CreationTime.UTC().Truncate(time.Second), Reason: revocationReason(first)})
	}
	return out
}

func revocationReason(s *packet.Signature) string {
	text := s.RevocationReasonText
	if len(text) > maxReasonText {
		text = text[:maxReasonText] + "…"
	}
	code := ""
	if s.RevocationReason != nil {
		switch *s.RevocationReason {
		case packet.KeySuperseded:
			code = "key superseded"
		case packet.KeyCompromised:
			code = "key compromised"
		case packet.KeyRetired:
			code = "key retired"
		case packet.NoReason:
			code = "no reason given"
		default:
			code = fmt.Sprintf("reason %d", *s.RevocationReason)
		}
	}
	switch {
	case code != "" && text != "":
		return code + ": " + text
	case code != "":
		return code
	}
	return text
}

// SignDetachedArmored writes an ASCII-armored detached signature of message
// by signer, dated at (zero: now; see SignDetachedAt).
func SignDetachedArmored(w io.Writer, signer *openpgp.Entity, message io.Reader, at time.Time) error {
	aw, err := armor.Encode(w, openpgp.SignatureType, nil)
	if err != nil {
		return err
	}
	if err := SignDetachedAt(aw, signer, message, at); err != nil {
		return err
	}
	if err := aw.Close(); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}
