package main

// export --from-store: the offline side exports what a store holds for the
// next network (bundle/store's carry.go, dist/export's fromstore.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

// fetchOnlyFlags mean nothing to an export from a store: nothing is
// fetched, no gate runs and nothing is newly approved.
var fetchOnlyFlags = []string{"dry-run", "jobs", "cache", "max-package-size", "max-module-size", "max-git-size",
	"accept-new-publisher-key", "no-vendor", "allow-unvendored", "provider-mirror", "trust-mirror-hashes", "var", "var-file",
	"gate-reports", "gate-jobs", "allow-empty", "max-docs-size", "no-docs", "allow-download-host"}

// storePlan is an export from a store's checked command line.
type storePlan struct {
	req       *export.Request // nil: everything, or args
	comp      bundle.Compression
	splitSize int64
	modTime   time.Time
	delta     *export.DeltaBase
}

// checkFromStore validates the command line before the store is touched.
func (c *exportCmd) checkFromStore(args []string) (*storePlan, error) {
	for _, f := range fetchOnlyFlags {
		if c.fs != nil && c.fs.Changed(f) {
			return nil, usageError{fmt.Sprintf("--%s has no meaning with --from-store: an export from a store fetches nothing, runs no gate and approves nothing new (it carries what the store holds)", f)}
		}
	}
	switch {
	case c.signKey == "" || c.out == "":
		return nil, checkUsage("export", nil, nil, flagVal{"sign-key", c.signKey}, flagVal{"out", c.out})
	case c.manifest != "" && c.from != "":
		return nil, usageError{"give at most one of --manifest FILE or --from DIR with --from-store (or neither, for the whole store)"}
	case len(args) > 0 && (c.manifest != "" || c.from != ""):
		return nil, usageError{"give addresses or --manifest or --from, not several (addresses: ADDRESS or ADDRESS@VERSION, e.g. hashicorp/aws@5.61.0)"}
	case c.since != "" && c.have != "":
		return nil, usageError{"give at most one of --since and --have"}
	}
	if fi, err := os.Stat(filepath.Dir(c.out)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--out %s: the directory %s does not exist\nhint: create it first; nothing was written", c.out, filepath.Dir(c.out))
	}
	if abs, err := filepath.Abs(c.out); err == nil {
		if st, err := filepath.Abs(c.fromStore); err == nil && strings.HasPrefix(abs, st+string(filepath.Separator)) {
			return nil, usageError{fmt.Sprintf("--out %s is inside the store %s: write the bundle elsewhere", c.out, c.fromStore)}
		}
	}
	p := &storePlan{}
	var err error
	if p.comp, err = bundle.ParseCompression(c.compression); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.split != "" {
		if p.splitSize, err = bundle.ParseSize(c.split); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	if err := export.CheckPlatforms(c.platforms); err != nil {
		return nil, usageError{err.Error()}
	}
	if p.modTime, err = bundle.SourceDate(); err != nil {
		return nil, err
	}
	if c.manifest != "" || c.from != "" {
		if p.req, err = export.LoadRequest(c.manifest, c.from, c.platforms, false, tfconfig.Inputs{Env: os.Environ()}); err != nil {
			return nil, err
		}
		p.req.NoDeps = c.noDeps
	} else if c.noDeps {
		return nil, usageError{"--no-deps is for a manifest or project (addresses and the whole store carry what they name)"}
	} else if len(c.platforms) > 0 {
		return nil, usageError{"--platform chooses among a manifest's or project's providers; with addresses or the whole store, every platform the store has is carried"}
	}
	return p, nil
}

// runFromStore exports from the store at c.fromStore: lock it, select,
// plan (manifest, withdrawals, approvals, chain), hash every blob, write.
func (c *exportCmd) runFromStore(args []string) error {
	p, err := c.checkFromStore(args)
	if err != nil {
		return err
	}
	key, err := verify.ReadSigningKeyFile(c.signKey)
	if err != nil {
		return err
	}
	if c.since != "" || c.have != "" {
		if p.delta, err = export.ReadDeltaBase(c.since, c.have, key); err != nil {
			return err
		}
	}
	intr := catchInterrupt()
	defer intr.Stop()
	carry, err := store.OpenCarry(c.fromStore, c.wait)
	if err != nil {
		return err
	}
	defer carry.Close()
	sel, all, notes, err := export.SelectFromStore(intr.ctx, c.fromStore, &carry.Index.Catalog, p.req, args)
	if err != nil {
		return err
	}
	if len(sel.Providers)+len(sel.Modules) == 0 {
		return fmt.Errorf("%w: the store %s serves nothing\nhint: import a bundle into it first", export.ErrEmpty, c.fromStore)
	}
	var withdraw, reinstate []dist.Withdrawal
	if p.req != nil {
		withdraw, reinstate = p.req.Withdraw, p.req.Reinstate
	}
	plan, err := carry.Plan(sel, all, withdraw, reinstate)
	if err != nil {
		return err
	}
	var checked, written atomic.Int64
	_, total := plan.Manifest.Totals()
	line := progress.Start(os.Stderr, func(el time.Duration) string {
		if written.Load() > 0 {
			return progress.Bytes("write "+filepath.Base(c.out), total, written.Load)(el)
		}
		return progress.Bytes("check the store's blobs", total, checked.Load)(el)
	})
	sum, ix, err := export.WriteFromStore(intr.ctx, carry, plan, export.StoreWriteOptions{
		Out: c.out, Key: key, Tool: "airgap " + Version, Compression: p.comp, ModTime: p.modTime,
		Delta: p.delta, SplitSize: p.splitSize, Log: line.Logf,
		Checked: func(n int64) { checked.Add(n) }, Written: func(n int64) { written.Add(n) },
	})
	line.Stop()
	if err != nil {
		return intr.Err(err, "run the same command again")
	}
	sum.Notes = append(sum.Notes, notes...)
	if c.asJSON {
		return printJSON(sum)
	}
	if ix != nil {
		ix.WriteText(os.Stdout, c.out)
	}
	fmt.Print(storeSummaryText(sum))
	return nil
}

// storeSummaryText is the export's result for people.
func storeSummaryText(s *export.StoreSummary) string {
	q := dist.Printable
	var b strings.Builder
	kind := "full bundle"
	if s.Delta != "" {
		kind = fmt.Sprintf("delta against %s (%d blobs omitted)", q(s.Delta), s.Omitted)
	}
	out := s.Out
	if s.Parts > 0 {
		out = fmt.Sprintf("%s.000-%03d (%d parts)", s.Out, s.Parts, s.Parts)
	}
	fmt.Fprintf(&b, "exported from the store %s: %s\n  bundle:    %s, %s\n  content:   %d provider versions (%d packages), %d module versions\n",
		q(s.Store), q(out), s.Bundle, kind, s.ProviderVersions, s.Packages, s.ModuleVersions)
	fmt.Fprintf(&b, "  blobs:     %d, %s, every one hashed again from the store before anything was written (%.1f s)\n", s.Blobs, progress.Size(s.BlobBytes), float64(s.CheckedMillis)/1000)
	fmt.Fprintf(&b, "  chain:     %d hop(s) of custody carried, each with its signed manifest", s.Hops)
	if s.RecordedHops > 0 {
		fmt.Fprintf(&b, "; %d recorded only (no manifest kept)", s.RecordedHops)
	}
	b.WriteString("\n")
	if s.Withdrawals > 0 || s.PublisherKeys > 0 {
		fmt.Fprintf(&b, "  carries:   %d withdrawn version(s), %d publisher key approval(s) of this store\n", s.Withdrawals, s.PublisherKeys)
	}
	if s.SBOM != "" {
		fmt.Fprintf(&b, "  sbom:      %s\n", s.SBOM)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "  note: %s\n", q(n))
	}
	fmt.Fprintf(&b, "  in %.1f s\n", float64(s.Millis)/1000)
	return b.String()
}
