package main

// The verbs that read bundles and stores: verify, import, inventory, split
// and join. Each verb is one struct, its flag set and the calls into the
// packages that do the work.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
	"github.com/spf13/pflag"
)

// --- verify ---

type verifyCmd struct {
	keyring   string
	sbom      string
	asJSON    bool
	against   string
	pins      string
	strict    bool
	approvals []string
}

func (c *verifyCmd) synopsis() string {
	return "check a bundle, show what it brings in and forecast the import (--against), writing nothing"
}

func (c *verifyCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("verify", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.sbom, "sbom", "", "write the bundle's signed SBOM (CycloneDX 1.6 JSON) to FILE once it is verified")
	fs.BoolVar(&c.asJSON, "json", false, "print the review as one JSON document (its schema: docs/transfer-station.md)")
	fs.StringVar(&c.against, "against", "", "the offline store's 'airgap inventory --json': show what the bundle adds and changes, and forecast the import by the store's own rules")
	fs.StringVar(&c.pins, "publisher-pins", "", "HCL file of the publisher keys each namespace may use, as import is given it")
	fs.BoolVar(&c.strict, "strict", false, "exit with status 3 when the bundle verifies but something needs attention")
	fs.StringArrayVar(&c.approvals, "approval", nil, "a station approval of the bundle to count in the forecast (repeatable; BUNDLE.approval beside the bundle is read too)")
	return fs
}

// Exit statuses of verify (and approve) besides 0, 1 and 2: a bundle that
// verified but needs a person's attention (--strict), and one the import
// will refuse (forecast by --against).
const (
	exitAttention = 3
	exitRefuse    = 4
)

func (c *verifyCmd) run(args []string) error {
	check.TightGC()
	if err := checkUsage("verify", args, []string{"BUNDLE"}, flagVal{"keyring", c.keyring}); err != nil {
		return err
	}
	if len(c.approvals) > 0 && c.against == "" {
		return usageError{"--approval: give --against too: an approval is checked against the store's station keyring, which its inventory carries"}
	}
	rep := report.Report{File: args[0]}
	rv := &reviewer{file: args[0], keyring: c.keyring, against: c.against, pins: c.pins, approvals: c.approvals, sbom: c.sbom}
	err := rv.review(&rep, nil)
	rep.Finish(err)
	if c.asJSON {
		printJSON(rep)
		if err != nil {
			return errors.New("verification failed")
		}
	} else if err != nil {
		return err
	} else {
		fmt.Print(rep.Text())
	}
	return verdictExit(&rep, c.strict)
}

// verdictExit is the exit status of a verified review: 4 when the
// forecast says the import will refuse (with or without --strict), 3 when
// something needs attention and strict, else 0.
func verdictExit(rep *report.Report, strict bool) error {
	if rep.RefusesImport() {
		return exitError{exitRefuse, fmt.Sprintf("verified, but the import will refuse it (the forecast lists why); exit status %d", exitRefuse)}
	}
	if strict && rep.Status == report.StatusNeedsAttention {
		return exitError{exitAttention, fmt.Sprintf("verified, but %d item(s) need attention (listed first in the review); --strict makes that exit status %d", len(rep.Attention), exitAttention)}
	}
	return nil
}

// reviewer is what verify and approve share: check a bundle, read what
// the offline side has, forecast the import.
type reviewer struct {
	file, keyring, against, pins, sbom string
	approvals                          []string
	extra                              store.Extra
	kr                                 openpgp.EntityList
	inv                                *store.Against
}

// review checks the bundle (report.Check) and adds the offline side's view
// (store.Review) from --against, --publisher-pins and the approvals that
// come with the bundle, which are read first; pending, if set, is an
// approval being made of the checked bundle. It writes the checked SBOM
// for --sbom.
func (rv *reviewer) review(rep *report.Report, pending func(*report.Report) (*approval.Statement, error)) error {
	opt := store.ReviewOptions{Now: time.Now(), Extra: rv.extra}
	var err error
	if rv.pins != "" {
		if opt.Pins, err = store.ReadPinsFile(rv.pins); err != nil {
			return err
		}
	}
	if rv.against != "" {
		if rv.inv, err = store.ReadAgainst(rv.against); err != nil {
			return err
		}
		opt.Against = rv.inv
		if opt.Approvals, err = readApprovals(rv.file, rv.approvals); err != nil {
			return err
		}
	}
	if rv.kr, err = verify.ReadKeyringFile(rv.keyring); err != nil {
		return err
	}
	opt.SiteKeys = rv.kr
	f, err := bundle.Open(rv.file, rv.kr)
	if err != nil {
		return err
	}
	defer f.Close()
	rep.Parts = f.Parts
	err = progress.Stream(os.Stderr, "verify "+filepath.Base(rv.file), f.Size, func(n *progress.Counter) error {
		return report.CheckFor(n.Reader(f), rv.kr, rv.chainKeyring(), rep)
	})
	if err != nil {
		return err
	}
	if pending != nil {
		if opt.Pending, err = pending(rep); err != nil {
			return err
		}
	}
	if err := store.Review(rep, opt); err != nil {
		return err
	}
	if rv.sbom != "" {
		return writeBundleSBOM(rv.sbom, rep)
	}
	return nil
}

// chainKeyring is the chain keyring of the store --against describes, if
// its import policy has one (the check then checks each hop with it, as
// that store's import will).
func (rv *reviewer) chainKeyring() openpgp.EntityList {
	if rv.inv == nil || rv.inv.Policy == nil {
		return nil
	}
	return rv.inv.Policy.ChainKeyring()
}

// readApprovals reads the approval files beside the bundle
// (approval.Beside) and those given with --approval.
func readApprovals(bundlePath string, given []string) ([]approval.File, error) {
	fs, err := approval.Beside(bundlePath)
	if err != nil {
		return nil, err
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	seen := map[string]bool{}
	for _, f := range fs {
		seen[abs(f.Name)] = true
	}
	for _, g := range given {
		if seen[abs(g)] {
			continue
		}
		seen[abs(g)] = true
		f, err := approval.ReadFile(g)
		if err != nil {
			return nil, fmt.Errorf("--approval: %w", err)
		}
		fs = append(fs, f)
	}
	if len(fs) > approval.MaxBeside*2 {
		return nil, fmt.Errorf("%d approval files: at most %d are read", len(fs), approval.MaxBeside*2)
	}
	return fs, nil
}

// writeBundleSBOM writes the SBOM the check built again and found equal to
// the signed one (no file is left if that cannot be done).
func writeBundleSBOM(path string, rep *report.Report) error {
	switch {
	case rep.SBOM == "":
		return errors.New("--sbom: this bundle carries no SBOM (it was exported by an airgap that did not write one)\nhint: import it and write the store's with 'airgap inventory --store DIR --sbom FILE'")
	case rep.Checks == nil || rep.Checks.SBOM != "checked":
		return errors.New("--sbom: this delta bundle omits packages its SBOM describes, so the SBOM cannot be checked here; nothing was written\nhint: import it and write the store's with 'airgap inventory --store DIR --sbom FILE'")
	}
	if err := bundle.CreateAtomic(path, func(f *os.File) error { return rep.Checks.WriteSBOM(f) }); err != nil {
		return fmt.Errorf("--sbom: %w", err)
	}
	rep.SBOMFile = path
	return nil
}

// --- import ---

type importCmd struct {
	keyring    string
	storeD     string
	wait       bool
	asJSON     bool
	publishers bool
	accept     []string
	pins       string
	gates      []string
	approvals  []string
}

func (c *importCmd) synopsis() string {
	return "check a bundle and add it to the content-addressed store, all or nothing"
}

func (c *importCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("import", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.storeD, "store", "", "store directory (required; created if absent)")
	fs.BoolVar(&c.wait, "wait", false, "wait for a running import to finish instead of failing")
	fs.BoolVar(&c.asJSON, "json", false, "print what was added and what was already there as JSON")
	fs.BoolVar(&c.publishers, "require-publisher-signatures", false, "refuse a bundle with any provider no publisher signed (mirror hashes only, or re-signed by the site)")
	fs.StringArrayVar(&c.accept, "accept-publisher-key", nil, "approve FINGERPRINT as a new publisher key for the namespaces of the bundle's providers it signs (repeatable; any spacing)")
	fs.StringVar(&c.pins, "publisher-pins", "", "HCL file of the publisher keys each namespace may use (see 'airgap help import')")
	fs.StringArrayVar(&c.gates, "require-gate", nil, "refuse the bundle unless every entry has a passing or waived result of this gate: NAME, modules:NAME or providers:NAME (repeatable; adds to STORE/import.hcl)")
	fs.StringArrayVar(&c.approvals, "approval", nil, "a transfer station's approval of the bundle (repeatable; BUNDLE.approval beside the bundle is read too)")
	return fs
}

// parseAccept reads --accept-publisher-key fingerprints (any spacing).
func parseAccept(flag string, accept []string) ([]string, error) {
	var out []string
	for _, a := range accept {
		fp, err := verify.ParseFingerprint(a)
		if err != nil {
			return nil, usageError{flag + ": " + err.Error()}
		}
		out = append(out, fp)
	}
	return out, nil
}

// rules are the import's rules: the store's import.hcl and the flags.
func (c *importCmd) rules() (*store.StorePolicy, *store.RuleSet, error) {
	sp, err := store.ReadStorePolicy(c.storeD)
	if err != nil {
		return nil, nil, err
	}
	x := store.Extra{RequirePublisherSignatures: c.publishers}
	if x.Accept, err = parseAccept("--accept-publisher-key", c.accept); err != nil {
		return nil, nil, err
	}
	for _, g := range c.gates {
		r, err := store.ParseGateRequirement(g)
		if err != nil {
			return nil, nil, usageError{"--require-gate: " + err.Error()}
		}
		x.Gates = append(x.Gates, r)
	}
	if c.pins != "" {
		if x.Pins, err = store.ReadPinsFile(c.pins); err != nil {
			return nil, nil, err
		}
	}
	rules, err := sp.Rules(x)
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	if sp.Approvals == nil && len(c.approvals) > 0 {
		return nil, nil, usageError{"--approval: this store requires no approvals (its " + store.ImportConfigName + " has no approvals block), so there is no station keyring to check one against"}
	}
	return sp, rules, nil
}

func (c *importCmd) run(args []string) error {
	check.TightGC()
	if err := checkUsage("import", args, []string{"BUNDLE"}, flagVal{"keyring", c.keyring}, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	sp, rules, err := c.rules()
	if err != nil {
		return err
	}
	var approvals []approval.File
	ignored := 0
	if sp.Approvals != nil {
		if approvals, err = readApprovals(args[0], c.approvals); err != nil {
			return err
		}
	} else if beside, _ := approval.Beside(args[0]); len(beside) > 0 {
		ignored = len(beside)
	}
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	f, err := bundle.Open(args[0], kr)
	if err != nil {
		return fmt.Errorf("%s: %w\nthe store was not changed", args[0], err)
	}
	defer f.Close()
	intr := catchInterrupt()
	defer intr.Stop()
	// Closing the bundle ends a read that waits on a pipe at once.
	stopClose := context.AfterFunc(intr.ctx, func() { f.Close() })
	defer stopClose()
	var res *store.ImportResult
	err = progress.Stream(os.Stderr, "import "+filepath.Base(args[0]), f.Size, func(n *progress.Counter) (err error) {
		opt := store.ImportOptions{Keyring: kr, Wait: c.wait, Policies: rules.Policies, Approvals: approvals}
		res, err = store.ImportContext(intr.ctx, c.storeD, n.Reader(f), opt)
		return err
	})
	if err != nil {
		var re *store.RefusedError
		if c.asJSON && errors.As(err, &re) {
			printJSON(map[string]any{"ok": false, "error": fmt.Sprintf("%s: %v", args[0], err), "refused": re.Refusals})
		}
		// The error says whether the store changed.
		return intr.Err(fmt.Errorf("%s: %w", args[0], err), "run the same command again")
	}
	if intr.Caught() {
		fmt.Fprintln(os.Stderr, "airgap import: the interrupt came after the import had been committed; the import is complete")
	}
	if !res.Unchanged {
		res.PinnedKeys = store.PinnedBy(rules.Keys.Decisions)
	}
	for _, r := range rules.Gates {
		res.RequiredGates = append(res.RequiredGates, r.String())
	}
	if sp.Chain != nil {
		res.ChainKeyring = sp.Chain.Keyring
	}
	if ignored > 0 {
		fmt.Fprintf(os.Stderr, "airgap import: note: %d approval file(s) beside the bundle were not checked: this store requires no approvals (its %s has no approvals block)\n", ignored, store.ImportConfigName)
	}
	if c.asJSON {
		return printJSON(res.Report(args[0]))
	}
	res.WriteText(os.Stdout, c.storeD)
	return nil
}

// --- inventory ---

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

// --- split / join ---

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
