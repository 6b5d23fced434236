package main

// gc: deletes the blobs nothing references. Its flags, its help text
// and the call into bundle/store, which does the work.

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
)

type gcCmd struct {
	storeD string
	dryRun bool
	wait   bool
	asJSON bool
}

func (c *gcCmd) synopsis() string {
	return "delete blobs no catalog entry references, and stale temporary files"
}

func (c *gcCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("gc", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory, or s3://BUCKET/PREFIX?… (required)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "only print what would be deleted")
	fs.BoolVar(&c.wait, "wait", false, "wait for a running import or prune to finish instead of failing")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return fs
}

func (*gcCmd) help() verbHelp {
	return verbHelp{
		usage:    "--store DIR [--dry-run]",
		about:    "Deletes blobs no catalog entry references (after a withdrawal or a prune) and temporary\nfiles of interrupted imports; takes the store lock, safe while 'airgap serve' runs.",
		examples: []string{"airgap gc --store /srv/airgap --dry-run", "airgap gc --store /srv/airgap"},
	}
}

func (c *gcCmd) run(args []string) error {
	if err := checkUsage("gc", args, nil, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	var res *store.GCResult
	var err error
	if objstore.IsObject(c.storeD) {
		res, err = c.runObject()
	} else {
		res, err = store.GC(c.storeD, store.GCOptions{DryRun: c.dryRun, Wait: c.wait})
	}
	if err != nil {
		return err
	}
	if c.asJSON {
		return printJSON(res)
	}
	res.WriteText(os.Stdout)
	return nil
}

// runObject is gc on a store in object storage (objstore.GC): under the
// import lease, so a gc and an import never run at once.
func (c *gcCmd) runObject() (*store.GCResult, error) {
	ctx := context.Background()
	cl, err := openObjectStore(ctx, c.storeD)
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "airgap-gc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	host, _ := os.Hostname()
	return objstore.GC(ctx, cl, scratch, fmt.Sprintf("airgap gc on %s (pid %d)", host, os.Getpid()), c.wait, c.dryRun)
}
