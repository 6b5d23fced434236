package main

// push: the store into an OCI registry. Its flags, its help text and the
// call into dist/oci, which does the work.

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/dist/oci"
)

type pushCmd struct {
	storeD, to, username string
	jobs                 int
	passwordStdin, json  bool
}

func (c *pushCmd) synopsis() string {
	return "publish the store's providers and modules to an OCI registry in OpenTofu's layout"
}

func (c *pushCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("push", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "the store to publish (required)")
	fs.StringVar(&c.to, "to", "", "REGISTRY[/PREFIX], e.g. registry.site.example/airgap (required)")
	fs.IntVar(&c.jobs, "jobs", 4, "tags pushed in parallel")
	fs.StringVar(&c.username, "username", "", "registry user (password from "+oci.PasswordEnv+" or --password-stdin); default: Docker's config")
	fs.BoolVar(&c.passwordStdin, "password-stdin", false, "read the password for --username from stdin")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	return fs
}

func (*pushCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR --to REGISTRY[/PREFIX] [--username USER (--password-stdin | $AIRGAP_REGISTRY_PASSWORD)]",
		about: "Publishes the store's providers and modules into an existing OCI registry in OpenTofu's\nlayout (oci_mirror, oci:// modules); idempotent: what is there already is skipped.",
		env: []string{"AIRGAP_REGISTRY_PASSWORD  password for --username (or use --password-stdin)",
			"DOCKER_CONFIG  where Docker's config.json with registry credentials lives (default ~/.docker)",
			"SSL_CERT_FILE  CA bundle used to reach the registry (Linux)"},
		examples: []string{"airgap push --store /srv/airgap --to registry.site.example/airgap",
			"airgap push --store /srv/airgap --to harbor.site.example/tofu --username robot --password-stdin < pass.txt"},
	}
}

func (c *pushCmd) run(args []string) error {
	if err := checkUsage("push", args, nil, flagVal{"store", c.storeD}, flagVal{"to", c.to}); err != nil {
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
	res, err := oci.PushStore(intr.ctx, c.storeD, opt, c.json, os.Stdout)
	if err != nil {
		return intr.Err(err, "run the same command again; what was pushed is skipped")
	}
	if c.json {
		return printJSON(res)
	}
	return nil
}
