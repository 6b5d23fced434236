package main

// ca: prints the appliance's built-in CA for the clients to trust. Its
// flags, its help text and the call into package server.

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/server/certs"
)

type caCmd struct{ storeD string }

func (c *caCmd) synopsis() string {
	return "print the local CA certificate (PEM) and its SHA-256 fingerprint"
}

func (c *caCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("ca", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory (required)")
	return fs
}

func (*caCmd) help() verbHelp {
	return verbHelp{
		usage:    "--store DIR",
		about:    "Prints the built-in CA certificate (PEM) on stdout and its SHA-256 fingerprint on stderr,\nfor the clients to trust.",
		examples: []string{"airgap ca --store /srv/airgap > airgap-ca.pem"},
	}
}

func (c *caCmd) run(args []string) error {
	if err := checkUsage("ca", args, nil, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	if _, err := os.Stat(c.storeD); err != nil {
		return fmt.Errorf("%w\nhint: give the store 'airgap serve' uses; 'airgap import --keyring KEYRING --store DIR BUNDLE' creates one", err)
	}
	ca, err := certs.LoadOrCreateCA(store.TLSDir(c.storeD))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "SHA-256 fingerprint: %s\n", certs.CAFingerprint(ca.Cert))
	os.Stdout.Write(ca.PEM)
	return nil
}
