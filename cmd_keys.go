package main

// keygen and keys: the site's and the stations' signing keys, and the
// publisher keys a store trusts (retire, revoke). Each verb is one
// struct, its flag set and the calls into package verify and bundle/store.

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// --- keygen ---

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

// --- keys ---

type keysCmd struct {
	gen     keygenCmd
	storeD  string
	keyring string
	reason  string
}

func (c *keysCmd) synopsis() string {
	return "generate a signing key; retire or revoke a publisher key in a store"
}

func (c *keysCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("keys", pflag.ContinueOnError)
	c.gen.addFlags(fs)
	fs.Lookup("out").Usage = "generate: path prefix of the key files"
	fs.StringVar(&c.storeD, "store", "", "retire, revoke: the store")
	fs.StringVar(&c.keyring, "keyring", "", "revoke: the revoked key(s) with their revocation signatures (armored, as 'gpg --export --armor' writes a revoked key)")
	fs.StringVar(&c.reason, "reason", "", "retire: why, kept in the store's history")
	return fs
}

const keysUsage = `usage: airgap keys generate --out PREFIX [--name "NAME <EMAIL>"] [--bits N] [--no-passphrase]
       airgap keys retire --store DIR [--reason TEXT] NAMESPACE FINGERPRINT
       airgap keys revoke --store DIR --keyring REVOCATION.asc`

func (c *keysCmd) run(args []string) error {
	if len(args) == 0 {
		return usageError{keysUsage}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "generate":
		if c.gen.out == "" || len(args) != 0 {
			return usageError{"generate: missing --out PREFIX\n" + keysUsage}
		}
		return c.gen.generate()
	case "retire":
		if c.storeD == "" || len(args) < 2 {
			return usageError{"retire: give --store DIR, the namespace and the key's fingerprint\n" + keysUsage}
		}
		return c.retire(args[0], strings.Join(args[1:], " "))
	case "revoke":
		if c.storeD == "" || c.keyring == "" || len(args) != 0 {
			return usageError{"revoke: give --store DIR and --keyring REVOCATION.asc\n" + keysUsage}
		}
		return c.revoke()
	}
	if s := dist.Suggest(sub, []string{"generate", "retire", "revoke"}); s != "" {
		return usageError{fmt.Sprintf("unknown keys command %q; did you mean %q?\n%s", sub, s, keysUsage)}
	}
	return usageError{fmt.Sprintf("unknown keys command %q\n%s", sub, keysUsage)}
}

// retire retires a publisher key for a namespace of the store.
func (c *keysCmd) retire(ns, fpArg string) error {
	fp, err := verify.ParseFingerprint(fpArg)
	if err != nil {
		return usageError{"retire: " + err.Error() + "\n" + keysUsage}
	}
	if len(c.reason) > 500 || dist.Printable(c.reason) != c.reason || strings.ContainsAny(c.reason, "\n\r") {
		return usageError{"--reason: one line of plain text, at most 500 bytes"}
	}
	res, err := store.RetireKey(c.storeD, ns, fp, c.reason, time.Now())
	if err != nil {
		return err
	}
	if !res.Changed {
		fmt.Printf("key %s was already retired for %s; nothing changed\n", verify.GroupFingerprint(fp), dist.Printable(ns))
		return nil
	}
	for _, e := range res.Events {
		fmt.Println(e.String())
	}
	fmt.Println("it signs nothing new for the namespace from now on; what the store serves signed by it stays (recorded in the store's history)")
	return nil
}

// revoke remembers the revocations a key file holds.
func (c *keysCmd) revoke() error {
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	rs := verify.Revocations(kr)
	if len(rs) == 0 {
		return fmt.Errorf("--keyring %s holds no revoked key\nhint: give the key with its revocation signature: import the revocation certificate into gpg, then 'gpg --export --armor FINGERPRINT'", c.keyring)
	}
	res, err := store.RecordRevocations(c.storeD, rs, time.Now())
	if err != nil {
		return err
	}
	if !res.Changed {
		fmt.Println("the store had seen every revocation in the file already; nothing changed")
		return nil
	}
	for _, e := range res.Events {
		fmt.Println(e.String())
	}
	fmt.Println("a revoked key signs nothing new here, and nothing dated at or after its revocation, whatever a later bundle's copy of the key says")
	return nil
}
