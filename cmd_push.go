package main

// push: the store into an OCI registry. Its flags, its help text and the
// call into dist/oci, which does the work.

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/dist/oci"
)

type pushCmd struct {
	storeD, to, username string
	image                string
	jobs                 int
	passwordStdin, json  bool
}

func (c *pushCmd) synopsis() string {
	return "publish the store's providers and modules to an OCI registry in OpenTofu's layout"
}

func (c *pushCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("push", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "the store to publish: a directory, or s3://BUCKET/PREFIX?… (required)")
	fs.StringVar(&c.to, "to", "", "REGISTRY[/PREFIX], e.g. registry.site.example/airgap (required); with --image REGISTRY/REPOSITORY[:TAG]")
	fs.StringVar(&c.image, "image", "", "push this OCI archive (the image 'make image' writes) instead of a store")
	fs.IntVar(&c.jobs, "jobs", 4, "tags pushed in parallel")
	fs.StringVar(&c.username, "username", "", "registry user (password from "+oci.PasswordEnv+" or --password-stdin); default: Docker's config")
	fs.BoolVar(&c.passwordStdin, "password-stdin", false, "read the password for --username from stdin")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	return fs
}

func (*pushCmd) help() verbHelp {
	return verbHelp{
		usage: "(--store STORE --to REGISTRY[/PREFIX] | --image ARCHIVE --to REGISTRY/REPOSITORY[:TAG]) [--username USER (--password-stdin | $AIRGAP_REGISTRY_PASSWORD)]",
		about: "Publishes the store's providers and modules into an existing OCI registry in OpenTofu's\nlayout (oci_mirror, oci:// modules); idempotent: what is there already is skipped.",
		env: []string{"AIRGAP_REGISTRY_PASSWORD  password for --username (or use --password-stdin)",
			"DOCKER_CONFIG  where Docker's config.json with registry credentials lives (default ~/.docker)",
			"SSL_CERT_FILE  CA bundle used to reach the registry (Linux)"},
		examples: []string{"airgap push --store /srv/airgap --to registry.site.example/airgap",
			"airgap push --store /srv/airgap --to harbor.site.example/tofu --username robot --password-stdin < pass.txt",
			"airgap push --image airgap-image.oci.tar --to registry.site.example/airgap/airgap:1.2.3"},
	}
}

func (c *pushCmd) run(args []string) error {
	if c.image != "" && c.storeD != "" {
		return usageError{"give --store or --image, not both\nusage: airgap push " + c.help().usage}
	}
	store := flagVal{"store", c.storeD}
	if c.image != "" {
		store = flagVal{"image", c.image}
	}
	if err := checkUsage("push", args, nil, store, flagVal{"to", c.to}); err != nil {
		return err
	}
	opt := oci.PushOptions{Target: c.to, Jobs: c.jobs, Username: c.username}
	if c.username != "" {
		p, err := oci.Password(c.passwordStdin, os.Stdin)
		if err != nil {
			return err
		}
		opt.Password = p
	}
	intr := catchInterrupt()
	defer intr.Stop()
	if c.image != "" {
		res, err := oci.PushImage(intr.ctx, c.image, c.to, opt)
		if err != nil {
			return intr.Err(err, "run the same command again; what was pushed is skipped")
		}
		if c.json {
			return printJSON(res)
		}
		fmt.Printf("pushed %s:%s@%s\n", res.Repository, res.Tag, res.Digest)
		return nil
	}
	_, st, cleanup, err := openReadStore(c.storeD)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := oci.PushOpenStore(intr.ctx, st, opt, c.json, os.Stdout)
	if err != nil {
		return intr.Err(err, "run the same command again; what was pushed is skipped")
	}
	if c.json {
		return printJSON(res)
	}
	return nil
}
