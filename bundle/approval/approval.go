package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Limits on an approval file (it is read as untrusted input).
const (
	// MaxSize bounds a whole approval file: a statement with
	// MaxPublisherKeys keys and a MaxNote-byte note is under 16 KiB, an
	// armored RSA-8192 signature under 2 KiB.
	MaxSize = 64 << 10
	// MaxNote bounds the officer's note, in bytes.
	MaxNote = 1000
	// MaxPublisherKeys bounds the publisher keys one approval accepts.
	MaxPublisherKeys = 64
	// MaxBeside bounds the approval files read beside one bundle.
	MaxBeside   = 16
	maxIdentity = 256
	maxTool     = 100
)

// statementType and statementFormat identify an approval statement.
const (
	statementType   = "airgap-approval"
	statementFormat = 1
)

// Ext ends an approval file's name: BUNDLE.approval, BUNDLE.2.approval, …
const Ext = ".approval"

// Errors (test with errors.Is).
var (
	// errMalformed: the file is not an approval in the one form accepted.
	errMalformed = errors.New("not an airgap approval")
	// errTooNew: the statement has a newer format than this airgap reads.
	errTooNew = errors.New("approval written by a newer airgap")
	// ErrSignature: the signature is not the station key's over the statement.
	ErrSignature = errors.New("the approval's signature does not check out")
)

// Review is the digest of the review the station printed: as text and as
// 'approve --json' prints it.
type Review struct {
	Text verify.Digest `json:"text"`
	JSON verify.Digest `json:"json"`
}

// PublisherKey is a publisher key the station approved for a namespace.
type PublisherKey struct {
	Namespace   string `json:"namespace"`   // dist.NamespaceKey
	Fingerprint string `json:"fingerprint"` // as verify.Fingerprint
}

// Statement is what the station signs.
type Statement struct {
	Type          string         `json:"type"`
	Format        int            `json:"format"`
	Bundle        verify.Digest  `json:"bundle"`
	BundleSigner  string         `json:"bundle_signer"`
	Station       verify.Signer  `json:"station"`
	Time          time.Time      `json:"time"`
	Review        Review         `json:"review"`
	Against       verify.Digest  `json:"against,omitempty"`
	Note          string         `json:"note,omitempty"`
	PublisherKeys []PublisherKey `json:"publisher_keys"`
	Tool          string         `json:"tool"`
}

// Approval is a parsed approval file.
type Approval struct {
	Statement
	// Data is the file, byte for byte (what a store keeps).
	Data   []byte
	signed []byte // the statement's bytes
	sig    []byte // the armored signature
}

// Encode is the statement's canonical form: JSON indented by two spaces,
// HTML characters not escaped, one trailing newline, publisher keys sorted.
func Encode(st *Statement) ([]byte, error) {
	if st.PublisherKeys == nil {
		st.PublisherKeys = []PublisherKey{}
	}
	SortKeys(st.PublisherKeys)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SortKeys sorts publisher keys by namespace, then fingerprint.
func SortKeys(ks []PublisherKey) {
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].Namespace != ks[j].Namespace {
			return ks[i].Namespace < ks[j].Namespace
		}
		return ks[i].Fingerprint < ks[j].Fingerprint
	})
}

// Sign makes an approval file of st signed by key: st's Station and Time
// are set from key and at (truncated to the second), Type and Format to
// this package's. The statement is validated as Parse would.
func Sign(st Statement, key *openpgp.Entity, at time.Time) ([]byte, error) {
	st.Type, st.Format = statementType, statementFormat
	st.Station = verify.Signer{KeyID: verify.KeyID(key), Fingerprint: verify.Fingerprint(key), Identity: verify.Identity(key)}
	st.Time = at.UTC().Truncate(time.Second)
	if st.Time.Before(key.PrimaryKey.CreationTime) {
		return nil, fmt.Errorf("the station key was created %s, after the approval's time %s (is this machine's clock right?)",
			key.PrimaryKey.CreationTime.UTC().Format(time.RFC3339), st.Time.Format(time.RFC3339))
	}
	st.PublisherKeys = append([]PublisherKey{}, st.PublisherKeys...)
	SortKeys(st.PublisherKeys)
	if err := st.validate(); err != nil {
		return nil, err
	}
	text, err := Encode(&st)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(text)
	if err := verify.SignDetachedArmored(&out, key, bytes.NewReader(text), st.Time); err != nil {
		return nil, err
	}
	if out.Len() > MaxSize {
		return nil, fmt.Errorf("the approval would be %d bytes, over the %d a store reads", out.Len(), MaxSize)
	}
	return out.Bytes(), nil
}

const (
	sigBegin = "-----BEGIN PGP SIGNATURE-----\n"
	sigEnd   = "-----END PGP SIGNATURE-----\n"
)

// Parse reads an approval file (see the package doc for what it accepts).
// It checks the form, not the signature (Check does).
func Parse(data []byte) (*Approval, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, over the %d an approval may have", errMalformed, len(data), MaxSize)
	}
	i := bytes.Index(data, []byte("\n"+sigBegin))
	if i < 0 {
		return nil, fmt.Errorf("%w: no armored signature after the statement", errMalformed)
	}
	signed, sig := data[:i+1], data[i+1:]
	if !bytes.HasSuffix(sig, []byte(sigEnd)) || bytes.Count(sig, []byte("-----BEGIN ")) != 1 || bytes.Count(sig, []byte("-----END ")) != 1 {
		return nil, fmt.Errorf("%w: the signature must be one armored block, ending the file", errMalformed)
	}
	if !utf8.Valid(signed) {
		return nil, fmt.Errorf("%w: the statement is not UTF-8", errMalformed)
	}
	var head struct {
		Type   string `json:"type"`
		Format int    `json:"format"`
	}
	if err := json.Unmarshal(signed, &head); err != nil {
		return nil, fmt.Errorf("%w: the statement is not JSON: %v", errMalformed, err)
	}
	if head.Type != statementType {
		return nil, fmt.Errorf("%w: its type is %q, not %q", errMalformed, dist.Printable(head.Type), statementType)
	}
	if head.Format > statementFormat {
		return nil, fmt.Errorf("%w: format %d, this airgap reads %d\nhint: upgrade airgap on this side", errTooNew, head.Format, statementFormat)
	}
	a := &Approval{Data: data, signed: signed, sig: sig}
	dec := json.NewDecoder(bytes.NewReader(signed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a.Statement); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	again, err := Encode(&a.Statement)
	if err != nil || !bytes.Equal(again, signed) {
		return nil, fmt.Errorf("%w: the statement is not in its canonical form (as 'airgap approve' writes it)", errMalformed)
	}
	return a, nil
}

// validate checks every field's form.
func (st *Statement) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, a...))
	}
	if st.Type != statementType || st.Format != statementFormat {
		return bad("type %q format %d", dist.Printable(st.Type), st.Format)
	}
	if _, err := verify.ParseDigest(string(st.Bundle)); err != nil {
		return bad("bundle: %v", err)
	}
	for what, d := range map[string]verify.Digest{"review.text": st.Review.Text, "review.json": st.Review.JSON} {
		if _, err := verify.ParseDigest(string(d)); err != nil {
			return bad("%s: %v", what, err)
		}
	}
	if st.Against != "" {
		if _, err := verify.ParseDigest(string(st.Against)); err != nil {
			return bad("against: %v", err)
		}
	}
	if !canonicalFingerprint(st.BundleSigner) {
		return bad("bundle_signer %q is not a fingerprint", dist.Printable(st.BundleSigner))
	}
	s := st.Station
	if !canonicalFingerprint(s.Fingerprint) || len(s.KeyID) != 16 || !strings.HasSuffix(s.Fingerprint, s.KeyID) {
		return bad("station key %q (ID %q) is not a fingerprint and its key ID", dist.Printable(s.Fingerprint), dist.Printable(s.KeyID))
	}
	if !plainText(s.Identity, maxIdentity) {
		return bad("the station key's identity is not plain text of at most %d bytes", maxIdentity)
	}
	if st.Time.IsZero() || st.Time.Location() != time.UTC || !st.Time.Equal(st.Time.Truncate(time.Second)) || st.Time.Year() < 2000 || st.Time.Year() > 9999 {
		return bad("time %s is not a UTC time to the second", st.Time)
	}
	if !plainText(st.Note, MaxNote) {
		return bad("the note is not plain text of at most %d bytes (no control or formatting characters)", MaxNote)
	}
	if !plainText(st.Tool, maxTool) {
		return bad("tool is not plain text of at most %d bytes", maxTool)
	}
	if len(st.PublisherKeys) > MaxPublisherKeys {
		return bad("%d publisher keys, over the %d one approval may accept", len(st.PublisherKeys), MaxPublisherKeys)
	}
	for i, k := range st.PublisherKeys {
		host, ns, ok := strings.Cut(k.Namespace, "/")
		if !ok || !dist.ValidHost(host) || !dist.ValidProviderName(ns) || dist.NamespaceKey(host, ns) != k.Namespace {
			return bad("publisher key namespace %q is not HOST/NAMESPACE", dist.Printable(k.Namespace))
		}
		if !canonicalFingerprint(k.Fingerprint) {
			return bad("publisher key %q is not a fingerprint", dist.Printable(k.Fingerprint))
		}
		if i > 0 {
			p := st.PublisherKeys[i-1]
			if p.Namespace > k.Namespace || p.Namespace == k.Namespace && p.Fingerprint >= k.Fingerprint {
				return bad("publisher keys are not sorted, or one is listed twice")
			}
		}
	}
	return nil
}

func canonicalFingerprint(s string) bool {
	fp, err := verify.ParseFingerprint(s)
	return err == nil && fp == s
}

// plainText: valid UTF-8 of at most max bytes that dist.Printable leaves
// as it is (no control, formatting or bidi characters).
func plainText(s string, max int) bool {
	return len(s) <= max && utf8.ValidString(s) && dist.Printable(s) == s && !strings.ContainsAny(s, "\n\r\t")
}

// Check verifies the approval's signature against keyring (as of its
// creation) and that it is the station key's, made at the time the
// statement states. It returns what the signature says.
func (a *Approval) Check(keyring openpgp.EntityList) (verify.Checked, error) {
	c, err := verify.CheckSignature(keyring, bytes.NewReader(a.signed), a.sig)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	if c.Signer.Fingerprint != a.Station.Fingerprint {
		return c, fmt.Errorf("%w: it names station key %s but was signed by %s", ErrSignature, verify.GroupFingerprint(a.Station.Fingerprint), verify.GroupFingerprint(c.Signer.Fingerprint))
	}
	if !c.Created.Equal(a.Time) {
		return c, fmt.Errorf("%w: it states %s but was signed %s", ErrSignature, a.Time.Format(time.RFC3339), c.Created.UTC().Format(time.RFC3339))
	}
	return c, nil
}

// Digest is the sha256 of the file, the blob a store keeps it as.
func (a *Approval) Digest() verify.Digest { return verify.DigestBytes(a.Data) }

// PathFor is where 'airgap approve' writes the approval of the bundle at
// path: BUNDLE.approval, or for a split set (any part given) NAME.approval
// beside part NAME.000.
func PathFor(path string) string {
	if prefix, ok := bundle.SetPrefix(path); ok && bundle.IsSplitSet(path) {
		return prefix + Ext
	}
	return path + Ext
}

// NextPath is PathFor(path), or if that file exists the first free
// NAME.N.approval (N from 2), so that a second station's approval of the
// same bundle does not replace the first.
func NextPath(path string) (string, error) {
	first := PathFor(path)
	if _, err := os.Lstat(first); os.IsNotExist(err) {
		return first, nil
	}
	base := strings.TrimSuffix(first, Ext)
	for n := 2; n <= MaxBeside; n++ {
		p := fmt.Sprintf("%s.%d%s", base, n, Ext)
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%d approvals of %s are there already; give --out FILE", MaxBeside, filepath.Base(base))
}

// File is an approval file's name (for messages) and bytes, or why it
// could not be read (Beside: a file there that is not a regular file, or
// not readable, is an approval that does not count, not a failure).
type File struct {
	Name string
	Data []byte
	Err  error
}

// Beside reads the approval files next to the bundle at path: PathFor(path)
// and NAME.N.approval (N from 2 to MaxBeside), those that exist. Each is
// read up to MaxSize+1 bytes (Parse refuses more). Links are followed: a
// file given beside a bundle is the operator's.
func Beside(path string) ([]File, error) {
	first := PathFor(path)
	base := strings.TrimSuffix(first, Ext)
	names := []string{first}
	for n := 2; n <= MaxBeside; n++ {
		names = append(names, fmt.Sprintf("%s.%d%s", base, n, Ext))
	}
	var out []File
	for _, n := range names {
		f, err := ReadFile(n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			f = File{Name: n, Err: err}
		}
		out = append(out, f)
	}
	return out, nil
}

// ReadFile reads an approval file, at most MaxSize+1 bytes of it. Only a
// regular file is opened (a FIFO planted beside a bundle would block the
// open itself).
func ReadFile(path string) (File, error) {
	if fi, err := os.Stat(path); err != nil {
		return File{}, err
	} else if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("approval %s: not a regular file", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("approval %s: not a regular file", path)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(fh, MaxSize+1)); err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	return File{Name: path, Data: b.Bytes()}, nil
}
