package main

// inventory: what a store serves, its history and its downloads. Its
// flags, its help text and the calls into bundle/store.

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/store"
)

type inventoryCmd struct {
	storeD string
	sbom   string
	asJSON bool
	usage  bool
}

func (c *inventoryCmd) synopsis() string {
	return "list what a store serves and the bundles imported into it"
}

func (c *inventoryCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("inventory", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (usable as 'airgap export --have')")
	fs.StringVar(&c.sbom, "sbom", "", "also write the SBOM of everything the store serves (CycloneDX 1.6 JSON) to FILE")
	fs.BoolVar(&c.usage, "usage", false, "list how often each version was downloaded through 'airgap serve', and when last (with --json: that as JSON)")
	return fs
}

func (*inventoryCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR [--json] [--sbom FILE] [--usage]",
		about: "Lists the provider and module versions a store serves (with their gate results and reports)\nand the bundles imported into it; --json is what 'airgap export --have' reads to make a\ndelta; --sbom writes a CycloneDX SBOM of everything the store serves; --usage lists instead\nhow often each version (and platform) was downloaded through 'airgap serve', and when last.",
		examples: []string{"airgap inventory --store /srv/airgap", "airgap inventory --store /srv/airgap --json > have.json",
			"airgap inventory --store /srv/airgap --sbom store.cdx.json",
			"airgap inventory --store /srv/airgap --usage --json"},
	}
}

func (c *inventoryCmd) run(args []string) error {
	if err := checkUsage("inventory", args, nil, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	if c.usage {
		if c.sbom != "" {
			return usageError{"--usage and --sbom: give one of them"}
		}
		rep, err := store.LoadUsageReport(c.storeD)
		if err != nil {
			return err
		}
		if c.asJSON {
			return printJSON(rep)
		}
		rep.WriteText(os.Stdout)
		return nil
	}
	inv, err := store.LoadInventory(c.storeD)
	if err != nil {
		return err
	}
	if c.sbom != "" {
		b, err := store.SBOM(c.storeD, &inv.Index, "airgap "+Version)
		if err != nil {
			return fmt.Errorf("--sbom: %w", err)
		}
		if err := bundle.CreateAtomic(c.sbom, func(f *os.File) error { _, err := f.Write(b); return err }); err != nil {
			return fmt.Errorf("--sbom: %w", err)
		}
		fmt.Fprintf(os.Stderr, "wrote the store's SBOM (CycloneDX 1.6) to %s\n", c.sbom)
	}
	if c.asJSON {
		if inv.PolicyErr != nil {
			// The inventory carries the policy verify forecasts with:
			// one without it would forecast a different import.
			return fmt.Errorf("the store's import policy: %w", inv.PolicyErr)
		}
		return printJSON(inv)
	}
	inv.WriteText(os.Stdout, c.storeD)
	return nil
}
