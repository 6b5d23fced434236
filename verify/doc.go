// Package verify holds airgap's trust primitives: OpenPGP keys, detached
// signatures and streaming digest checks.
//
// It does:
//   - generate site keys (RSA, 3072 bits by default, because Terraform accepts
//     only RSA/DSA keys for provider checksum signatures and the same key may
//     re-sign SHA256SUMS for providers whose registry publishes no key);
//   - read armored keyrings, sign and check detached signatures, and turn every
//     way a check can fail into one of the sentinel errors (ErrBadSignature,
//     ErrKeyExpired, …), with the key ID and fingerprint of the signer where
//     the signature names one;
//   - judge a signature's key as of the signature's creation time, not this
//     machine's clock (CheckSignature): publisher keys expire and are
//     re-published, and offline clocks drift. A signature made while its key
//     was valid stays good after the key expires; one made after it expired
//     is refused, and so is a key with any revocation, whatever its date;
//   - refuse, from their packets alone and before any signature is checked,
//     key documents that would be costly to check: more than 1 MiB, 32 keys
//     or 256 signatures, RSA outside 2048..8192 bits, DSA over 3072/256 bits,
//     ElGamal over 4096. Keys come from registries, bundles
//     and --keyring files alike, so every caller of ReadKeyring (export, and
//     verify/import on the offline side) gets the same bounds;
//   - hash while copying (Digester), so a digest is never computed in a second
//     pass over a file;
//   - write key files (WriteKeyFiles), refusing an unprotected private key
//     unless it was asked for, and read a passphrase from AIRGAP_PASSPHRASE
//     or a terminal.
//
// It does not read bundles, touch the store, or talk to the network: callers
// hand it bytes and readers.
package verify
