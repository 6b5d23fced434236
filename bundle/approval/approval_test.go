package approval_test

import (
	"bytes"
	"errors"
	"github.com/airgap/airgap/bundle"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/verify"
)

func statement() approval.Statement {
	return approval.Statement{
		Bundle:       verify.DigestBytes([]byte("manifest")),
		BundleSigner: verify.Fingerprint(bundletestKey),
		Review:       approval.Review{Text: verify.DigestBytes([]byte("text")), JSON: verify.DigestBytes([]byte("json"))},
		Note:         "checked <with> the publisher & the CVE list",
		PublisherKeys: []approval.PublisherKey{{Namespace: "registry.terraform.io/hashicorp", Fingerprint: strings.Repeat("AB", 20)},
			{Namespace: "registry.opentofu.org/hashicorp", Fingerprint: strings.Repeat("CD", 20)}},
		Tool: "airgap test",
	}
}

var (
	bundletestKey *openpgp.Entity
	now           time.Time
)

func signed(t *testing.T) ([]byte, *openpgp.Entity) {
	t.Helper()
	bundletestKey = bundletest.Key(t, "site")
	station := bundletest.Key(t, "station")
	now = time.Now().Add(time.Hour).Truncate(time.Second).Add(500)
	data, err := approval.Sign(statement(), station, now)
	if err != nil {
		t.Fatal(err)
	}
	return data, station
}

// An approval signed by a station key parses, checks against that key,
// and is its file byte for byte; every change to it is refused.
func TestApprovalRoundTrip(t *testing.T) {
	data, station := signed(t)
	a, err := approval.Parse(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if a.Station.Fingerprint != verify.Fingerprint(station) || !a.Time.Equal(now.Truncate(time.Second)) ||
		len(a.PublisherKeys) != 2 || a.PublisherKeys[0].Namespace != "registry.opentofu.org/hashicorp" || !bytes.Equal(a.Data, data) {
		t.Errorf("parsed: %+v", a.Statement)
	}
	if !bytes.Contains(data, []byte(`"note": "checked <with> the publisher & the CVE list"`)) {
		t.Errorf("the statement is not readable as written:\n%s", data)
	}
	if _, err := a.Check(openpgp.EntityList{station}); err != nil {
		t.Fatal(err)
	}
	other := bundletest.Key(t, "other station")
	if _, err := a.Check(openpgp.EntityList{other}); !errors.Is(err, approval.ErrSignature) {
		t.Errorf("checked against another key: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"note": "checked`, `"note": "Checked`, "signature"},                              // the signature covers the statement
		{`"format": 1`, `"format": 2`, "newer airgap"},                                     // a newer format
		{`"format": 1,`, `"format": 1, "extra": 1,`, "unknown field"},                      // unknown fields
		{`"type": "airgap-approval"`, `"type": "other"`, "its type is"},                    // another kind of file
		{"  \"tool\"", "   \"tool\"", "canonical"},                                         // other spacing
		{`&`, `\u0026`, "canonical"},                                                       // other escapes
		{`"note": "checked`, `"note": "\u202echecked`, "plain text"},                       // bidi in the note
		{"-----END PGP SIGNATURE-----\n", "-----END PGP SIGNATURE-----\nmore\n", "ending"}, // data after the signature
	} {
		bad := bytes.Replace(data, []byte(c.from), []byte(c.to), 1)
		a, err := approval.Parse(bad)
		if err == nil {
			_, err = a.Check(openpgp.EntityList{station})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q -> %q: want %q, got %v", c.from, c.to, c.want, err)
		}
	}
	if _, err := approval.Parse(append(bytes.Repeat([]byte(" "), approval.MaxSize), data...)); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("an oversized file: %v", err)
	}
}

// FuzzParse: whatever Parse accepts is in the one form it accepts: the
// statement encodes to the bytes it was read from, and the file is those
// bytes and the signature.
func FuzzParse(f *testing.F) {
	bundletestKey = bundletest.Key(f, "site")
	data, err := approval.Sign(statement(), bundletest.Key(f, "station"), time.Now())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("{}\n-----BEGIN PGP SIGNATURE-----\n\n-----END PGP SIGNATURE-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := approval.Parse(b)
		if err != nil {
			return
		}
		again, err := approval.Encode(&a.Statement)
		if err != nil || !bytes.HasPrefix(b, again) || !bytes.Equal(a.Data, b) {
			t.Fatalf("accepted a non-canonical statement:\n%s", b)
		}
	})
}

// An approval of a split set is NAME.approval beside NAME.000, whichever
// part names the set; a second one of the same bundle does not replace
// the first.
func TestApprovalPaths(t *testing.T) {
	dir := t.TempDir()
	set := filepath.Join(dir, "site.bundle")
	for _, p := range []string{".000", ".001", ".002"} {
		os.WriteFile(set+p, nil, 0o644)
	}
	for _, part := range []string{set + ".000", set + ".002"} {
		if got := approval.PathFor(part); got != set+".approval" {
			t.Errorf("PathFor(%s) = %s", part, got)
		}
	}
	one := filepath.Join(dir, "one.bundle")
	if got := approval.PathFor(one); got != one+".approval" {
		t.Errorf("PathFor(one) = %s", got)
	}
	os.WriteFile(one+".approval", []byte("x"), 0o644)
	if got, err := approval.NextPath(one); err != nil || got != filepath.Join(dir, "one.bundle.2.approval") {
		t.Errorf("NextPath with one there: %s %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, "one.bundle.2.approval"), []byte("y"), 0o644)
	fs, err := approval.Beside(one)
	if err != nil || len(fs) != 2 || string(fs[1].Data) != "y" {
		t.Errorf("Beside: %+v %v", fs, err)
	}
}

// TestChainLimit: the chain check reads an approval within this
// package's bound.
func TestChainLimit(t *testing.T) {
	if bundle.MaxApprovalSize != approval.MaxSize {
		t.Fatalf("bundle.MaxApprovalSize %d, approval.MaxSize %d", bundle.MaxApprovalSize, approval.MaxSize)
	}
}
