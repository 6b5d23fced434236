package main

// split: a bundle into signed volumes. Its flags, its help text and the
// call into package bundle.

import (
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/verify"
)

type splitCmd struct {
	size    string
	signKey string
	asJSON  bool
}

func (c *splitCmd) synopsis() string {
	return "split an existing bundle into signed volumes (BUNDLE.000 index, BUNDLE.001…)"
}

func (c *splitCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("split", pflag.ContinueOnError)
	fs.StringVar(&c.size, "size", "fat32", "largest part: e.g. 4GiB, 700MB, or fat32, dvd, dvd-dl, bd, cd")
	fs.StringVar(&c.signKey, "sign-key", "", "site private key that signs the parts index (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print the signed parts index as JSON")
	return fs
}

func (*splitCmd) help() verbHelp {
	return verbHelp{
		usage: "--size SIZE --sign-key KEY BUNDLE",
		about: "Splits a bundle into volumes for media with a size limit: BUNDLE.000 (the signed index)\nand BUNDLE.001, .002, …; the bundle itself is kept.",
		env: []string{"AIRGAP_PASSPHRASE  passphrase of --sign-key when there is no terminal",
			"SOURCE_DATE_EPOCH  timestamp of the index"},
		examples: []string{"airgap split --size dvd --sign-key keys/site.key.asc site.bundle",
			"airgap split --size 700MB --sign-key keys/site.key.asc --json site.bundle"},
	}
}

func (c *splitCmd) run(args []string) error {
	if err := checkUsage("split", args, []string{"BUNDLE"}, flagVal{"sign-key", c.signKey}); err != nil {
		return err
	}
	size, err := bundle.ParseSize(c.size)
	if err != nil {
		return usageError{err.Error()}
	}
	fi, err := os.Stat(args[0])
	if err != nil {
		return err
	}
	at, err := bundle.SourceDate()
	if err != nil {
		return err
	}
	key, err := verify.ReadSigningKeyFile(c.signKey)
	if err != nil {
		return err
	}
	var ix *bundle.PartsIndex
	err = progress.Stream(os.Stderr, "split "+filepath.Base(args[0]), fi.Size(), func(n *progress.Counter) (err error) {
		ix, err = bundle.SplitFileCounting(args[0], size, key, at, n)
		return err
	})
	if err != nil {
		return err
	}
	if c.asJSON {
		return printJSON(ix)
	}
	ix.WriteText(os.Stdout, args[0])
	return nil
}
