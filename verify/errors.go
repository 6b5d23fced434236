package verify

import "errors"

// Sentinel errors. Callers wrap them with context; test with errors.Is.
var (
	// ErrUnsigned: there is no signature where one is required.
	ErrUnsigned = errors.New("not signed")
	// ErrUnknownSigner: the signature is by a key that is not in the keyring.
	ErrUnknownSigner = errors.New("signed by a key that is not in the keyring")
	// ErrBadSignature: the signature does not match the signed bytes.
	ErrBadSignature = errors.New("bad signature")
	// ErrKeyExpired: the signing key (or the signature) has expired.
	ErrKeyExpired = errors.New("signing key or signature expired")
	// ErrKeyRevoked: the signing key has been revoked.
	ErrKeyRevoked = errors.New("signing key revoked")
	// ErrDigestMismatch: content does not hash to the digest it should.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrSizeMismatch: content is not as long as it should be.
	ErrSizeMismatch = errors.New("size mismatch")
	// ErrNoKeys: a keyring file held no usable public key.
	ErrNoKeys = errors.New("no public keys")
	// ErrPrivateInKeyring: a keyring file holds a private key (refused: a
	// keyring is for the transfer station and the offline side, where a
	// site's private key must never be).
	ErrPrivateInKeyring = errors.New("the keyring holds a private key")
	// ErrKeyRefused: a key document is outside the limits ReadKeyring
	// accepts (checkKeyPackets): too large, too many keys or signatures, or
	// key parameters too large (or, for RSA, too small) to check safely.
	ErrKeyRefused = errors.New("key refused")
	// ErrNoPassphrase: a private key would be written unprotected without
	// anyone having asked for that.
	ErrNoPassphrase = errors.New("no passphrase for the private key")
)
