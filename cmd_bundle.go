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

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
	"github.com/spf13/pflag"
)

// --- verify ---

type verifyCmd struct {
	keyring string
	sbom    string
	asJSON  bool
	against string
	pins    string
	strict  bool
}

func (c *verifyCmd) synopsis() string {
	return "check a bundle and show what it brings in (signers, keys, versions, changes), writing nothing"
}

func (c *verifyCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("verify", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.sbom, "sbom", "", "write the bundle's signed SBOM (CycloneDX 1.6 JSON) to FILE once it is verified")
	fs.BoolVar(&c.asJSON, "json", false, "print the review as one JSON document (its schema: docs/transfer-station.md)")
	fs.StringVar(&c.against, "against", "", "the offline store's 'airgap inventory --json': show what the bundle adds, changes and would be refused")
	fs.StringVar(&c.pins, "publisher-pins", "", "HCL file of the publisher keys each namespace may use, as import is given it")
	fs.BoolVar(&c.strict, "strict", false, "exit with status 3 when the bundle verifies but something needs attention")
	return fs
}

// exitAttention is verify --strict's exit status for a bundle that
// verified but needs a person's attention.
const exitAttention = 3

func (c *verifyCmd) run(args []string) error {
	bundle.TightGC()
	if err := checkUsage("verify", args, []string{"BUNDLE"}, flagVal{"keyring", c.keyring}); err != nil {
		return err
	}
	rep := bundle.Report{File: args[0]}
	err := c.review(args[0], &rep)
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
	if c.strict && rep.Status == bundle.StatusNeedsAttention {
		return exitError{exitAttention, fmt.Sprintf("verified, but %d item(s) need attention (listed first in the review); --strict makes that exit status %d", len(rep.Attention), exitAttention)}
	}
	return nil
}

// review checks the bundle (bundle.Check), adds the offline side's view
// (store.Review) from --against and --publisher-pins, which are read
// first, and writes the checked SBOM for --sbom.
func (c *verifyCmd) review(file string, rep *bundle.Report) error {
	opt := store.ReviewOptions{Now: time.Now()}
	var err error
	if c.pins != "" {
		if opt.Pins, err = store.ReadPinsFile(c.pins); err != nil {
			return err
		}
	}
	if c.against != "" {
		if opt.Against, err = store.ReadAgainst(c.against); err != nil {
			return err
		}
	}
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	f, err := bundle.Open(file, kr)
	if err != nil {
		return err
	}
	defer f.Close()
	rep.Parts = f.Parts
	err = progress.Stream(os.Stderr, "verify "+filepath.Base(file), f.Size, func(n *progress.Counter) error {
		return bundle.Check(n.Reader(f), kr, rep)
	})
	if err != nil {
		return err
	}
	store.Review(rep, opt)
	if c.sbom != "" {
		return writeBundleSBOM(c.sbom, rep)
	}
	return nil
}

// writeBundleSBOM writes the SBOM the check built again and found equal to
// the signed one (no file is left if that cannot be done).
func writeBundleSBOM(path string, rep *bundle.Report) error {
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
	fs.StringArrayVar(&c.accept, "accept-publisher-key", nil, "approve FINGERPRINT as a new publisher key for the namespaces of the bundle's providers it signs (repeatable)")
	fs.StringVar(&c.pins, "publisher-pins", "", "HCL file of the publisher keys each namespace may use (see 'airgap help import')")
	fs.StringArrayVar(&c.gates, "require-gate", nil, "refuse the bundle unless every entry has a passing or waived result of this gate: NAME, modules:NAME or providers:NAME (repeatable; adds to STORE/import.hcl)")
	return fs
}

// keyPolicy is the publisher-key pins policy of --accept-publisher-key
// and --publisher-pins (checked before anything else is done).
func keyPolicy(accept []string, pinsFile string) (*store.KeyPins, error) {
	kp := &store.KeyPins{}
	for _, a := range accept {
		fp, err := verify.ParseFingerprint(a)
		if err != nil {
			return nil, usageError{"--accept-publisher-key: " + err.Error()}
		}
		kp.Accept = append(kp.Accept, fp)
	}
	if pinsFile != "" {
		pf, err := store.ReadPinsFile(pinsFile)
		if err != nil {
			return nil, err
		}
		kp.Pins = pf
	}
	return kp, nil
}

// requiredGates are the gates the import requires: the store's import.hcl
// and --require-gate.
func (c *importCmd) requiredGates() ([]store.GateRequirement, error) {
	reqs, err := store.ReadImportConfig(c.storeD)
	if err != nil {
		return nil, err
	}
	for _, g := range c.gates {
		r, err := store.ParseGateRequirement(g)
		if err != nil {
			return nil, usageError{"--require-gate: " + err.Error()}
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

func (c *importCmd) run(args []string) error {
	bundle.TightGC()
	if err := checkUsage("import", args, []string{"BUNDLE"}, flagVal{"keyring", c.keyring}, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	kp, err := keyPolicy(c.accept, c.pins)
	if err != nil {
		return err
	}
	reqs, err := c.requiredGates()
	if err != nil {
		return err
	}
	chain, err := store.ReadChainPolicy(c.storeD)
	if err != nil {
		return err
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
		opt := store.ImportOptions{Keyring: kr, Wait: c.wait, Policies: []store.Policy{store.RequireGates(reqs)}}
		if c.publishers {
			opt.Policies = append(opt.Policies, store.RequirePublisherSignatures())
		}
		opt.Policies = append(opt.Policies, kp)
		if chain != nil {
			opt.Policies = append(opt.Policies, chain)
		}
		res, err = store.ImportContext(intr.ctx, c.storeD, n.Reader(f), opt)
		return err
	})
	if err != nil {
		// The error says whether the store changed.
		return intr.Err(fmt.Errorf("%s: %w", args[0], err), "run the same command again")
	}
	if intr.Caught() {
		fmt.Fprintln(os.Stderr, "airgap import: the interrupt came after the import had been committed; the import is complete")
	}
	if !res.Unchanged {
		res.PinnedKeys = store.PinnedBy(kp.Decisions)
	}
	for _, r := range reqs {
		res.RequiredGates = append(res.RequiredGates, r.String())
	}
	if chain != nil {
		res.ChainKeyring = chain.Path
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
