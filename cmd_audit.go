package main

// audit: sums up the audit log serve writes. Its flags, its help text
// and the calls into package server, which reads the log.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/report"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/verify"
)

type auditCmd struct {
	log    string
	since  string
	tokens []string
	storeD string
	users  []string
	asJSON bool
}

func (c *auditCmd) synopsis() string {
	return "sum up serve's audit log: who fetched which providers and modules, since when"
}

func (c *auditCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("audit", pflag.ContinueOnError)
	fs.StringVar(&c.log, "log", "", "the audit log 'airgap serve --audit-log' writes (its rotated files are read too)")
	fs.StringVar(&c.since, "since", "", "only downloads since this long ago (7d, 24h) or this time (2026-11-01, RFC 3339)")
	fs.StringSliceVar(&c.tokens, "token", nil, "only these tokens (repeatable; \"anonymous\" for anonymous access)")
	fs.StringVar(&c.storeD, "store", "", "the store served: show, for each version fetched, the import that brought it and who approved it at the transfer station")
	fs.StringSliceVar(&c.users, "user", nil, "only these people: what their login tokens fetched, their logins and refusals (their e-mail addresses; repeatable)")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return fs
}

func (*auditCmd) help() verbHelp {
	return verbHelp{
		usage: "--log FILE [--since DURATION|DATE] [--token NAME]... [--user EMAIL]... [--store DIR] [--json]",
		about: "Sums up the audit log 'airgap serve --audit-log FILE' writes (and its rotated files): per\ntoken, the downloads, bytes, client addresses, and the addresses and versions fetched; per\nperson or token, the logins, refused logins, token changes and refused requests; with\n--store, for each version fetched, the bundle that brought it and who approved it at the\ntransfer station.",
		examples: []string{"airgap audit --log /var/log/airgap/audit.jsonl --since 30d",
			"airgap audit --log /var/log/airgap/audit.jsonl --store /srv/airgap",
			"airgap audit --log /var/log/airgap/audit.jsonl --token ci-net --json",
			"airgap audit --log /var/log/airgap/audit.jsonl --user alice@site.example"},
	}
}

func (c *auditCmd) run(args []string) error {
	if err := checkUsage("audit", args, nil, flagVal{"log", c.log}); err != nil {
		return err
	}
	since, err := parseTime("--since", c.since, time.Now(), -1)
	if err != nil {
		return usageError{err.Error()}
	}
	sum, err := access.SummarizeAudit(c.log, access.AuditFilter{Since: since, Tokens: c.tokens, Users: c.users})
	if err == nil && c.storeD != "" {
		var ix *store.Index
		dir, _, cleanup, oerr := openReadStore(c.storeD)
		if err = oerr; err == nil {
			defer cleanup()
			if ix, _, err = store.ReadInventory(dir); err == nil {
				access.AddProvenance(sum, ix)
			}
		}
	}
	if c.asJSON {
		if err != nil {
			printJSON(map[string]any{"ok": false, "error": err.Error()})
			return err
		}
		return printJSON(sum)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%d downloads", sum.Records)
	if sum.Records > 0 {
		fmt.Printf(" from %s to %s", sum.First, sum.Last)
	}
	fmt.Printf(" (%d files", len(sum.Files))
	if sum.Skipped > 0 {
		fmt.Printf(", %d lines skipped: not audit records", sum.Skipped)
	}
	fmt.Println(")")
	for _, t := range sum.Tokens {
		who := t.Token
		if t.User != "" {
			who += " (" + dist.Printable(t.User) + ")"
		}
		fmt.Printf("\ntoken %s: %d downloads, %s, from %s; first %s, last %s\n", who, t.Downloads, progress.Size(t.Bytes),
			strings.Join(t.Clients, " "), t.First, t.Last)
		for _, a := range t.Addresses {
			fmt.Printf("  %-60s %4d  %s\n", dist.Printable(a.Address), a.Downloads, dist.Printable(strings.Join(a.Versions, ", ")))
		}
	}
	if len(sum.Provenance) > 0 {
		fmt.Println("\nWhere the versions fetched came from (the store's import history):")
	}
	for _, p := range sum.Provenance {
		if p.Bundle == "" {
			fmt.Printf("  %s %s: not in the import history (pruned from it, or imported before it recorded additions)\n", dist.Printable(p.Address), dist.Printable(p.Version))
			continue
		}
		fmt.Printf("  %s %s: bundle %s signed by %s, imported %s\n", dist.Printable(p.Address), dist.Printable(p.Version), verify.Digest(p.Bundle).Short(), dist.Printable(p.Signer.String()), p.Imported)
		if len(p.Approvals) == 0 {
			fmt.Println("    no transfer-station approval recorded")
		}
		for _, a := range p.Approvals {
			note := ""
			if a.Note != "" {
				note = fmt.Sprintf(": %q", dist.Printable(a.Note))
			}
			fmt.Printf("    approved at the transfer station by %s on %s%s\n", report.KeyName(a.Station), a.Time.UTC().Format("2006-01-02 15:04Z"), note)
		}
	}
	if len(sum.Events) > 0 {
		fmt.Printf("\n%d events: logins, refusals, token changes\n", sum.EventLines)
	}
	for _, w := range sum.Events {
		fmt.Printf("  %s: %s%s, from %s; first %s, last %s\n", dist.Printable(w.Who), countList(w.Events), reasonList(w.Reasons),
			strings.Join(w.Clients, " "), w.First, w.Last)
	}
	return nil
}

// countList writes "2 login, 1 refused" in a fixed order.
func countList(m map[string]int) string {
	var parts []string
	for _, k := range []string{access.EventLogin, access.EventLoginRefused, access.EventTokenCreated, access.EventTokenRevoked, access.EventRefused} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], strings.ReplaceAll(k, "_", " ")))
		}
	}
	return strings.Join(parts, ", ")
}

func reasonList(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", dist.Printable(k), m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
