package main

// keys: signing keys (generate, as keygen) and the publisher keys a store
// trusts (retire, revoke). Its flags, its help text and the calls into
// package verify and bundle/store.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

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

func (*keysCmd) help() verbHelp {
	return verbHelp{
		usage: "generate --out PREFIX | retire --store DIR NAMESPACE FINGERPRINT | revoke --store DIR --keyring REVOCATION.asc",
		about: "generate: a signing key, as keygen (a site key, or a transfer station's key for 'airgap approve').\n" +
			"retire: the store's publisher key for a namespace signs nothing new there from now on (what\nit serves signed by the key stays); recorded in the store's history.\n" +
			"revoke: the store remembers a key's revocation (the key as 'gpg --export' writes it revoked):\n" +
			"the key signs nothing new here (a site, station or chain-hop key: no bundle, approval or hop; a\npublisher key: nothing the store does not already serve signed before the revocation), even\nwhen a later copy of the key has the revocation stripped. Imports remember revocations their\nbundles carry.",
		env: []string{"AIRGAP_PASSPHRASE  generate: passphrase for the private key when there is no terminal"},
		examples: []string{"airgap keys generate --out keys/station --name \"Transfer station 1 <station1@site.example>\"",
			"airgap keys retire --store /srv/airgap registry.terraform.io/hashicorp '3436 5D94 72D7 468F …' --reason 'replaced in 2021'",
			"airgap keys revoke --store /srv/airgap --keyring old-publisher-revoked.asc"},
	}
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
	var res *store.KeyChangeResult
	err = c.inStore("retire", func(root string) (err error) {
		res, err = store.RetireKey(root, ns, fp, c.reason, time.Now())
		return err
	})
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
	var res *store.KeyChangeResult
	err = c.inStore("revoke", func(root string) (err error) {
		res, err = store.RecordRevocations(root, rs, time.Now())
		return err
	})
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
	fmt.Println("a revoked key signs nothing new here — no bundle, approval, chain hop or provider signature the store does not already serve — whatever a later copy of the key says")
	return nil
}

// inStore runs fn on the store: a directory as it is, or a store in
// object storage staged into a scratch directory, its changed index
// written back under the import lease (objstore.UpdateIndex).
func (c *keysCmd) inStore(what string, fn func(root string) error) error {
	if !objstore.IsObject(c.storeD) {
		return fn(c.storeD)
	}
	ctx := context.Background()
	cl, err := openObjectStore(ctx, c.storeD)
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "airgap-keys-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	host, _ := os.Hostname()
	return objstore.UpdateIndex(ctx, cl, scratch, fmt.Sprintf("airgap keys %s on %s (pid %d)", what, host, os.Getpid()), fn)
}
