package main

// verify: the transfer station's check of a bundle, writing nothing. Its
// flags, its help text, and the review verify and approve share: the
// bundle's check (package bundle) and the offline side's view of it
// (bundle/store) from the store's inventory.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

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
	fs.StringVar(&c.pins, "publisher-pins", "", "HCL file of the publisher keys each namespace, and each CLI release product, may use, as import is given it")
	fs.BoolVar(&c.strict, "strict", false, "exit with status 3 when the bundle verifies but something needs attention")
	fs.StringArrayVar(&c.approvals, "approval", nil, "a station approval of the bundle to count in the forecast (repeatable; BUNDLE.approval beside the bundle is read too)")
	return fs
}

func (*verifyCmd) help() verbHelp {
	return verbHelp{
		usage: "--keyring FILE BUNDLE [--against INVENTORY.json] [--approval FILE]... [--publisher-pins FILE] [--sbom FILE] [--strict] [--json]",
		about: "For the transfer station: checks a bundle's signature, every blob's digest and what it says,\n" +
			"writing nothing (any part of a split set names the whole set) but what --sbom asks for, and\n" +
			"shows what it brings in: what needs attention first (new publisher keys, keys the import\n" +
			"would refuse, site re-signatures, keys expired since, gates failed but waived), then every\n" +
			"provider version (platforms, sha256s, the publisher key, its trust and signature date,\n" +
			"whether the key is new for the namespace, gate results), every module version (source,\n" +
			"commit, vendored rewrites, gate results), withdrawals, each namespace's keys, and the\n" +
			"SBOM. --against the offline store's 'airgap inventory --json' adds what the import would\n" +
			"add, find present, withdraw and which keys change, and forecasts the import: the store's\n" +
			"own rules (withdrawals, conflicts, key pins, retired and revoked keys, required gates,\n" +
			"publisher signatures and station approvals: BUNDLE.approval beside the bundle and\n" +
			"--approval count) run over the inventory, ending with \"import will accept\" or \"import\n" +
			"will refuse: …\" and every entry refused and why. --sbom writes the bundle's SBOM once it\n" +
			"is rebuilt from the bytes and found identical to the signed one. --json prints one\n" +
			"document (its schema: docs/transfer-station.md).",
		examples: []string{"airgap verify --keyring site.pub.asc site.bundle",
			"airgap verify --keyring site.pub.asc --against have.json --publisher-pins pins.hcl site.bundle",
			"airgap verify --keyring site.pub.asc --json --strict site.bundle.001   # 3: needs attention",
			"airgap verify --keyring site.pub.asc --against have.json site.bundle   # 4: the import will refuse it",
			"airgap verify --keyring site.pub.asc --sbom site.cdx.json site.bundle"},
		exits: "  0    verified; with --against, and the import will accept it\n" +
			"  3    verified, but something needs attention (--strict only; without it: 0)\n" +
			"  4    verified, but the import will refuse it (--against's forecast; with or without --strict)\n" +
			"  (1: a bundle that did not verify: nothing about it can be trusted)\n",
	}
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
	if rep.OnlyUnapproved() {
		return exitError{exitRefuse, fmt.Sprintf("verified; the import will accept it once approved at the transfer station ('airgap approve'), and refuses it until then; exit status %d", exitRefuse)}
	}
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
