package main

// import: the offline side adds a bundle to its store, all or nothing.
// Its flags, its help text and the calls into bundle/store, which checks
// the bundle again under the store's own rules.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/verify"
)

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
	// For a store in object storage (runObject): the import runs against
	// a scratch directory, publish then writes it to the bucket, and shown
	// is the address to print; staged sends each new blob to the bucket
	// while the import still checks the rest (objstore.Sender).
	publish func() error
	// remote, with publish, is the bucket the staged store's other
	// blobs are in (a delta's base).
	remote store.Remote
	shown  string
	staged func(d verify.Digest, path string)
}

func (c *importCmd) synopsis() string {
	return "check a bundle and add it to the content-addressed store, all or nothing"
}

func (c *importCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("import", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.StringVar(&c.storeD, "store", "", "store directory (required; created if absent), or s3://BUCKET/PREFIX?… (object storage: see docs/object-storage.md)")
	fs.BoolVar(&c.wait, "wait", false, "wait for a running import to finish instead of failing")
	fs.BoolVar(&c.asJSON, "json", false, "print what was added and what was already there as JSON")
	fs.BoolVar(&c.publishers, "require-publisher-signatures", false, "refuse a bundle with any provider no publisher signed (mirror hashes only, or re-signed by the site)")
	fs.StringArrayVar(&c.accept, "accept-publisher-key", nil, "approve FINGERPRINT as a new publisher key for the namespaces of the bundle's providers it signs (repeatable; any spacing)")
	fs.StringVar(&c.pins, "publisher-pins", "", "HCL file of the publisher keys each namespace, and each CLI release product, may use (see 'airgap help import')")
	fs.StringArrayVar(&c.gates, "require-gate", nil, "refuse the bundle unless every entry has a passing or waived result of this gate: NAME, modules:NAME or providers:NAME (repeatable; adds to STORE/import.hcl)")
	fs.StringArrayVar(&c.approvals, "approval", nil, "a transfer station's approval of the bundle (repeatable; BUNDLE.approval beside the bundle is read too)")
	return fs
}

func (*importCmd) help() verbHelp {
	return verbHelp{
		usage: "--keyring FILE --store DIR BUNDLE [--approval FILE]... [--accept-publisher-key FINGERPRINT]... [--publisher-pins FILE] [--require-gate GATE]...",
		about: "Offline side: checks a bundle (or split set) and adds it to the content-addressed store,\n" +
			"all or nothing; a running 'airgap serve' picks it up within 2 s. Publisher keys are\n" +
			"pinned per namespace: the first key of a namespace is recorded (trust on first use), and\n" +
			"a provider signed by another key is refused unless the bundle declares it (export\n" +
			"--accept-new-publisher-key) or --accept-publisher-key names it. A pins file decides for\n" +
			"the namespaces it lists, from the first import on:\n" +
			"  namespace \"registry.terraform.io/hashicorp\" {\n" +
			"    keys = [\"C874 011F 0AB4 0511 0D02  1055 3436 5D94 72D7 468F\"]\n" +
			"  }\n" +
			"  unlisted = \"trust-on-first-use\"   # or \"refuse\": namespaces not listed are refused\n" +
			"  release \"terraform\" { keys = [\"C874 011F …\"] }   # the CLI releases' key (terraform, tofu)\n" +
			"--require-gate (and STORE/import.hcl: require_gate = [...]) refuses a bundle whose entries\n" +
			"lack a passing or waived result of a gate. STORE/import.hcl is the store's policy:\n" +
			"  require_gate = [\"modules:trivy\"]           require_publisher_signatures = true\n" +
			"  publisher_pins = \"pins.hcl\"                 publisher_key_approvals = \"station\"\n" +
			"  approvals {\n" +
			"    keyring  = \"stations.pub.asc\"   # the transfer stations' public keys\n" +
			"    required = 1                     # approvals by distinct keys, per bundle\n" +
			"  }\n" +
			"  chain {                            # a bundle exported from an offline store:\n" +
			"    keyring = \"upstream.pub.asc\"   # every hop of its chain signed by one of these\n" +
			"  }\n" +
			"An approval ('airgap approve') is read beside the bundle (BUNDLE.approval) or given with\n" +
			"--approval. A refused import names every entry refused and why; nothing changes.",
		examples: []string{"airgap import --keyring site.pub.asc --store /srv/airgap site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --require-publisher-signatures site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --json site.bundle.001",
			"airgap import --keyring site.pub.asc --store /srv/airgap --accept-publisher-key 'ABCD 1234 …' site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --approval station2.approval site.bundle",
			"airgap import --keyring site.pub.asc --store /srv/airgap --require-gate modules:trivy --require-gate providers:govulncheck site.bundle"},
	}
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
	if objstore.IsObject(c.storeD) && c.publish == nil {
		return c.runObject(args)
	}
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
		opt := store.ImportOptions{Keyring: kr, Wait: c.wait, Policies: rules.Policies, Approvals: approvals, Remote: c.remote, Staged: c.staged}
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
	if c.publish != nil && !res.Unchanged {
		if err := c.publish(); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
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
	shown := c.storeD
	if c.shown != "" {
		shown = c.shown
	}
	res.WriteText(os.Stdout, shown)
	return nil
}

// runObject imports into a store in object storage: the server's
// conditional writes checked, the store's lease taken (one import at a
// time; a second is refused naming the holder), the bucket's index and
// import.hcl staged into a private scratch directory, the import run there
// exactly as on disk (every check and policy, all or nothing), and only
// then its blobs written to the bucket if absent and the index replaced
// by a write conditional on the ETag read at the start. A failure at any
// point leaves the index as it was and at most blobs no index refers to.
func (c *importCmd) runObject(args []string) error {
	if err := checkUsage("import", args, []string{"BUNDLE"}, flagVal{"keyring", c.keyring}, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	ctx := context.Background()
	cl, err := openObjectStore(ctx, c.storeD)
	if err != nil {
		return err
	}
	// A new store is not made over someone else's objects (checked before
	// anything, even the probe, is written there).
	if _, err := cl.Head(ctx, objstore.IndexName); errors.Is(err, objstore.ErrNotFound) {
		if err := objstore.CheckNoForeign(ctx, cl); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	if err := cl.CheckConditional(ctx); err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	host, _ := os.Hostname()
	lease, err := objstore.AcquireLeaseWait(ctx, cl, fmt.Sprintf("airgap import of %s on %s (pid %d)", filepath.Base(args[0]), host, os.Getpid()), objstore.LeaseTTL, c.wait, objstore.TellWaiting)
	if err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	defer lease.Release()
	scratch, err := os.MkdirTemp("", "airgap-import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	staged, err := objstore.Stage(ctx, cl, scratch)
	if err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	addr := c.storeD
	c.storeD, c.shown = scratch, addr
	ix, err := store.Open(scratch)
	if err != nil {
		return fmt.Errorf("%w\nthe store was not changed", err)
	}
	rep := objstore.NewListedRemote(cl, slog.New(slog.DiscardHandler), ix.Index())
	c.remote = rep
	// New blobs go to the bucket while the import checks the rest; if the
	// import fails or is refused before it publishes, those the sender
	// created are deleted again (the bucket as it was).
	sender := objstore.NewSender(ctx, cl)
	c.staged = sender.Staged
	published := false
	c.publish = func() error {
		published = true
		for _, hex := range rep.FetchedBlobs() { // a delta's base, read from the bucket: not sent back
			staged.Fetched[hex] = true
		}
		if _, err := objstore.Publish(ctx, cl, scratch, staged, lease, sender); err != nil {
			return err
		}
		if staged.ETag == "" {
			fmt.Printf("created a new store in %s (there was none: if you meant an existing store, check --store)\n", addr)
		}
		return nil
	}
	err = c.run(args)
	if err != nil && !published {
		if aerr := sender.Abort(); aerr != nil {
			err = fmt.Errorf("%w\n%v", err, aerr)
		}
	}
	sender.Finish()
	return err
}
