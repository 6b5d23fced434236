package main

// ca: prints the appliance's built-in CA for the clients to trust. Its
// flags, its help text and the call into package server.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/server/certs"
)

type caCmd struct{ storeD string }

func (c *caCmd) synopsis() string {
	return "print the local CA certificate (PEM) and its SHA-256 fingerprint"
}

func (c *caCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("ca", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory, or s3://BUCKET/PREFIX?… (the replicas' shared CA) (required)")
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
	if objstore.IsObject(c.storeD) {
		return c.runObject()
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

// runObject prints the local CA the replicas of a store in object storage
// share (the bucket's objstore.SharedCAName), checked as serve checks it.
func (c *caCmd) runObject() error {
	ctx := context.Background()
	cl, err := openObjectStore(ctx, c.storeD)
	if err != nil {
		return err
	}
	data, _, err := cl.ReadSmall(ctx, objstore.SharedCAName, 64<<10)
	if errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("store %s has no local CA yet\nhint: the first 'airgap serve --store %s' (with the local CA, the default) creates it", c.storeD, c.storeD)
	}
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "airgap-ca-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := certs.InstallCA(tmp, data); err != nil {
		return err
	}
	ca, err := certs.LoadOrCreateCA(tmp)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "SHA-256 fingerprint: %s\n", certs.CAFingerprint(ca.Cert))
	os.Stdout.Write(ca.PEM)
	return nil
}
