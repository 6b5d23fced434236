package main

// keygen: the site signing key. One struct, its flag set and the calls into
// package verify.

import (
	"fmt"
	"os"

	"github.com/airgap/airgap/verify"
	"github.com/spf13/pflag"
)

// --- keygen ---

type keygenCmd struct {
	out          string
	name         string
	bits         int
	noPassphrase bool
}

func (c *keygenCmd) synopsis() string {
	return "create a site signing key: PREFIX.key.asc (private, 0600) and PREFIX.pub.asc"
}

func (c *keygenCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("keygen", pflag.ContinueOnError)
	fs.StringVar(&c.out, "out", "", "path prefix of the key files (required)")
	fs.StringVar(&c.name, "name", "", `user ID, e.g. "Site Ops <ops@site>"`)
	fs.IntVar(&c.bits, "bits", verify.DefaultRSABits, "RSA key size (at least 3072)")
	fs.BoolVar(&c.noPassphrase, "no-passphrase", false, "write the private key unprotected (needed when there is no terminal and no "+verify.PassphraseEnv+")")
	return fs
}

func (c *keygenCmd) run(args []string) error {
	if err := checkUsage("keygen", args, nil, flagVal{"out", c.out}); err != nil {
		return err
	}
	if c.bits < 3072 || c.bits > 8192 {
		return usageError{fmt.Sprintf("--bits %d: RSA site keys have 3072 to 8192 bits", c.bits)}
	}
	kf, err := verify.WriteKeyFiles(c.out, verify.KeyOptions{Name: c.name, RSABits: c.bits}, c.noPassphrase)
	if err != nil {
		return err
	}
	fmt.Printf("private key: %s (keep it on the connected side; mode 0600)\npublic key:  %s (give it to the offline site's keyring)\nkey ID:      %s\nfingerprint: %s\n",
		kf.Private, kf.Public, verify.KeyID(kf.Entity), verify.Fingerprint(kf.Entity))
	if kf.Unprotected {
		fmt.Fprintf(os.Stderr, "warning: %s is NOT protected by a passphrase: anyone who copies it can sign bundles your site trusts\n", kf.Private)
	}
	return nil
}
