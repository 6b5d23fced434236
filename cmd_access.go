package main

// Access control verbs: token (create, list, revoke, anonymous,
// rotate-url-key) edits the access file 'airgap serve --access' enforces
// (logic: server/acl), and audit sums serve's --audit-log (server/audit.go).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/verify"
)

// --- token ---

type tokenCmd struct {
	access  string
	name    string
	allow   []string
	expires string
	none    bool
	storeD  string
	asJSON  bool
}

func (c *tokenCmd) synopsis() string {
	return "create, list and revoke the tokens 'airgap serve --access FILE' accepts"
}

func (c *tokenCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("token", pflag.ContinueOnError)
	fs.StringVar(&c.access, "access", "", "the access file (created by the first 'token create', mode 0600)")
	fs.StringVar(&c.name, "name", "", "create: the token's name (shown in access and audit logs)")
	fs.StringSliceVar(&c.allow, "allow", nil, "create, anonymous: an address pattern it may read, e.g. registry.terraform.io/hashicorp/* or site.example/net/** (repeatable)")
	fs.StringVar(&c.expires, "expires", "", "create: expire after this long (90d, 720h) or at this time (2027-01-31, RFC 3339); default never")
	fs.BoolVar(&c.none, "none", false, "anonymous: remove the anonymous rule (requests without a token are refused)")
	fs.StringVar(&c.storeD, "store", "", "rotate-url-key: the store whose URL signing key to rotate")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return fs
}

const tokenUsage = `usage: airgap token create --access FILE --name NAME --allow PATTERN... [--expires DURATION|DATE]
       airgap token list --access FILE [--json]
       airgap token revoke --access FILE NAME
       airgap token anonymous --access FILE (--allow PATTERN... | --none)
       airgap token rotate-url-key --store DIR`

func (c *tokenCmd) run(args []string) error {
	if len(args) == 0 {
		return usageError{tokenUsage}
	}
	sub, args := args[0], args[1:]
	if sub == "rotate-url-key" {
		if c.storeD == "" || len(args) != 0 {
			return usageError{tokenUsage}
		}
		return c.result(c.rotate())
	}
	if c.access == "" {
		return usageError{"--access FILE is required\n" + tokenUsage}
	}
	switch sub {
	case "create":
		if c.name == "" || len(args) != 0 {
			return usageError{tokenUsage}
		}
		return c.create()
	case "list":
		if len(args) != 0 {
			return usageError{tokenUsage}
		}
		return c.list()
	case "revoke":
		if len(args) != 1 {
			return usageError{tokenUsage}
		}
		return c.result(map[string]any{"ok": true, "revoked": args[0]}, acl.RemoveToken(c.access, args[0]))
	case "anonymous":
		if len(args) != 0 || c.none == (len(c.allow) > 0) {
			return usageError{tokenUsage}
		}
		return c.result(map[string]any{"ok": true, "anonymous": append([]string{}, c.allow...)}, acl.SetAnonymous(c.access, c.allow))
	}
	if s := dist.Suggest(sub, []string{"create", "list", "revoke", "anonymous", "rotate-url-key"}); s != "" {
		return usageError{fmt.Sprintf("unknown token command %q; did you mean %q?\n%s", sub, s, tokenUsage)}
	}
	return usageError{fmt.Sprintf("unknown token command %q\n%s", sub, tokenUsage)}
}

// result prints a verb's JSON document (on failure too) or its text.
func (c *tokenCmd) result(doc map[string]any, err error) error {
	if c.asJSON {
		if err != nil {
			doc = map[string]any{"ok": false, "error": err.Error()}
		}
		if perr := printJSON(doc); perr != nil && err == nil {
			return perr
		}
		return err
	}
	if err == nil {
		fmt.Fprintf(os.Stderr, "done: %v\n", textOf(doc))
	}
	return err
}

func textOf(doc map[string]any) string {
	var parts []string
	for _, k := range []string{"revoked", "anonymous", "url_key"} {
		if v, ok := doc[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", strings.ReplaceAll(k, "_", " "), v))
		}
	}
	return strings.Join(parts, ", ")
}

func (c *tokenCmd) create() error {
	now := time.Now().UTC()
	exp, err := parseTime("--expires", c.expires, now, 1)
	if err != nil {
		return usageError{err.Error()}
	}
	secret, err := acl.AddToken(c.access, c.name, c.allow, exp, now)
	if c.asJSON {
		doc := map[string]any{"ok": true, "name": c.name, "allow": c.allow, "secret": secret, "created": now.Format(time.RFC3339)}
		if !exp.IsZero() {
			doc["expires"] = exp.Format(time.RFC3339)
		}
		return c.result(doc, err)
	}
	if err != nil {
		return err
	}
	fmt.Println(secret)
	until := "never expires"
	if !exp.IsZero() {
		until = "expires " + exp.Format(time.RFC3339)
	}
	fmt.Fprintf(os.Stderr, "token %q added to %s (%s); it may read: %s\nThe secret above is shown only this once: hand it to its user now (a running serve accepts it within a second).\n",
		c.name, c.access, until, strings.Join(c.allow, " "))
	return nil
}

// parseTime reads a time flag: an RFC 3339 time, a date (2027-01-31,
// midnight UTC) or a duration (90d, 720h) from now, ahead (dir 1) or ago
// (dir -1); "" is the zero time.
func parseTime(flag, s string, now time.Time, dir time.Duration) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	d, err := store.ParseAge(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%s %q: want a duration (90d, 720h), a date (2027-01-31) or an RFC 3339 time", flag, s)
	}
	return now.Add(dir * d).Truncate(time.Second), nil
}

type tokenListEntry struct {
	Name    string   `json:"name"`
	Allow   []string `json:"allow"`
	Created string   `json:"created,omitempty"`
	Expires string   `json:"expires,omitempty"`
	Expired bool     `json:"expired"`
}

func (c *tokenCmd) list() error {
	f, err := acl.Load(c.access)
	if err != nil {
		return c.result(nil, err)
	}
	now := time.Now()
	entries := []tokenListEntry{}
	for _, t := range f.Tokens {
		e := tokenListEntry{Name: t.Name, Allow: t.Rules.Patterns(), Expired: t.Expired(now)}
		if !t.Created.IsZero() {
			e.Created = t.Created.Format(time.RFC3339)
		}
		if !t.Expires.IsZero() {
			e.Expires = t.Expires.Format(time.RFC3339)
		}
		entries = append(entries, e)
	}
	if c.asJSON {
		doc := map[string]any{"ok": true, "tokens": entries}
		if f.Anonymous != nil {
			doc["anonymous"] = map[string]any{"allow": append([]string{}, f.AnonymousPatterns...)}
		}
		return printJSON(doc)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tEXPIRES\tALLOW")
	if f.Anonymous != nil {
		fmt.Fprintf(tw, "(anonymous)\t-\tnever\t%s\n", strings.Join(f.AnonymousPatterns, " "))
	}
	for _, e := range entries {
		exp := e.Expires
		switch {
		case exp == "":
			exp = "never"
		case e.Expired:
			exp += " (EXPIRED)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, orDash(e.Created), exp, dist.Printable(strings.Join(e.Allow, " ")))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *tokenCmd) rotate() (map[string]any, error) {
	if _, err := os.Stat(c.storeD); err != nil {
		return nil, fmt.Errorf("%w\nhint: give the store 'airgap serve' uses", err)
	}
	id, err := server.RotateURLKeys(store.TLSDir(c.storeD), time.Now())
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "url_key": id}, nil
}

// readTokenFile reads a token from a file ('-': stdin): its first line,
// which must look like a token.
func readTokenFile(path string) (string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(line)
	if !acl.LooksLikeSecret(tok) {
		return "", fmt.Errorf("--token-file %s does not hold an airgap token (they start %q and are %d characters long)\nhint: save what 'airgap token create' printed, and nothing else", path, acl.SecretPrefix, len(acl.SecretPrefix)+43)
	}
	return tok, nil
}

// --- audit ---

type auditCmd struct {
	log    string
	since  string
	tokens []string
	storeD string
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
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return fs
}

func (c *auditCmd) run(args []string) error {
	if err := checkUsage("audit", args, nil, flagVal{"log", c.log}); err != nil {
		return err
	}
	since, err := parseTime("--since", c.since, time.Now(), -1)
	if err != nil {
		return usageError{err.Error()}
	}
	sum, err := server.SummarizeAudit(c.log, since, c.tokens)
	if err == nil && c.storeD != "" {
		var ix *store.Index
		if ix, _, err = store.ReadInventory(c.storeD); err == nil {
			server.AddProvenance(sum, ix)
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
		fmt.Printf("\ntoken %s: %d downloads, %s, from %s; first %s, last %s\n", t.Token, t.Downloads, progress.Size(t.Bytes),
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
			fmt.Printf("    approved at the transfer station by %s on %s%s\n", bundle.KeyName(a.Station), a.Time.UTC().Format("2006-01-02 15:04Z"), note)
		}
	}
	return nil
}
