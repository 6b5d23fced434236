package verify

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// DefaultRSABits is the size of generated site keys.
const DefaultRSABits = 3072

// KeyOptions configure GenerateKey.
type KeyOptions struct {
	Name       string // "Site Ops <ops@site>" or just a name
	RSABits    int    // 0 means DefaultRSABits; below 3072 is refused
	Passphrase []byte // empty: the private key is stored unencrypted
	Now        func() time.Time
}

// GenerateKey creates an RSA OpenPGP key pair and writes the armored private
// key to priv and the armored public key to pub.
func GenerateKey(priv, pub io.Writer, opt KeyOptions) (*openpgp.Entity, error) {
	bits := opt.RSABits
	if bits == 0 {
		bits = DefaultRSABits
	}
	if bits < 3072 {
		return nil, fmt.Errorf("RSA keys must have at least 3072 bits, not %d", bits)
	}
	name, comment, email := splitUserID(opt.Name)
	cfg := &packet.Config{
		Algorithm:     packet.PubKeyAlgoRSA,
		RSABits:       bits,
		DefaultHash:   crypto.SHA256,
		Time:          opt.Now,
		DefaultCipher: packet.CipherAES256,
	}
	e, err := openpgp.NewEntity(name, comment, email, cfg)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	if len(opt.Passphrase) > 0 {
		if err := e.EncryptPrivateKeys(opt.Passphrase, cfg); err != nil {
			return nil, fmt.Errorf("encrypting private key: %w", err)
		}
	}
	aw, err := armor.Encode(priv, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.SerializePrivateWithoutSigning(aw, cfg); err != nil {
		return nil, fmt.Errorf("writing private key: %w", err)
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(priv, "\n"); err != nil {
		return nil, err
	}
	if err := ArmorPublic(pub, e); err != nil {
		return nil, err
	}
	return e, nil
}

// ArmorPublic writes the armored public key of e.
func ArmorPublic(w io.Writer, e *openpgp.Entity) error {
	aw, err := armor.Encode(w, openpgp.PublicKeyType, nil)
	if err != nil {
		return err
	}
	if err := e.Serialize(aw); err != nil {
		return fmt.Errorf("writing public key: %w", err)
	}
	if err := aw.Close(); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// PublicArmor returns the armored public key of e as a string.
func PublicArmor(e *openpgp.Entity) (string, error) {
	var b bytes.Buffer
	if err := ArmorPublic(&b, e); err != nil {
		return "", err
	}
	return b.String(), nil
}

func splitUserID(s string) (name, comment, email string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "airgap site key", "", ""
	}
	if i := strings.Index(s, "<"); i >= 0 && strings.HasSuffix(s, ">") {
		return strings.TrimSpace(s[:i]), "", s[i+1 : len(s)-1]
	}
	return s, "", ""
}

// ReadKeyring reads one or more public (or private) keys, armored or binary.
// The input is untrusted: before any self-signature is verified, every key
// is checked against the limits (checkKeyPackets: size and count of keys,
// count of signatures, RSA/DSA/ElGamal parameter sizes), and a document
// outside them fails with ErrKeyRefused having cost time linear in its size.
// Copies of one key are merged into one (MergeCopies), so a revocation
// anywhere in the document counts whatever the order of the copies. It is
// the one reader of keyrings: site, station and chain keyrings and the
// publisher keys a bundle carries all come through it.
func ReadKeyring(r io.Reader) (openpgp.EntityList, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxKeyringSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxKeyringSize {
		return nil, fmt.Errorf("%w: the key document is larger than %d KiB", ErrKeyRefused, MaxKeyringSize>>10)
	}
	var docs [][]byte
	if bytes.Contains(data, []byte("-----BEGIN PGP")) {
		// A file may hold several armored blocks one after the other.
		rest := data
		for {
			i := bytes.Index(rest, []byte("-----BEGIN PGP"))
			if i < 0 {
				break
			}
			block, err := armor.Decode(bytes.NewReader(rest[i:]))
			if err != nil {
				return nil, fmt.Errorf("reading armored key: %w", err)
			}
			bin, err := io.ReadAll(io.LimitReader(block.Body, MaxKeyringSize))
			if err != nil {
				return nil, fmt.Errorf("reading armored key: %w", err)
			}
			docs = append(docs, bin)
			end := bytes.Index(rest[i:], []byte("-----END PGP"))
			if end < 0 {
				break
			}
			rest = rest[i+end+len("-----END PGP"):]
		}
	} else {
		docs = [][]byte{data}
	}
	var keys, sigs int
	for _, bin := range docs {
		if err := checkKeyPackets(bin, &keys, &sigs); err != nil {
			return nil, err
		}
	}
	var el openpgp.EntityList
	for _, bin := range docs {
		list, err := openpgp.ReadKeyRing(bytes.NewReader(bin))
		if err != nil {
			return nil, fmt.Errorf("reading key: %w", err)
		}
		el = append(el, list...)
	}
	if len(el) == 0 {
		return nil, ErrNoKeys
	}
	return MergeCopies(el), nil
}

// ReadKeyringFile is ReadKeyring on a file, which must hold public keys
// only: a private key there is refused (ErrPrivateInKeyring).
func ReadKeyringFile(path string) (openpgp.EntityList, error) {
	const hint = "\nhint: --keyring takes the exporting site's public key (PREFIX.pub.asc from 'airgap keygen'; several may be concatenated)"
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w%s", err, hint)
	}
	defer f.Close()
	el, err := ReadKeyring(f)
	if err != nil {
		return nil, fmt.Errorf("keyring %s: %w%s", path, err, hint)
	}
	for _, e := range el {
		if e.PrivateKey != nil {
			return nil, fmt.Errorf("keyring %s: %w (key %s): a keyring takes public keys only, and a private key does not belong at the transfer station or on the offline side: whoever copies it can sign bundles the site trusts%s; keep PREFIX.key.asc on the connected side, and if this copy left it, treat the key as exposed",
				path, ErrPrivateInKeyring, KeyID(e), hint)
		}
	}
	return el, nil
}

// ReadSigningKey reads an armored private key and decrypts it with
// passphrase if it is encrypted. passphrase is called only when needed.
func ReadSigningKey(r io.Reader, passphrase func() ([]byte, error)) (*openpgp.Entity, error) {
	el, err := ReadKeyring(r)
	if err != nil {
		return nil, err
	}
	for _, e := range el {
		if e.PrivateKey == nil {
			continue
		}
		if e.PrivateKey.Encrypted {
			if passphrase == nil {
				return nil, errors.New("the private key is encrypted and no passphrase was given")
			}
			p, err := passphrase()
			if err != nil {
				return nil, err
			}
			if err := e.DecryptPrivateKeys(p); err != nil {
				return nil, fmt.Errorf("decrypting private key: %w (wrong passphrase?)", err)
			}
		}
		return e, nil
	}
	return nil, errors.New("no private key found (is this the .pub.asc file?)")
}

// KeyID is the 16-hex-digit key ID of e's primary key, upper case.
func KeyID(e *openpgp.Entity) string {
	return fmt.Sprintf("%016X", e.PrimaryKey.KeyId)
}

// Fingerprint is the hex fingerprint of e's primary key, upper case.
func Fingerprint(e *openpgp.Entity) string {
	return fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)
}

// Identity is e's primary user ID, or "": the one its self-signature
// marks primary, else the one with the newest self-signature, ties going
// to the first name in byte order. It is the same for every copy of a key
// with the same user IDs and self-signatures, whatever the order of a map
// (a chain of custody records a hop's signer with it, and the next
// enclave compares the record with what it reads of the key again).
func Identity(e *openpgp.Entity) string {
	names := make([]string, 0, len(e.Identities))
	for name := range e.Identities {
		names = append(names, name)
	}
	sort.Strings(names)
	best := ""
	var bestID *openpgp.Identity
	for _, name := range names {
		if id := e.Identities[name]; bestID == nil || preferIdentity(bestID, id) {
			best, bestID = name, id
		}
	}
	return best
}

// preferIdentity reports whether id is a better primary user ID than
// best: not revoked over revoked, self-signed over not, marked primary
// over not, then a strictly newer self-signature.
func preferIdentity(best, id *openpgp.Identity) bool {
	if (len(best.Revocations) > 0) != (len(id.Revocations) > 0) {
		return len(best.Revocations) > 0
	}
	if (best.SelfSignature == nil) != (id.SelfSignature == nil) {
		return best.SelfSignature == nil
	}
	if best.SelfSignature == nil {
		return false
	}
	primary := func(s *packet.Signature) bool { return s.IsPrimaryId != nil && *s.IsPrimaryId }
	if primary(best.SelfSignature) != primary(id.SelfSignature) {
		return primary(id.SelfSignature)
	}
	return id.SelfSignature.CreationTime.After(best.SelfSignature.CreationTime)
}

// SignDetached writes a binary detached signature of message by signer.
func SignDetached(w io.Writer, signer *openpgp.Entity, message io.Reader) error {
	return SignDetachedAt(w, signer, message, time.Time{})
}

// SignDetachedAt is SignDetached with a fixed signature creation time (zero
// means now). RSA signatures are deterministic, so a fixed time makes the
// signature bytes reproducible.
func SignDetachedAt(w io.Writer, signer *openpgp.Entity, message io.Reader, at time.Time) error {
	deterministic := false
	cfg := &packet.Config{DefaultHash: crypto.SHA256, NonDeterministicSignaturesViaNotation: &deterministic}
	if !at.IsZero() {
		// A signature cannot predate its key: clamp to the newest key
		// creation time, which is as reproducible as at itself.
		if c := signer.PrimaryKey.CreationTime; at.Before(c) {
			at = c
		}
		for _, sk := range signer.Subkeys {
			if sk.PublicKey != nil && at.Before(sk.PublicKey.CreationTime) {
				at = sk.PublicKey.CreationTime
			}
		}
		cfg.Time = func() time.Time { return at }
	}
	if err := openpgp.DetachSign(w, signer, message, cfg); err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	return nil
}

// Signer describes the key that made a good signature.
type Signer struct {
	KeyID       string `json:"key_id"`
	Fingerprint string `json:"fingerprint"`
	Identity    string `json:"identity,omitempty"`
}

// String names the key for people, its fingerprint in groups of four.
func (s Signer) String() string {
	if s.Identity != "" {
		return fmt.Sprintf("%s (key %s, fingerprint %s)", s.Identity, s.KeyID, GroupFingerprint(s.Fingerprint))
	}
	return fmt.Sprintf("key %s (fingerprint %s)", s.KeyID, GroupFingerprint(s.Fingerprint))
}

// CheckDetached checks a detached signature (binary or armored) over
// message against keyring and returns the signer. The key is judged as of the
// signature's creation time (see CheckSignature). Every failure is one of the
// sentinel errors, wrapped with what the signature says about its issuer.
func CheckDetached(keyring openpgp.EntityList, message io.Reader, sig []byte) (Signer, error) {
	c, err := CheckSignature(keyring, message, sig)
	return c.Signer, err
}

func classify(err error, issuer string) error {
	var sigErr pgperrors.SignatureError
	var structErr pgperrors.StructuralError
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return fmt.Errorf("%w: the signature names %s", ErrUnknownSigner, issuer)
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return fmt.Errorf("%w: %s", ErrKeyRevoked, issuer)
	case errors.Is(err, pgperrors.ErrKeyExpired), errors.Is(err, pgperrors.ErrSignatureExpired):
		return fmt.Errorf("%w: %s", ErrKeyExpired, issuer)
	case errors.As(err, &sigErr), errors.As(err, &structErr):
		return fmt.Errorf("%w by %s: %v", ErrBadSignature, issuer, err)
	default:
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
}

// describeIssuer reads the issuer key ID and fingerprint out of a signature
// packet, without checking anything, for error messages.
func describeIssuer(sig []byte) string {
	var r io.Reader = bytes.NewReader(sig)
	if bytes.HasPrefix(bytes.TrimSpace(sig), []byte("-----BEGIN PGP")) {
		block, err := armor.Decode(bytes.NewReader(sig))
		if err != nil {
			return "an unreadable issuer"
		}
		r = block.Body
	}
	p, err := packet.Read(r)
	if err != nil {
		return "an unreadable issuer"
	}
	s, ok := p.(*packet.Signature)
	if !ok {
		return "no issuer (not a signature packet)"
	}
	var parts []string
	if s.IssuerKeyId != nil {
		parts = append(parts, fmt.Sprintf("key ID %016X", *s.IssuerKeyId))
	}
	if len(s.IssuerFingerprint) > 0 {
		parts = append(parts, "fingerprint "+GroupFingerprint(fmt.Sprintf("%X", s.IssuerFingerprint)))
	}
	if len(parts) == 0 {
		return "an unnamed issuer"
	}
	return strings.Join(parts, ", ")
}

// GroupFingerprint writes a fingerprint (as Fingerprint or
// ParseFingerprint give it) the way people compare them, in groups of four
// hex digits, with two spaces at the middle of a 40-digit v4 fingerprint as
// 'gpg --fingerprint' prints it: "5A3F 9C21 ... 77B0  1D4E ... 0A9C".
// Anything that is not 40 or 64 hex digits is returned as it is.
// ParseFingerprint reads every form it writes back.
func GroupFingerprint(fpr string) string {
	if len(fpr) != 40 && len(fpr) != 64 {
		return fpr
	}
	for _, r := range fpr {
		if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'F' || r >= 'a' && r <= 'f') {
			return fpr
		}
	}
	var b strings.Builder
	for i := 0; i < len(fpr); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
			if len(fpr) == 40 && i == 20 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(fpr[i : i+4])
	}
	return b.String()
}

// ParseFingerprint reads a key fingerprint as people write it — hex in
// either case, with spaces or colons between groups as 'gpg --fingerprint'
// prints it — and returns it as Fingerprint does: upper-case hex, 40
// digits (a v4 key) or 64 (v5 and v6). A key ID (8 or 16 digits) is
// refused: anyone can make a key with a given key ID.
func ParseFingerprint(s string) (string, error) {
	if len(s) > 256 {
		return "", errors.New("not a key fingerprint (too long)")
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ' || r == ':' || r == '\t' || r == '\u00a0' || r == '\n' || r == '\r':
		case r >= '0' && r <= '9' || r >= 'A' && r <= 'F':
			b.WriteRune(r)
		case r >= 'a' && r <= 'f':
			b.WriteRune(r - 'a' + 'A')
		default:
			return "", fmt.Errorf("%q is not a key fingerprint (hex digits, optionally grouped with spaces)", s)
		}
	}
	switch n := b.Len(); n {
	case 40, 64:
		return b.String(), nil
	case 8, 16:
		return "", fmt.Errorf("%q is a key ID, not a fingerprint: anyone can make a key with a given ID\nhint: give the whole fingerprint ('gpg --fingerprint', or what airgap verify shows)", s)
	default:
		return "", fmt.Errorf("%q is not a key fingerprint (%d hex digits; a fingerprint has 40, or 64 for newer keys)", s, n)
	}
}
