package main

// join: a split set back into one bundle file. Its flags, its help text
// and the call into package bundle.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/verify"
)

type joinCmd struct {
	keyring string
	out     string
	asJSON  bool
}

func (c *joinCmd) synopsis() string {
	return "check a split set against its signed index and join it into one bundle file"
}

func (c *joinCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("join", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.out, "out", "", "bundle file to write (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print the result as JSON")
	return fs
}

func (*joinCmd) help() verbHelp {
	return verbHelp{
		usage:    "--keyring FILE --out BUNDLE PART",
		about:    "Checks every part of a split set against its signed index and joins them into one\nbundle file (written atomically; the parts are not changed).",
		examples: []string{"airgap join --keyring site.pub.asc --out site.bundle site.bundle.000"},
	}
}

func (c *joinCmd) run(args []string) error {
	if err := checkUsage("join", args, []string{"PART"}, flagVal{"keyring", c.keyring}, flagVal{"out", c.out}); err != nil {
		return err
	}
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	rc, ix, err := bundle.OpenSet(args[0], kr)
	if err != nil {
		return err
	}
	defer rc.Close()
	err = progress.Stream(os.Stderr, "join "+filepath.Base(c.out), ix.Size, func(n *progress.Counter) error {
		return bundle.CreateAtomic(c.out, func(f *os.File) error { _, err := io.Copy(f, n.Reader(rc)); return err })
	})
	if err != nil {
		return err
	}
	if c.asJSON {
		return printJSON(map[string]any{"ok": true, "out": c.out, "parts": len(ix.Parts), "size_bytes": ix.Size, "sha256": ix.Digest.Hex(), "bundle": ix.Bundle})
	}
	fmt.Printf("joined %d parts into %s (%s, sha256 %s)\n", len(ix.Parts), c.out, progress.Size(ix.Size), ix.Digest.Hex())
	return nil
}
