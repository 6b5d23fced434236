package approval

import (
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/verify"
)

// A bundle exported from an offline store carries, in its chain of
// custody (bundle.Hop), the station approvals each earlier store accepted
// of the bundles it imported; the chain check reads them with this
// package, registered here (bundle cannot import it: this package reads
// bundle's limits).
func init() { bundle.RegisterApprovalCheck(checkForChain) }

// checkForChain parses an approval file and checks its signature against
// keyring (the station key carried beside it), returning what it approves,
// by whom and when.
func checkForChain(data []byte, keyring openpgp.EntityList) (verify.Digest, verify.Signer, time.Time, error) {
	a, err := Parse(data)
	if err != nil {
		return "", verify.Signer{}, time.Time{}, err
	}
	c, err := a.Check(keyring)
	if err != nil {
		return "", verify.Signer{}, time.Time{}, err
	}
	return a.Bundle, c.Signer, a.Time, nil
}
