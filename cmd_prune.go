package main

// prune: removes versions from a store under a policy. Its flags, its
// help text and the call into bundle/store, which does the work.

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
)

type pruneCmd struct {
	storeD    string
	keep      int
	olderThan string
	unusedFor string
	dryRun    bool
	wait      bool
	asJSON    bool
}

func (c *pruneCmd) synopsis() string {
	return "remove provider and module versions from a store under a policy"
}

func (c *pruneCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("prune", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory, or s3://BUCKET/PREFIX?… (required)")
	fs.IntVar(&c.keep, "keep", 0, "keep the newest N versions of each provider and module")
	fs.StringVar(&c.olderThan, "older-than", "", "remove versions last imported before this long ago (30d, 720h)")
	fs.StringVar(&c.unusedFor, "unused-for", "", "remove versions neither imported nor downloaded through airgap serve for this long (90d, 2160h)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "only print what would be removed")
	fs.BoolVar(&c.wait, "wait", false, "wait for a running import to finish instead of failing")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return fs
}

func (*pruneCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR (--keep N | --older-than DURATION | --unused-for DURATION | ADDRESS@VERSION...) [--dry-run]",
		about: "Removes provider and module versions from the catalog (newest N per address kept, last\nimported before a time, neither imported nor downloaded through 'airgap serve' for a time,\nor named) and deletes the blobs only they used; recorded in the history.",
		examples: []string{"airgap prune --store /srv/airgap --keep 3 --dry-run",
			"airgap prune --store /srv/airgap --older-than 180d",
			"airgap prune --store /srv/airgap --unused-for 90d --dry-run",
			"airgap prune --store /srv/airgap hashicorp/aws@5.61.0 example/vpc/aws@1.0.0"},
	}
}

func (c *pruneCmd) run(args []string) error {
	const usage = "give exactly one of --keep N, --older-than DURATION, --unused-for DURATION or ADDRESS@VERSION arguments\nusage: airgap prune --store DIR (--keep N | --older-than DURATION | --unused-for DURATION | ADDRESS@VERSION...) [--dry-run]"
	if c.storeD == "" {
		return checkUsage("prune", nil, nil, flagVal{"store", c.storeD})
	}
	opt := store.PruneOptions{Keep: c.keep, Versions: args, DryRun: c.dryRun, Wait: c.wait}
	if c.olderThan != "" {
		d, err := store.ParseAge(c.olderThan)
		if err != nil {
			return usageError{err.Error()}
		}
		opt.OlderThan, opt.ByAge = d, true
	}
	if c.unusedFor != "" {
		d, err := store.ParseAge(c.unusedFor)
		if err != nil || d <= 0 {
			return usageError{fmt.Sprintf("--unused-for %q: want a number of days (90d) or a duration (2160h), more than zero", c.unusedFor)}
		}
		opt.UnusedFor, opt.ByUse = d, true
	}
	if n := btoi(c.keep != 0) + btoi(c.olderThan != "") + btoi(c.unusedFor != "") + btoi(len(args) > 0); n != 1 || c.keep < 0 {
		return usageError{usage}
	}
	var res *store.PruneResult
	var err error
	if objstore.IsObject(c.storeD) {
		res, err = c.runObject(opt)
	} else {
		res, err = store.Prune(c.storeD, opt)
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runObject is prune on a store in object storage (objstore.Prune):
// under the import lease, so a prune and an import never run at once.
func (c *pruneCmd) runObject(opt store.PruneOptions) (*store.PruneResult, error) {
	ctx := context.Background()
	cl, err := openObjectStore(ctx, c.storeD)
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "airgap-prune-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	host, _ := os.Hostname()
	return objstore.Prune(ctx, cl, scratch, fmt.Sprintf("airgap prune on %s (pid %d)", host, os.Getpid()), opt)
}
