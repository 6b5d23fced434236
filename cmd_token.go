package main

// token: edits the access file serve enforces (named tokens, the
// anonymous rule) and lists and revokes the login tokens in a store. Its
// flags, its help text and the calls into server/acl and package server.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
)

type tokenCmd struct {
	access   string
	name     string
	allow    []string
	expires  string
	none     bool
	storeD   string
	out      string
	user     string
	auditLog string
	asJSON   bool
}

func (c *tokenCmd) synopsis() string {
	return "create, list and revoke the tokens 'airgap serve --access FILE' accepts, and login tokens"
}

// defaultExpiry is how long a token lasts without --expires.
const defaultExpiry = "90d"

func (c *tokenCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("token", pflag.ContinueOnError)
	fs.StringVar(&c.access, "access", "", "the access file (created by the first 'token create', mode 0600)")
	fs.StringVar(&c.name, "name", "", "create: the token's name (shown in access and audit logs)")
	fs.StringSliceVar(&c.allow, "allow", nil, "create, anonymous: an address pattern it may read, e.g. registry.terraform.io/hashicorp/* or site.example/net/** (repeatable)")
	fs.StringVar(&c.expires, "expires", defaultExpiry, "create: expire after this long (90d, 720h) or at this time (2027-01-31, RFC 3339), or never")
	fs.StringVar(&c.out, "out", "", "create: write the secret to this new file (mode 0600) instead of stdout")
	fs.BoolVar(&c.none, "none", false, "anonymous: remove the anonymous rule (requests without a token are refused)")
	fs.StringVar(&c.storeD, "store", "", "the store serve serves: list and revoke its login tokens (single sign-on); create: warn about patterns that match nothing in it; rotate-url-key")
	fs.StringVar(&c.user, "user", "", "revoke: every login token of this person (their e-mail address; with --store)")
	fs.StringVar(&c.auditLog, "audit-log", "", "create, revoke: record it in serve's audit log (the file 'airgap serve --audit-log' writes)")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return fs
}

func (*tokenCmd) help() verbHelp {
	return verbHelp{
		usage: "(create|list|revoke|anonymous) --access FILE [flags] | (list|revoke) --store DIR [--user EMAIL] | rotate-url-key --store DIR",
		about: "Edits the access file 'airgap serve --access FILE' enforces: named tokens (stored as hashes;\ncreate prints the secret once, or writes it to --out FILE, mode 0600), what each may read,\nwhen it expires (90 days unless --expires), an optional anonymous rule. Lists and revokes\nthe login tokens people got with 'terraform login' (single sign-on; with --store, a directory\nor the s3:// store every replica shares; the access file stays a local file). A running\nserve reloads either within a second. Patterns: HOST/NAMESPACE/TYPE (providers),\nHOST/NAMESPACE/NAME/SYSTEM (modules), each part a glob; a final /** matches any remaining parts.",
		examples: []string{"airgap token create --access /etc/airgap/access.hcl --name ci-net --allow 'registry.terraform.io/hashicorp/*' --allow 'site.example/net/**' --out ci-net.token --store /srv/airgap",
			"airgap token list --access /etc/airgap/access.hcl --store /srv/airgap",
			"airgap token revoke --access /etc/airgap/access.hcl ci-net --audit-log /var/log/airgap/audit.jsonl",
			"airgap token revoke --store /srv/airgap --user alice@site.example",
			"airgap token anonymous --access /etc/airgap/access.hcl --allow 'registry.terraform.io/hashicorp/*'",
			"airgap token rotate-url-key --store /var/lib/airgap/store",
			"airgap token revoke --store 's3://airgap/site?endpoint=https://s3.site.example' --user alice@site.example"},
	}
}

const tokenUsage = `usage: airgap token create --access FILE --name NAME --allow PATTERN... [--expires DURATION|DATE|never] [--out FILE] [--store DIR]
       airgap token list (--access FILE | --store DIR)... [--json]
       airgap token revoke --access FILE NAME | --store DIR (--user EMAIL | LOGIN-TOKEN-NAME)
       airgap token anonymous --access FILE (--allow PATTERN... | --none)
       airgap token rotate-url-key --store DIR`

func (c *tokenCmd) run(args []string) error {
	if len(args) == 0 {
		return usageError{tokenUsage}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "rotate-url-key":
		if c.storeD == "" || len(args) != 0 {
			return usageError{tokenUsage}
		}
		return c.result(c.rotate())
	case "list":
		if len(args) != 0 || c.access == "" && c.storeD == "" {
			return usageError{"--access FILE or --store DIR is required\n" + tokenUsage}
		}
		return c.list()
	case "revoke":
		return c.revoke(args)
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
	exp, err := parseExpiry(c.expires, now)
	if err != nil {
		return usageError{err.Error()}
	}
	if c.out != "" {
		// Checked before the token exists: a secret with nowhere to go
		// would be a token nobody holds.
		if _, err := os.Lstat(c.out); err == nil {
			return fmt.Errorf("--out %s exists; the secret is written to a new file only\nhint: choose another name, or remove the file", c.out)
		}
	}
	warnings, err := unmatchedPatterns(c.storeD, c.allow)
	if err != nil {
		return err
	}
	secret, err := acl.AddToken(c.access, c.name, c.allow, exp, now)
	if err == nil && c.out != "" {
		if err = writeSecretFile(c.out, secret); err != nil {
			acl.RemoveToken(c.access, c.name) // nobody holds it
			err = fmt.Errorf("%w\nthe token was not kept", err)
		}
	}
	if err == nil {
		c.audit(&access.AuditEvent{Event: access.EventTokenCreated, Token: c.name, Allow: c.allow, Expires: timeOrEmpty(exp)})
	}
	if c.asJSON {
		doc := map[string]any{"ok": true, "name": c.name, "allow": c.allow, "created": now.Format(time.RFC3339), "warnings": warnings}
		if c.out == "" {
			doc["secret"] = secret
		} else {
			doc["out"] = c.out
		}
		if !exp.IsZero() {
			doc["expires"] = exp.Format(time.RFC3339)
		}
		return c.result(doc, err)
	}
	if err != nil {
		return err
	}
	if c.out == "" {
		fmt.Println(secret) // first: what scripts and people look for
	}
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "warning: %s\n", w)
	}
	until := "never expires"
	if !exp.IsZero() {
		until = "expires " + exp.Format(time.RFC3339)
	}
	fmt.Fprintf(os.Stderr, "token %q added to %s (%s); it may read: %s\n", c.name, c.access, until, strings.Join(c.allow, " "))
	if c.out != "" {
		fmt.Fprintf(os.Stderr, "The secret is in %s (mode 0600), and nowhere else: hand it to its user (a running serve accepts it within a second).\n", c.out)
		return nil
	}
	switch {
	case term.IsTerminal(int(os.Stdout.Fd())):
		fmt.Fprintln(os.Stderr, "The secret above is shown only this once: hand it to its user now (a running serve accepts it within a second).")
	case stdoutOpenToOthers():
		fmt.Fprintln(os.Stderr, "warning: the secret went to a file that other users may read\nhint: chmod 600 it, or next time use --out FILE, which writes it mode 0600")
	}
	return nil
}

// parseExpiry reads --expires: "never", or what parseTime takes.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if s == "never" {
		return time.Time{}, nil
	}
	if s == "" {
		return time.Time{}, errors.New("--expires needs a value: a duration (90d), a date (2027-01-31), or never")
	}
	return parseTime("--expires", s, now, 1)
}

func timeOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// writeSecretFile writes a token's secret to a new file, mode 0600.
func writeSecretFile(path, secret string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, err = f.WriteString(secret + "\n")
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// stdoutOpenToOthers reports whether stdout is a regular file that its
// group or other users may read ('> ci.token' with a umask of 022).
func stdoutOpenToOthers() bool {
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0
}

// unmatchedPatterns returns a warning for each pattern that matches
// nothing the store at dir serves (a mistyped host or namespace); none
// without a store.
func unmatchedPatterns(dir string, patterns []string) ([]string, error) {
	warnings := []string{}
	if dir == "" {
		return warnings, nil
	}
	_, st, cleanup, err := openReadStore(dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cat := st.Catalog()
	var addrs []string
	hosts := map[string]bool{}
	for _, p := range cat.Providers {
		addrs = append(addrs, p.Addr())
		hosts[p.Host] = true
	}
	for _, m := range cat.Modules {
		addrs = append(addrs, m.Addr())
		hosts[m.Host] = true
	}
	for _, rel := range cat.Releases {
		addrs = append(addrs, acl.ReleaseAddr(rel.Product))
	}
	origins := slices.Sorted(maps.Keys(hosts))
	for _, pat := range patterns {
		r, err := acl.CompileRules([]string{pat})
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(addrs, r.Allows) {
			continue
		}
		w := fmt.Sprintf("the pattern %q matches nothing %s serves now", dist.Printable(pat), dir)
		host, _, _ := strings.Cut(pat, "/")
		if s := dist.Suggest(strings.ToLower(host), origins); s != "" && s != strings.ToLower(host) {
			w += fmt.Sprintf(" (did you mean the host %q?)", s)
		} else if len(origins) > 0 {
			w += " (its hosts: " + strings.Join(origins, ", ") + ")"
		}
		warnings = append(warnings, w)
	}
	return warnings, nil
}

// revoke revokes an access-file token (NAME), a login token (login~…) or
// every login token of a person (--user), and audits it.
func (c *tokenCmd) revoke(args []string) error {
	switch {
	case c.user != "" && len(args) == 0 || len(args) == 1 && strings.HasPrefix(args[0], access.LoginNamePrefix):
		if c.storeD == "" {
			return usageError{"login tokens live in the store: add --store DIR (the store 'airgap serve' serves)\n" + tokenUsage}
		}
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		ls, err := loginStateOf(c.storeD)
		if err != nil {
			return c.result(nil, err)
		}
		revoked, err := access.RevokeLoginTokensIn(ls, c.storeD, c.user, name, whoAmI(), time.Now())
		for _, t := range revoked {
			c.audit(&access.AuditEvent{Event: access.EventTokenRevoked, Token: t.Name, User: t.Who()})
		}
		if err == nil && len(revoked) == 0 {
			err = fmt.Errorf("%w: no live login token of %s in %s\nhint: 'airgap token list --store %s' lists them", acl.ErrNoToken, orStr(c.user, name), c.storeD, c.storeD)
		}
		names := []string{}
		for _, t := range revoked {
			names = append(names, t.Name)
		}
		return c.result(map[string]any{"ok": true, "revoked": names}, err)
	case len(args) == 1 && c.user == "":
		if c.access == "" {
			return usageError{"--access FILE is required\n" + tokenUsage}
		}
		err := acl.RemoveToken(c.access, args[0])
		if err == nil {
			c.audit(&access.AuditEvent{Event: access.EventTokenRevoked, Token: args[0]})
		}
		return c.result(map[string]any{"ok": true, "revoked": args[0]}, err)
	}
	return usageError{tokenUsage}
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// whoAmI names the operator for the audit log: the login name, else the
// user id.
func whoAmI() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// audit writes ev to --audit-log, if given (a failure is a warning: the
// change is made).
func (c *tokenCmd) audit(ev *access.AuditEvent) {
	if c.auditLog == "" {
		return
	}
	if ev.By == "" {
		ev.By = whoAmI()
	}
	a, err := access.OpenAuditLog(c.auditLog, 0, 0, nil)
	if err == nil {
		err = a.WriteEvent(ev)
		a.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: the change was made, but not recorded in the audit log: %v\n", err)
	}
}

type tokenListEntry struct {
	Name    string   `json:"name"`
	Allow   []string `json:"allow"`
	Created string   `json:"created,omitempty"`
	Expires string   `json:"expires,omitempty"`
	Expired bool     `json:"expired"`
}

func (c *tokenCmd) list() error {
	doc := map[string]any{"ok": true}
	now := time.Now()
	var f *acl.File
	if c.access != "" {
		var err error
		if f, err = acl.LoadToList(c.access); err != nil {
			return c.result(nil, err)
		}
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
		doc["tokens"] = entries
		if f.Anonymous != nil {
			doc["anonymous"] = map[string]any{"allow": append([]string{}, f.AnonymousPatterns...)}
		}
	}
	var logins []*access.LoginToken
	if c.storeD != "" {
		var err error
		ls, err := loginStateOf(c.storeD)
		if err != nil {
			return c.result(nil, err)
		}
		if logins, err = access.LoginTokensIn(ls, c.storeD); err != nil && !errors.Is(err, access.ErrNoLoginState) {
			return c.result(nil, err)
		}
		if logins == nil {
			logins = []*access.LoginToken{}
		}
		doc["login_tokens"] = logins
	}
	if c.asJSON {
		return printJSON(doc)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	if f != nil {
		fmt.Fprintln(tw, "NAME\tCREATED\tEXPIRES\tALLOW")
		if f.Anonymous != nil {
			fmt.Fprintf(tw, "(anonymous)\t-\tnever\t%s\n", strings.Join(f.AnonymousPatterns, " "))
		}
		for _, e := range doc["tokens"].([]tokenListEntry) {
			exp := e.Expires
			switch {
			case exp == "":
				exp = "never"
			case e.Expired:
				exp += " (EXPIRED)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, orDash(e.Created), exp, dist.Printable(strings.Join(e.Allow, " ")))
		}
	}
	if logins != nil {
		if f != nil {
			// A table of its own, after a blank line.
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Println()
			tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		}
		fmt.Fprintln(tw, "LOGIN TOKEN\tUSER\tGROUPS\tVIA\tCREATED\tEXPIRES")
		for _, t := range logins {
			state := t.Expires.Format(time.RFC3339)
			switch {
			case !t.Revoked.IsZero():
				state = "REVOKED " + t.Revoked.Format(time.RFC3339) + " (" + t.RevokedBy + ")"
			case !now.Before(t.Expires):
				state += " (EXPIRED)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, dist.Printable(t.Who()), orDash(dist.Printable(strings.Join(t.Groups, ","))), t.Via,
				t.Created.Format(time.RFC3339), dist.Printable(state))
		}
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
	if objstore.IsObject(c.storeD) {
		// The keys every replica shares, in the bucket.
		ctx := context.Background()
		cl, err := openObjectStore(ctx, c.storeD)
		if err != nil {
			return nil, err
		}
		id, err := server.RotateBucketURLKeys(ctx, cl, time.Now())
		if err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "url_key": id}, nil
	}
	if _, err := os.Stat(c.storeD); err != nil {
		return nil, fmt.Errorf("%w\nhint: give the store 'airgap serve' uses", err)
	}
	id, err := access.RotateURLKeys(store.TLSDir(c.storeD), time.Now())
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "url_key": id}, nil
}

// loginStateOf is where the store's serve keeps its sign-in state: its
// directory's, or, for a store in object storage, the bucket's, which
// every replica shares (a revocation there reaches all of them).
func loginStateOf(addr string) (access.LoginStore, error) {
	if !objstore.IsObject(addr) {
		return access.LoginDir(store.StateDir(addr)), nil
	}
	cl, err := openObjectStore(context.Background(), addr)
	if err != nil {
		return nil, err
	}
	return server.BucketLogins(cl), nil
}
