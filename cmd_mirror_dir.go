package main

// mirror-dir: the store's providers as a filesystem_mirror directory.
// Its flags, its help text and the call into bundle/store, which writes
// it.

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
)

type mirrorDirCmd struct {
	storeD    string
	out       string
	layout    string
	platforms []string
	asJSON    bool
}

func (c *mirrorDirCmd) synopsis() string {
	return "write a filesystem_mirror directory of the store's providers (no server needed)"
}

func (c *mirrorDirCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("mirror-dir", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory, or s3://BUCKET/PREFIX?… (required)")
	fs.StringVar(&c.out, "out", "", "directory to write: new, empty, or one an earlier mirror-dir wrote (required; replaced atomically)")
	fs.StringVar(&c.layout, "layout", "packed", "packed (the zips, hard-linked to the store where possible) or unpacked (each zip extracted)")
	fs.StringSliceVar(&c.platforms, "platform", nil, "os_arch to include (repeatable; default: every platform the store has)")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON")
	return fs
}

func (*mirrorDirCmd) help() verbHelp {
	return verbHelp{
		usage: "--store STORE --out PATH [--layout packed|unpacked] [--platform OS_ARCH]... [ADDRESS[@VERSION]...]",
		about: "Writes the store's providers as a filesystem_mirror directory (terraform providers\nmirror's layout) for hosts with no server, atomically, and prints the provider_installation block.",
		examples: []string{"airgap mirror-dir --store /srv/airgap --out /opt/terraform/mirror --platform linux_amd64",
			"airgap mirror-dir --store /srv/airgap --out ./mirror --layout unpacked hashicorp/aws@5.61.0"},
	}
}

func (c *mirrorDirCmd) run(args []string) error {
	if err := checkUsage("mirror-dir", nil, nil, flagVal{"store", c.storeD}, flagVal{"out", c.out}); err != nil {
		return err
	}
	if c.layout != "packed" && c.layout != "unpacked" {
		return usageError{fmt.Sprintf("--layout %q: want packed or unpacked", c.layout)}
	}
	for _, p := range c.platforms {
		if err := dist.CheckPlatform(p); err != nil {
			return usageError{"--platform: " + err.Error()}
		}
	}
	_, st, cleanup, err := openReadStore(c.storeD)
	if err != nil {
		return err
	}
	defer cleanup()
	res, err := store.MirrorDirStore(st, store.MirrorDirOptions{Out: c.out, Layout: c.layout, Platforms: c.platforms, Providers: args})
	if err != nil {
		return err // with --json, run prints the failure document
	}
	if c.asJSON {
		return printJSON(res)
	}
	fmt.Printf("wrote %s (%s): %d provider versions, %d packages (%d hard-linked, %d copied; %s written)\n",
		dist.Printable(res.Out), res.Layout, len(res.Providers), res.Packages, res.Linked, res.Copied, dist.HumanSize(res.Bytes))
	for _, n := range res.Notes {
		fmt.Printf("note: %s\n", dist.PrintableLines(n))
	}
	fmt.Printf("\n# Terraform/OpenTofu CLI configuration (~/.terraformrc, or TF_CLI_CONFIG_FILE) to install from it:\n%s", res.Config)
	return nil
}
