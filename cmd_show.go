package main

// The show verb: reads evidence out of a signed bundle, checked against
// it first. Each subject (report, sbom, files, docs) is a row of
// showSubjects: its arguments, its help line and its run.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

type showCmd struct {
	keyring  string
	raw      bool
	platform string
}

func (c *showCmd) synopsis() string {
	return "print evidence a bundle carries (gate reports, SBOM, a module's files, docs), checked against its signature first"
}

func (c *showCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("show", pflag.ContinueOnError)
	fs.StringVar(&c.keyring, "keyring", "", "file with the trusted public key(s) (required)")
	fs.BoolVar(&c.raw, "raw", false, "print the exact bytes (of one report), not a table or escaped text")
	fs.StringVar(&c.platform, "platform", "", "OS_ARCH: only the report on this platform's package (providers)")
	return fs
}

func (*showCmd) help() verbHelp {
	return verbHelp{
		usage: "--keyring FILE BUNDLE SUBJECT [ARGS] [--platform OS_ARCH] [--raw]",
		about: "For the transfer station: prints evidence a bundle carries, each piece checked against\n" +
			"the bundle's signature and the digest its signed manifest gives it before it is shown.\n" +
			"Subjects: report [ADDRESS@VERSION] [GATE]: the gate reports (without ADDRESS@VERSION, the\n" +
			"list: entry, gate, result, findings, digest); a SARIF report as a table (rule, level,\n" +
			"file:line, message), any other as escaped text; --raw prints one report's exact bytes.\n" +
			"sbom: the bundle's CycloneDX SBOM, escaped (--raw: its bytes). files ADDRESS@VERSION [PATH]:\n" +
			"a module's files (mode, size, path), or one file, escaped (--raw: its bytes). docs\n" +
			"[ADDRESS[@VERSION] [NAME]]: the documentation the appliance will publish: without ADDRESS,\n" +
			"each entry's; a provider's pages, or one page; a module's README, inputs and outputs.\n" +
			"Text from the bundle is escaped for the terminal; each piece is read from the bundle\n" +
			"once (spooled to a private temporary file, at most 1 GiB, removed on exit and on\n" +
			"Ctrl-C), checked against its digest, then printed.",
		examples: []string{"airgap show --keyring site.pub.asc site.bundle report",
			"airgap show --keyring site.pub.asc site.bundle report hashicorp/random@3.6.0 trivy --platform linux_amd64",
			"airgap show --keyring site.pub.asc site.bundle report example/vpc/aws@1.0.0 trivy --raw > trivy.sarif",
			"airgap show --keyring site.pub.asc site.bundle sbom --raw > site.cdx.json",
			"airgap show --keyring site.pub.asc site.bundle files terraform-aws-modules/vpc/aws@5.8.1 main.tf",
			"airgap show --keyring site.pub.asc site.bundle docs hashicorp/random random_string"},
	}
}

// showSubject is one thing 'airgap show' prints.
type showSubject struct {
	args  string // after the subject, for usage
	about string
	run   func(c *showCmd, br *bundle.Reader, file string, args []string) error
}

var showSubjects = map[string]showSubject{
	"report": {"[ADDRESS@VERSION] [GATE]", "gate reports: without ADDRESS@VERSION, the list; with it, each matching report (SARIF as a table, other formats as escaped text; --raw for the bytes)", showReport},
	"sbom":   {"", "the bundle's CycloneDX SBOM, escaped (--raw for the bytes)", showSBOM},
	"files":  {"ADDRESS@VERSION [PATH]", "a module's files, or one of them (escaped; --raw for the bytes)", showFiles},
	"docs":   {"[ADDRESS[@VERSION] [NAME]]", "the documentation the bundle will publish: each entry's, a provider's pages or one page, a module's README", showDocs},
}

// subjectsUsage lists the subjects for messages.
func subjectsUsage() string {
	var names []string
	for n, s := range showSubjects {
		names = append(names, n+" "+s.args)
	}
	sort.Strings(names)
	return strings.Join(names, " | ")
}

func (c *showCmd) run(args []string) error {
	if err := checkUsage("show", args[:min(len(args), 2)], []string{"BUNDLE", "SUBJECT"}, flagVal{"keyring", c.keyring}); err != nil {
		return err
	}
	subj, ok := showSubjects[args[1]]
	if !ok {
		return usageError{fmt.Sprintf("there is no subject %q to show; subjects: %s", dist.Printable(args[1]), subjectsUsage())}
	}
	kr, err := verify.ReadKeyringFile(c.keyring)
	if err != nil {
		return err
	}
	f, err := bundle.Open(args[0], kr)
	if err != nil {
		return err
	}
	defer f.Close()
	// Ctrl-C or SIGTERM closes the bundle: the spool's next read fails,
	// and the subject returns through the removal of its temporary
	// directory (a second signal ends the process at once).
	intr := catchInterrupt()
	defer intr.Stop()
	stopClose := context.AfterFunc(intr.ctx, func() { f.Close() })
	defer stopClose()
	br, err := bundle.NewReader(f, kr) // the signature, checked before anything is read
	if err != nil {
		return intr.Err(fmt.Errorf("%s: %w", args[0], err), "run it again")
	}
	defer br.Close()
	return intr.Err(subj.run(c, br, args[0], args[2:]), "nothing was left in the temporary directory; run it again")
}

// showReport lists a bundle's gate reports, or prints those of one entry
// (and gate), each checked against the digest the signed manifest gives
// it before a byte of it is printed.
func showReport(c *showCmd, br *bundle.Reader, file string, args []string) error {
	if len(args) > 2 {
		return usageError{fmt.Sprintf("report takes at most ADDRESS@VERSION and GATE, but was given %q", args)}
	}
	refs := br.Manifest().Reports()
	if len(args) == 0 {
		if c.raw {
			return usageError{"--raw prints one report: name it (ADDRESS@VERSION [GATE])"}
		}
		listReports(os.Stdout, file, refs)
		return nil
	}
	gate := ""
	if len(args) == 2 {
		gate = args[1]
	}
	match, err := bundle.MatchReports(refs, args[0], gate, c.platform)
	if err != nil {
		return fmt.Errorf("%s: %w\nhint: 'airgap show --keyring KEYRING %s report' lists the reports it carries", file, err, file)
	}
	if c.raw && len(match) > 1 {
		var names []string
		for _, m := range match {
			names = append(names, dist.Printable("gate "+m.Gate+" on "+m.Entry()))
		}
		return usageError{fmt.Sprintf("--raw prints one report, and %d match: %s; name the GATE or --platform", len(match), strings.Join(names, "; "))}
	}
	want := map[verify.Digest]bool{}
	for _, m := range match {
		want[m.Report] = true
	}
	for _, b := range br.Manifest().Blobs {
		if want[b.Digest] && b.Omitted {
			return fmt.Errorf("%s: this delta bundle does not carry the report %s (its base did)\nhint: on the offline side, 'airgap inventory --store DIR' names the report's path in the store", file, b.Digest.Short())
		}
	}
	dir, err := os.MkdirTemp("", "airgap-show-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	paths, err := bundle.SpoolBlobs(br, want, dir, showMaxSpool)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for i, m := range match {
		if err := printReport(os.Stdout, c.raw, i > 0, m, paths[m.Report]); err != nil {
			return err
		}
	}
	return nil
}

// listReports prints one line per report: entry, gate, status, findings,
// digest and size.
func listReports(w io.Writer, file string, refs []bundle.ReportRef) {
	q := dist.Printable
	if len(refs) == 0 {
		fmt.Fprintf(w, "%s carries no gate reports: no scanner gate ran when it was exported\n", q(file))
		return
	}
	fmt.Fprintf(w, "%s carries %d gate reports (print one with 'airgap show --keyring KEYRING %s report ADDRESS@VERSION [GATE]'):\n", q(file), len(refs), q(file))
	for _, r := range refs {
		entry := r.Address + "@" + r.Version
		if r.Platform != "" {
			entry += " (" + r.Platform + ")"
		}
		fmt.Fprintf(w, "  %s  %s: %s  report %s, %s\n", q(entry), q(r.Gate), strings.TrimPrefix(r.Summary(), q(r.Gate)+": "), r.Report.Short(), dist.HumanSize(r.ReportBytes))
	}
}

// printReport prints one checked report: a header line, then SARIF as a
// table or anything else as escaped text; with raw, the bytes alone.
func printReport(w io.Writer, raw, gap bool, r bundle.ReportRef, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if raw {
		_, err := io.Copy(w, f)
		return err
	}
	if gap {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "gate %s on %s: %s\nreport %s (%s), checked against the bundle's signed manifest\n\n",
		dist.Printable(r.Gate), dist.Printable(r.Entry()), strings.TrimPrefix(r.Summary(), dist.Printable(r.Gate)+": "), r.Report, dist.HumanSize(r.ReportBytes))
	if _, ok := dist.CountSARIF(f); ok {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return dist.WriteSARIFTable(w, f)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := dist.CopyPrintable(w, f); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
