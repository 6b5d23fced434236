package report_test

// A chain whose hop carries a station approval, verified through the
// entry point verify uses (report.Check). This test package imports
// neither bundle/approval nor anything that does (the store): the check
// must read approvals by itself. When it read them through a function
// bundle/approval registered at start-up, a program that did not import
// that package refused every approved chain (no test here saw it: each
// test binary that built a chain imported the store, and so approval).
// Keep this package's tests free of both, or the test proves nothing.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// stationStatement is an approval statement in its canonical field order
// (written here by hand so that this package need not import
// bundle/approval).
type stationStatement struct {
	Type         string        `json:"type"`
	Format       int           `json:"format"`
	Bundle       verify.Digest `json:"bundle"`
	BundleSigner string        `json:"bundle_signer"`
	Station      verify.Signer `json:"station"`
	Time         time.Time     `json:"time"`
	Review       struct {
		Text verify.Digest `json:"text"`
		JSON verify.Digest `json:"json"`
	} `json:"review"`
	PublisherKeys []struct{} `json:"publisher_keys"`
	Tool          string     `json:"tool"`
}

func signer(e *openpgp.Entity) verify.Signer {
	return verify.Signer{KeyID: verify.KeyID(e), Fingerprint: verify.Fingerprint(e), Identity: verify.Identity(e)}
}

// stationApproval is an approval file of hop by station at at, as
// 'airgap approve' writes it.
func stationApproval(t *testing.T, hop bundle.Hop, station *openpgp.Entity, at time.Time) []byte {
	t.Helper()
	st := stationStatement{Type: "airgap-approval", Format: 1, Bundle: hop.Bundle, BundleSigner: hop.Signer.Fingerprint,
		Station: signer(station), Time: at, PublisherKeys: []struct{}{}, Tool: "airgap test"}
	st.Review.Text, st.Review.JSON = verify.DigestBytes(nil), verify.DigestBytes(nil)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&st); err != nil {
		t.Fatal(err)
	}
	text := append([]byte(nil), b.Bytes()...)
	if err := verify.SignDetachedArmored(&b, station, bytes.NewReader(text), at); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// approvedChain writes a bundle signed by enclave whose chain has one hop
// (the Standard set's manifest, signed by site) carrying one approval by
// station, recorded as by recorded; it returns the bundle's path.
func approvedChain(t *testing.T, site, enclave, station, recorded *openpgp.Entity) string {
	t.Helper()
	dir := t.TempDir()
	set := bundletest.Standard(t, filepath.Join(dir, "src"), site)
	m := set.Manifest(t)
	files := map[verify.Digest]string{}
	for d, p := range set.Files {
		files[d] = p
	}
	add := func(data []byte, role string) verify.Digest {
		d := verify.DigestBytes(data)
		if _, ok := files[d]; !ok {
			p := filepath.Join(dir, "blobs", d.Hex())
			bundletest.WriteFile(t, p, data)
			files[d] = p
			m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: int64(len(data)), Role: role})
		}
		return d
	}
	hm := *m
	hm.Tool = "airgap hop"
	data, err := hm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	at := site.PrimaryKey.CreationTime.Add(time.Second).UTC().Truncate(time.Second)
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, site, bytes.NewReader(data), at); err != nil {
		t.Fatal(err)
	}
	hop := bundle.Hop{Bundle: add(data, dist.RoleBundleManifest), Signature: add(sig.Bytes(), dist.RoleBundleSignature),
		Key: add([]byte(bundletest.Armor(t, site)), dist.RoleBundleKey), Signer: signer(site), SignedAt: &at, Imported: at}
	now := time.Now().UTC().Truncate(time.Second)
	hop.Approvals = []bundle.HopApproval{{Approval: add(stationApproval(t, hop, station, now), dist.RoleApproval),
		Key: add([]byte(bundletest.Armor(t, station)), dist.RoleBundleKey), Station: signer(recorded), Time: now}}
	m.Chain = []bundle.Hop{hop}
	m.Normalize()
	out := filepath.Join(dir, "approved.bundle")
	bundletest.WriteSignedManifest(t, out, m, files, enclave)
	return out
}

func verifyBundle(t *testing.T, path string, kr openpgp.EntityList) (*report.Report, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep := &report.Report{File: path}
	return rep, report.Check(f, kr, rep)
}

func TestApprovedChainVerifies(t *testing.T) {
	site, enclave, station := bundletest.Key(t, "site"), bundletest.Key(t, "enclave"), bundletest.Key(t, "station")
	rep, err := verifyBundle(t, approvedChain(t, site, enclave, station, station), openpgp.EntityList{enclave})
	if err != nil {
		t.Fatalf("a chain with a good station approval is refused: %v", err)
	}
	if len(rep.Checks.Chain) != 1 || rep.Checks.Chain[0].ApprovalsChecked != 1 {
		t.Fatalf("the approval was not checked: %+v", rep.Checks.Chain)
	}

	// The check reads the approval: one the chain records as by another
	// station is refused.
	other := bundletest.Key(t, "other-station")
	_, err = verifyBundle(t, approvedChain(t, site, enclave, station, other), openpgp.EntityList{enclave})
	if err == nil || !strings.Contains(err.Error(), "but the approval is by") {
		t.Fatalf("an approval recorded as by another station: %v", err)
	}
}
