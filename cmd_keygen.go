package main

// keygen: the site's signing key. Its flags, its help text and the call
// into package verify ('airgap keys generate' is the same call).

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/verify"
)

type keygenCmd struct {
	out          string
	name         string
	bits         int
	noPassphrase bool
}

func (c *keygenCmd) synopsis() string {
	return "create a signing key: PREFIX.key.asc (private, 0600) and PREFIX.pub.asc (also 'airgap keys generate')"
}

func (c *keygenCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("keygen", pflag.ContinueOnError)
	c.addFlags(fs)
	return fs
}

func (*keygenCmd) help() verbHelp {
	return verbHelp{
		usage: "--out PREFIX [--name \"NAME <EMAIL>\"] [--no-passphrase]",
		about: "Creates the site's OpenPGP signing key (RSA): PREFIX.key.asc stays on the connected\nside and signs bundles; PREFIX.pub.asc goes into the offline side's keyring.",
		env:   []string{"AIRGAP_PASSPHRASE  passphrase for the private key when there is no terminal"},
		examples: []string{"airgap keygen --out keys/site --name \"Site Ops <ops@site.example>\"",
			"AIRGAP_PASSPHRASE=$(cat pass.txt) airgap keygen --out keys/site   # no terminal",
			"airgap keygen --out keys/test --no-passphrase                    # unprotected, for tests"},
	}
}

func (c *keygenCmd) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "path prefix of the key files (required)")
	fs.StringVar(&c.name, "name", "", `user ID, e.g. "Site Ops <ops@site>"`)
	fs.IntVar(&c.bits, "bits", verify.DefaultRSABits, "RSA key size (at least 3072)")
	fs.BoolVar(&c.noPassphrase, "no-passphrase", false, "write the private key unprotected (needed when there is no terminal and no "+verify.PassphraseEnv+")")
}

func (c *keygenCmd) run(args []string) error {
	if err := checkUsage("keygen", args, nil, flagVal{"out", c.out}); err != nil {
		return err
	}
	return c.generate()
}

func (c *keygenCmd) generate() error {
	if c.bits < 3072 || c.bits > 8192 {
		return usageError{fmt.Sprintf("--bits %d: RSA site keys have 3072 to 8192 bits", c.bits)}
	}
	kf, err := verify.WriteKeyFiles(c.out, verify.KeyOptions{Name: c.name, RSABits: c.bits}, c.noPassphrase)
	if err != nil {
		return err
	}
	fmt.Printf("private key: %s (keep it where it signs: the connected side for a site key, the transfer station for a station key; mode 0600)\npublic key:  %s (a site key's goes into the offline side's --keyring; a station key's into the store's station keyring)\nkey ID:      %s\nfingerprint: %s\n",
		kf.Private, kf.Public, verify.KeyID(kf.Entity), verify.GroupFingerprint(verify.Fingerprint(kf.Entity)))
	if kf.Unprotected {
		fmt.Fprintf(os.Stderr, "warning: %s is NOT protected by a passphrase: anyone who copies it can sign what this key vouches for\n", kf.Private)
	}
	return nil
}
