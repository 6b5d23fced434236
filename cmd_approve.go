package main

// approve: the transfer station's signed approval of a bundle (the
// two-person rule). Its flags, its help text and the calls into
// bundle/approval and bundle/store (the review is verify's).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

type approveCmd struct {
	key       string
	keyring   string
	against   string
	accept    []string
	note      string
	out       string
	approvals []string
	asJSON    bool
}

func (c *approveCmd) synopsis() string {
	return "at the transfer station: verify a bundle and, if it passes, sign an approval of it (BUNDLE.approval)"
}

func (c *approveCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("approve", pflag.ContinueOnError)
	fs.StringVar(&c.key, "key", "", "the station's private key (from 'airgap keys generate'; required)")
	fs.StringVar(&c.keyring, "keyring", "", "file with the exporting site's public key(s), as verify takes it (required)")
	fs.StringVar(&c.against, "against", "", "the offline store's 'airgap inventory --json': approve only what its import will accept")
	fs.StringArrayVar(&c.accept, "accept-publisher-key", nil, "approve FINGERPRINT as a new publisher key for the namespaces of the bundle's providers it signs (repeatable; any spacing)")
	fs.StringVar(&c.note, "note", "", "a note kept in the approval (one line: the ticket, what was checked)")
	fs.StringVar(&c.out, "out", "", "write the approval here (default: BUNDLE.approval beside the bundle, or BUNDLE.N.approval if taken)")
	fs.StringArrayVar(&c.approvals, "approval", nil, "another station's approval of the bundle, to count in the forecast (repeatable)")
	fs.BoolVar(&c.asJSON, "json", false, "print the review as one JSON document (as verify --json)")
	return fs
}

func (*approveCmd) help() verbHelp {
	return verbHelp{
		usage: "--key STATION.key.asc --keyring SITE.pub.asc [--against INVENTORY.json] [--accept-publisher-key FINGERPRINT]... [--note TEXT] BUNDLE",
		about: "The transfer station's signed approval (the two-person rule): runs the whole verify (the\n" +
			"review is printed as verify prints it; --json as verify --json) and, only if the bundle\n" +
			"verifies and — with --against — the store's import would accept it with this approval,\n" +
			"writes BUNDLE.approval (a split set: NAME.approval beside NAME.000; BUNDLE.2.approval if\n" +
			"taken), atomically: a statement binding the bundle's manifest digest, the station key, the\n" +
			"time, the digests of the review printed (text and JSON), the note and the publisher keys\n" +
			"approved here, signed by the station key. A store whose import.hcl has an approvals block\n" +
			"requires such approvals; with publisher_key_approvals = \"station\" new publisher keys are\n" +
			"approved only here, a namespace's first key too (nothing is pinned by first use there).\n" +
			"The station key may not be a key of --keyring, nor the bundle's signer.",
		env: []string{"AIRGAP_PASSPHRASE  passphrase of --key when there is no terminal"},
		examples: []string{"airgap approve --key keys/station.key.asc --keyring site.pub.asc --against have.json site.bundle",
			"airgap approve --key keys/station.key.asc --keyring site.pub.asc --against have.json \\\n      --accept-publisher-key 'A6FD D72B E722 31CC 1407  5D12 B625 A360 C497 4D6F' --note 'CHG-1234: key checked with the publisher' site.bundle",
			"airgap approve --key keys/station.key.asc --keyring site.pub.asc --against have.json --json site.bundle.001 > review.json"},
		exits: "  0    verified, and the approval was written\n" +
			"  4    verified, but the import would refuse the bundle even with this approval: nothing was written\n" +
			"  (1: a bundle that did not verify, or an approval that could not be made: nothing was written)\n",
	}
}

func (c *approveCmd) run(args []string) error {
	check.TightGC()
	if err := checkUsage("approve", args, []string{"BUNDLE"}, flagVal{"key", c.key}, flagVal{"keyring", c.keyring}); err != nil {
		return err
	}
	accept, err := parseAccept("--accept-publisher-key", c.accept)
	if err != nil {
		return err
	}
	if len(c.approvals) > 0 && c.against == "" {
		return usageError{"--approval: give --against too: an approval is checked against the store's station keyring, which its inventory carries"}
	}
	if len(c.note) > approval.MaxNote || dist.Printable(c.note) != c.note || strings.ContainsAny(c.note, "\n\r\t") {
		return usageError{fmt.Sprintf("--note: one line of plain text, at most %d bytes", approval.MaxNote)}
	}
	key, err := verify.ReadSigningKeyFile(c.key)
	if err != nil {
		return err
	}
	out := c.out
	if out == "" {
		if out, err = approval.NextPath(args[0]); err != nil {
			return err
		}
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("--out %s exists; an approval is never replaced\nhint: give another --out", out)
	}
	rep := report.Report{File: args[0]}
	rv := &reviewer{file: args[0], keyring: c.keyring, against: c.against, approvals: c.approvals}
	var st *approval.Statement
	now := time.Now()
	err = rv.review(&rep, func(rep *report.Report) (*approval.Statement, error) {
		st, err = c.statement(rep, rv, key, accept, now)
		return st, err
	})
	rep.Finish(err)
	if err != nil {
		if c.asJSON {
			printJSON(rep)
			return errors.New("verification failed; nothing was written")
		}
		return fmt.Errorf("%w\nnothing was written", err)
	}
	if err := c.approvable(&rep); err != nil {
		if c.asJSON {
			printJSON(rep)
		} else {
			fmt.Print(rep.Text())
		}
		return err
	}
	text, doc := rep.Text(), mustJSON(rep)
	st.Review = approval.Review{Text: verify.DigestBytes([]byte(text)), JSON: verify.DigestBytes(doc)}
	data, err := approval.Sign(*st, key, st.Time)
	if err != nil {
		return err
	}
	if err := writeNew(out, data); err != nil {
		return fmt.Errorf("writing the approval: %w\nnothing was written", err)
	}
	if c.asJSON {
		os.Stdout.Write(doc)
		jsonPrinted = true
	} else {
		fmt.Print(text)
	}
	fmt.Fprintf(os.Stderr, "approved bundle %s as %s: wrote %s (%s)\ncarry it with the bundle; the import reads it beside the bundle (or give it with --approval)\n",
		verify.Digest(rep.Bundle).Short(), report.KeyName(st.Station), out, verify.DigestBytes(data).Short())
	return nil
}

// statement is the approval being made of the checked bundle: refused if
// the station key is the bundle's signer or a site key, or an accepted
// publisher key signs none of its providers.
func (c *approveCmd) statement(rep *report.Report, rv *reviewer, key *openpgp.Entity, accept []string, now time.Time) (*approval.Statement, error) {
	fp := verify.Fingerprint(key)
	if rep.Signer != nil && rep.Signer.Fingerprint == fp {
		return nil, fmt.Errorf("--key %s is the key that signed this bundle: a bundle is approved by a second person's station key, never by the key that signed it", c.key)
	}
	for _, e := range rv.kr {
		if verify.Fingerprint(e) == fp {
			return nil, fmt.Errorf("--key %s is a site key of --keyring %s: a station key is never a key that signs bundles\nhint: make the station its own key ('airgap keys generate --out station') and list its public key in the store's station keyring", c.key, c.keyring)
		}
	}
	st := &approval.Statement{Bundle: verify.Digest(rep.Bundle), Note: c.note, Tool: "airgap " + Version,
		Station: verify.Signer{KeyID: verify.KeyID(key), Fingerprint: fp, Identity: verify.Identity(key)}, Time: now.UTC().Truncate(time.Second)}
	if rep.Signer != nil {
		st.BundleSigner = rep.Signer.Fingerprint
	}
	if rv.inv != nil {
		st.Against = rv.inv.Digest
	}
	for _, a := range accept {
		ns := map[string]bool{}
		for _, f := range rep.Checks.Signed {
			if f.Signer.Fingerprint == a && !ns[f.Namespace] {
				ns[f.Namespace] = true
				st.PublisherKeys = append(st.PublisherKeys, approval.PublisherKey{Namespace: f.Namespace, Fingerprint: a})
			}
		}
		for _, f := range rep.Checks.Releases { // a CLI release's key, under its product's namespace
			if n := dist.ReleaseKeyNamespace(f.Product); f.Signer.Fingerprint == a && !ns[n] {
				ns[n] = true
				st.PublisherKeys = append(st.PublisherKeys, approval.PublisherKey{Namespace: n, Fingerprint: a})
			}
		}
		if len(ns) == 0 {
			return nil, usageError{fmt.Sprintf("--accept-publisher-key %s: no provider or CLI release of the bundle is signed by that key (the review lists each one's key)", verify.GroupFingerprint(a))}
		}
	}
	approval.SortKeys(st.PublisherKeys)
	return st, nil
}

// approvable refuses an approval the import would not honour: the
// forecast refuses the bundle for something this approval does not fix
// (another approval missing is fine: the two-person rule may need more
// stations), or the station key does not count for the store.
func (c *approveCmd) approvable(rep *report.Report) error {
	f := rep.Forecast
	if f == nil {
		fmt.Fprintln(os.Stderr, "airgap approve: note: no --against: the approval is not compared with the store's policy (whether its import will accept the bundle, and whether this station key counts there)")
		return nil
	}
	if a := f.Approvals; a != nil {
		for _, v := range a.Invalid {
			if v.File == "(this approval)" {
				return exitError{exitRefuse, fmt.Sprintf("not approved: this approval would not count for the store: %s\nhint: approve with a key the store counts: one of the station keyring its %s approvals block names (%s), not revoked (there, or with 'airgap keys revoke'); its operator adds a new station's public key to that keyring\nnothing was written", dist.Printable(v.Reason), store.ImportConfigName, dist.Printable(a.Keyring))}
			}
		}
	}
	var other []string
	for _, r := range f.Refused {
		if r.Rule != store.RuleApproval {
			other = append(other, dist.Printable(r.Entry()+": "+strings.ReplaceAll(r.Rule, "_", " ")+": "+r.Reason))
		}
	}
	if len(other) > 0 {
		return exitError{exitRefuse, fmt.Sprintf("not approved: the import would refuse the bundle even with this approval:\n  %s\nhint: a new publisher key you have checked with its publisher is accepted with --accept-publisher-key FINGERPRINT; anything else needs a new bundle\nnothing was written", strings.Join(other, "\n  "))}
	}
	if f.Verdict == report.VerdictRefuse {
		fmt.Fprintf(os.Stderr, "airgap approve: note: the store requires %d approval(s); with this one the bundle has %d: another station must approve it too\n", f.Approvals.Required, len(f.Approvals.Valid))
	}
	return nil
}

// mustJSON is the review's JSON document as printJSON prints it.
func mustJSON(v any) []byte {
	b, err := renderJSON(v)
	if err != nil {
		panic(err) // a Report always encodes
	}
	return b
}

// writeNew writes data to path atomically, never replacing a file: a
// temporary file in the same directory (written, synced), linked to path
// (which fails if path exists), removed, and the directory synced.
func writeNew(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists; an approval is never replaced", path)
		}
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
