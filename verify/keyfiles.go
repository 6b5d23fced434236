package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/term"
)

// PassphraseEnv is the environment variable keygen, export and split read a
// private key's passphrase from when there is no terminal to ask on.
const PassphraseEnv = "AIRGAP_PASSPHRASE"

// KeyFiles is the result of WriteKeyFiles.
type KeyFiles struct {
	Private, Public string
	Entity          *openpgp.Entity
	Unprotected     bool // the private key has no passphrase
}

// WriteKeyFiles creates PREFIX.key.asc (mode 0600) and PREFIX.pub.asc,
// refusing to overwrite either. The passphrase comes from AIRGAP_PASSPHRASE
// or a terminal prompt; without both, it refuses (ErrNoPassphrase) unless
// noPassphrase says an unprotected key is wanted. On error no file is left.
func WriteKeyFiles(prefix string, opt KeyOptions, noPassphrase bool) (kf *KeyFiles, err error) {
	kf = &KeyFiles{Private: prefix + ".key.asc", Public: prefix + ".pub.asc"}
	for _, p := range []string{kf.Private, kf.Public} {
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("%s already exists; refusing to overwrite a key\nhint: choose another --out prefix or move the old key away", p)
		}
	}
	if !noPassphrase {
		if opt.Passphrase, err = Passphrase(true); err != nil {
			return nil, err
		}
		if opt.Passphrase == nil {
			return nil, fmt.Errorf("%w: no terminal to ask on and %s is not set\nhint: set %s, run on a terminal, or pass --no-passphrase for a key anyone who copies the file can use", ErrNoPassphrase, PassphraseEnv, PassphraseEnv)
		}
	}
	kf.Unprotected = len(opt.Passphrase) == 0
	if err := os.MkdirAll(filepath.Dir(kf.Private), 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.Remove(kf.Private)
			os.Remove(kf.Public)
		}
	}()
	priv, err := os.OpenFile(kf.Private, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer priv.Close()
	pub, err := os.OpenFile(kf.Public, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	if kf.Entity, err = GenerateKey(priv, pub, opt); err != nil {
		return nil, err
	}
	for _, f := range []*os.File{priv, pub} {
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	return kf, nil
}

// Passphrase reads AIRGAP_PASSPHRASE, or prompts on a terminal (twice when
// confirm). It returns nil, nil when there is neither; an empty answer at
// the prompt is an empty, non-nil passphrase.
func Passphrase(confirm bool) ([]byte, error) {
	if p, ok := os.LookupEnv(PassphraseEnv); ok {
		return []byte(p), nil
	}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return nil, nil
	}
	fmt.Fprint(os.Stderr, "passphrase for the private key (empty for none): ")
	p, err := term.ReadPassword(fd)
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return nil, err
	}
	if p == nil {
		p = []byte{}
	}
	if !confirm || len(p) == 0 {
		return p, nil
	}
	fmt.Fprint(os.Stderr, "again: ")
	p2, err := term.ReadPassword(fd)
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return nil, err
	}
	if string(p) != string(p2) {
		return nil, errors.New("the passphrases differ")
	}
	return p, nil
}

// ReadSigningKeyFile reads a private key file, asking for its passphrase
// (AIRGAP_PASSPHRASE or a terminal prompt) only if it is encrypted.
func ReadSigningKeyFile(path string) (*openpgp.Entity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := ReadSigningKey(f, func() ([]byte, error) {
		p, err := Passphrase(false)
		if err == nil && len(p) == 0 {
			return nil, fmt.Errorf("the private key is encrypted\nhint: set %s or run on a terminal", PassphraseEnv)
		}
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return e, nil
}
