package main

// docs: a store's documentation on the terminal, or (--url) the docs an
// appliance serves, read with the person's token. Its flags, its help
// text and the calls into bundle/store and dist/docs.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/server/protocol"
)

type docsCmd struct {
	storeD    string
	url       string
	tokenFile string
	caFile    string
	search    string
}

func (c *docsCmd) synopsis() string {
	return "print a provider's documentation page, or a module's README, inputs and outputs, from a store"
}

func (c *docsCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("docs", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory, or s3://BUCKET/PREFIX?… (this or --url)")
	fs.StringVar(&c.url, "url", "", "read the served docs from the appliance at this URL instead, with your token and its rules (default without --store: the appliance your CLI configuration names)")
	fs.StringVar(&c.tokenFile, "token-file", "", "with --url: a file holding your token (default: TF_TOKEN_<host>, or the CLI configuration's credentials, as 'terraform login' stores them)")
	fs.StringVar(&c.caFile, "ca", "", "with --url: the appliance's CA certificate (PEM; default: the system's, or SSL_CERT_FILE)")
	fs.StringVar(&c.search, "search", "", "with --url: find pages by name (random_string, s3_bucket) in the newest docs of every provider you may read")
	return fs
}

func (*docsCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR | --url https://HOST/ ADDRESS[@VERSION] [NAME] | --url https://HOST/ --search NAME",
		about: "Prints documentation from a store, for engineers without a browser: with a provider\naddress, the pages of its newest documented version (or VERSION) by category, or with\nNAME one page (resources/s3_bucket, s3_bucket or aws_s3_bucket); with a module address,\nits README, inputs, outputs and required providers. Text from the bundle is escaped\nfor the terminal. The catalog page serves the same, rendered. With --url, from the\nappliance over HTTPS instead (modules too, with the registry modules they call), with\nyour login or access token and what its rules let you read; --search finds a page by\nname across providers.",
		examples: []string{"airgap docs --store /srv/airgap hashicorp/aws", "airgap docs --store /srv/airgap hashicorp/aws@5.80.0 s3_bucket | less",
			"airgap docs --store /srv/airgap terraform-aws-modules/vpc/aws@5.8.1",
			"airgap docs --url https://airgap.site.example/ --search random_string",
			"airgap docs --url https://airgap.site.example/ hashicorp/random random_string"},
	}
}

func (c *docsCmd) run(args []string) error {
	if len(args) == 1 {
		args = append(args, "") // NAME is optional
	}
	if c.url == "" && c.storeD == "" {
		// The appliance of the person's CLI configuration, as the
		// client configuration names it.
		cfg, err := registry.LoadCLIConfig()
		if err != nil {
			return err
		}
		if base, _, err := applianceOf(cfg); err != nil {
			return err
		} else if base != "" {
			fmt.Fprintf(os.Stderr, "reading the docs at %s, the appliance your CLI configuration (%s) sends terraform to\n", dist.Printable(base), dist.Printable(strings.Join(cfg.Files, ", ")))
			c.url = base
		}
	}
	if c.url != "" || c.search != "" {
		return c.runURL(args)
	}
	if err := checkUsage("docs", args, []string{"ADDRESS[@VERSION]", "[NAME]"}, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	_, st, cleanup, err := openReadStore(c.storeD)
	if err == nil {
		defer cleanup()
	}
	if err != nil {
		return err
	}
	addr, ver, _ := strings.Cut(args[0], "@")
	cat := st.Index().Catalog
	if pv, found, err := findProvider(&cat, addr, ver); found {
		if err != nil {
			return err
		}
		return printProviderDocs(st, c.storeD, pv, args[1])
	}
	if mv, found, err := findModule(&cat, addr, ver); found {
		if err != nil {
			return err
		}
		if args[1] != "" {
			return fmt.Errorf("module %s has one page of documentation; give no NAME", mv)
		}
		return printModuleDocs(st, mv)
	}
	return fmt.Errorf("the store serves no provider or module %q\nhint: 'airgap inventory --store %s' lists what it serves", dist.Printable(addr), c.storeD)
}

// findProvider finds addr (a provider source, any form Terraform takes)
// at version ver, or the newest version with docs when ver is "".
func findProvider(cat *dist.Catalog, addr, ver string) (*dist.ProviderVersion, bool, error) {
	p, err := dist.ParseProviderSource(addr)
	if err != nil {
		return nil, false, nil
	}
	var found, newest *dist.ProviderVersion
	for i := range cat.Providers {
		pv := &cat.Providers[i]
		if !strings.EqualFold(pv.Addr(), p.String()) {
			continue
		}
		found = pv
		if ver == "" && pv.Docs != nil && pv.Docs.Archive != "" || pv.Version == ver {
			newest = pv
		}
	}
	switch {
	case found == nil:
		return nil, false, nil
	case newest == nil && ver != "":
		return nil, true, fmt.Errorf("the store does not serve version %s of provider %s", dist.Printable(ver), found.Addr())
	case newest == nil:
		return nil, true, fmt.Errorf("no version of provider %s in the store carries its documentation (newest: %s)", found.Addr(), found.Docs.Summary())
	}
	return newest, true, nil
}

// findModule finds a module address at version ver, or its newest.
func findModule(cat *dist.Catalog, addr, ver string) (*dist.ModuleVersion, bool, error) {
	m, _, ok, err := dist.ParseModuleSource(addr)
	if err != nil || !ok {
		return nil, false, nil
	}
	var found, pick *dist.ModuleVersion
	for i := range cat.Modules {
		mv := &cat.Modules[i]
		if strings.EqualFold(mv.Addr(), m.String()) {
			found = mv
			if ver == "" || mv.Version == ver {
				pick = mv
			}
		}
	}
	switch {
	case found == nil:
		return nil, false, nil
	case pick == nil:
		return nil, true, fmt.Errorf("the store does not serve version %s of module %s", dist.Printable(ver), found.Addr())
	case pick.Docs == "":
		return nil, true, fmt.Errorf("module %s: the store has no documentation for it (the bundle that brought it did not carry any)", pick)
	}
	return pick, true, nil
}

func printProviderDocs(st *store.Store, shown string, pv *dist.ProviderVersion, name string) error {
	if pv.Docs == nil || pv.Docs.Archive == "" {
		return fmt.Errorf("provider %s: no documentation: %s", pv, pv.Docs.Summary())
	}
	f, err := st.OpenBlob(pv.Docs.Archive)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeProviderDocs(f, pv, name, "its documentation in the store is damaged", fmt.Sprintf("airgap docs --store %s %s@%s", shown, pv.Addr(), pv.Version))
}

// writeProviderDocs prints the list of pages (name "") or the page name
// of pv's docs pack f, for 'airgap docs' (from a store) and 'airgap show'
// (from a bundle): damaged says what a pack that does not read is, list
// is the command that lists its pages.
func writeProviderDocs(f *os.File, pv *dist.ProviderVersion, name, damaged, list string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	ix, err := docs.ReadIndex(f, fi.Size(), dist.MaxDocsBytes)
	if err != nil {
		return fmt.Errorf("provider %s: %s: %w", pv, damaged, err)
	}
	if name == "" {
		fmt.Printf("%s %s: %s\n\n", pv.Addr(), pv.Version, dist.Printable(pv.Docs.Summary()))
		docs.WriteList(os.Stdout, ix)
		return nil
	}
	e, ok := ix.Find(pv.Type, name)
	if !ok {
		return fmt.Errorf("provider %s has no page %q\nhint: '%s' lists its pages", pv, dist.Printable(name), list)
	}
	src, err := docs.ReadFile(f, e, docs.MaxTerminalPage)
	if errors.Is(err, docs.ErrPageTooLarge) {
		return fmt.Errorf("provider %s: the page %s/%s is %s, over the %s this prints", pv, e.Category, dist.Printable(e.Name), dist.HumanSize(e.Size), dist.HumanSize(docs.MaxTerminalPage))
	}
	if err != nil {
		return err
	}
	docs.WritePage(os.Stdout, src)
	return nil
}

func printModuleDocs(st *store.Store, mv *dist.ModuleVersion) error {
	f, err := st.OpenBlob(mv.Docs)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeModuleDocs(f, mv)
}

// writeModuleDocs prints mv's docs record f (README, inputs, outputs).
func writeModuleDocs(f io.Reader, mv *dist.ModuleVersion) error {
	md, err := docs.ParseModuleDocs(f)
	if err != nil {
		return fmt.Errorf("module %s: %w", mv, err)
	}
	fmt.Printf("%s %s\n\n", mv.Addr(), mv.Version)
	docs.WriteModule(os.Stdout, md)
	return nil
}

// Bounds on what 'airgap docs --url' reads from the appliance: each
// request (with its answer) ends within docsURLTimeout, a JSON answer is
// read up to docsURLMaxJSON bytes (20,000 pages of a list, 100 hits of a
// search, fit in about 3 MiB), a page up to docs.MaxTerminalPage, as from
// a store. Redirects are not followed (a sign-in redirect is said as one;
// the token goes to --url's host only).
const (
	docsURLTimeout   = 30 * time.Second
	docsURLMaxJSON   = 8 << 20
	docsURLMaxModule = 3*dist.MaxModuleDocs + 1<<20 // the document, its escapes and the calls
)

// errNotFound: the appliance answered 404 (not served, or outside the
// token's rules).
var errNotFound = errors.New("not found")

// runURL is 'airgap docs --url': the served docs, read with the person's
// token under their rules (the JSON answers beside the catalog's docs
// pages, the same search and the same access).
func (c *docsCmd) runURL(args []string) error {
	if c.storeD != "" {
		return usageError{"give --store or --url, not both"}
	}
	if c.search != "" {
		if err := checkUsage("docs", args, nil, flagVal{"url", c.url}); err != nil {
			return err
		}
	} else {
		if len(args) == 1 {
			args = append(args, "")
		}
		if err := checkUsage("docs", args, []string{"ADDRESS[@VERSION]", "[NAME]"}, flagVal{"url", c.url}); err != nil {
			return err
		}
	}
	base, err := protocol.NormalizeBaseURL(c.url)
	if err != nil {
		return usageError{err.Error()}
	}
	bu, err := url.Parse(base)
	if err != nil || bu.Host == "" {
		return usageError{fmt.Sprintf("--url %q is not a URL", c.url)}
	}
	if bu.User != nil {
		return usageError{"--url takes no user name or password: your token is sent as a bearer token (--token-file, or what 'terraform login' stored)"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), docsURLTimeout)
	defer cancel()
	cl := &docsClient{base: bu}
	if c.tokenFile != "" {
		if cl.token, err = readTokenFile(c.tokenFile); err != nil {
			return err
		}
	} else {
		cfg, err := registry.LoadCLIConfig()
		if err != nil {
			return err
		}
		// The appliance's own host first; then, as 'terraform login'
		// stores a token per host the configuration redirects (every
		// origin, in registry mode), the token of a host the
		// configuration sends to this appliance: every login token is
		// good for every name of the appliance.
		hosts := []string{bu.Host}
		if b, origins, _ := applianceOf(cfg); b == base {
			hosts = append(hosts, origins...)
		}
		for _, h := range hosts {
			if cl.token, err = cfg.Credentials.Token(ctx, h); err != nil {
				return err
			} else if cl.token != "" {
				break
			}
		}
	}
	// With TF_CLI_CONFIG_FILE set, the tokens 'terraform login' stores are
	// read by neither terraform nor this command: said when no token was
	// found, or when the appliance refuses the one that was.
	if v := os.Getenv("TF_CLI_CONFIG_FILE"); v != "" && c.tokenFile == "" {
		cl.envWarning = cliConfigEnvWarning(v)
		if cl.token == "" {
			fmt.Fprint(os.Stderr, cl.envWarning)
			cl.envWarning = ""
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return fmt.Errorf("--ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca %s holds no PEM certificate\nhint: 'airgap ca --store DIR' on the appliance prints it; the catalog page links it as ca.pem", c.caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	cl.http = &http.Client{Transport: tr, Timeout: docsURLTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	if c.search != "" {
		var res struct {
			Hits []struct{ Provider, Version, Page, Name string }
			More bool
		}
		if err := cl.getJSON(ctx, "ui/docs/search.json?q="+url.QueryEscape(c.search), &res); err != nil {
			return err
		}
		if len(res.Hits) == 0 {
			fmt.Printf("no page named like %q in the providers you may read at %s\n", dist.Printable(c.search), dist.Printable(base))
			return nil
		}
		for _, h := range res.Hits {
			fmt.Printf("%s  %s@%s %s\n", dist.Printable(h.Name), dist.Printable(h.Provider), dist.Printable(h.Version), dist.Printable(h.Page))
		}
		if res.More {
			fmt.Println("(more: give a longer name)")
		}
		fmt.Printf("\n'airgap docs --url %s ADDRESS@VERSION PAGE' prints one.\n", dist.Printable(base))
		return nil
	}
	addr, ver, _ := strings.Cut(args[0], "@")
	// A provider address first, as from a store; then a module's.
	_, perr := dist.ParseProviderSource(addr)
	_, _, isMod, merr := dist.ParseModuleSource(addr)
	isMod = isMod && merr == nil
	if perr != nil && isMod {
		return c.printModuleURL(ctx, cl, base, addr, ver, args[1])
	}
	q := url.Values{"provider": {addr}}
	if ver != "" {
		q.Set("version", ver)
	}
	if args[1] != "" {
		q.Set("page", args[1])
	}
	var res struct {
		Provider, Version, Summary string
		Pages                      []struct {
			Page, Raw string
			Size      int64
		}
	}
	if err := cl.getJSON(ctx, "ui/docs/pages.json?"+q.Encode(), &res); err != nil {
		if errors.Is(err, errNotFound) && isMod {
			return c.printModuleURL(ctx, cl, base, addr, ver, args[1])
		}
		return err
	}
	if args[1] == "" {
		fmt.Printf("%s %s: %s\n\n", dist.Printable(res.Provider), dist.Printable(res.Version), dist.Printable(res.Summary))
		for _, cat := range docs.Categories {
			var names []string
			for _, p := range res.Pages {
				if strings.HasPrefix(p.Page, cat.Name+"/") {
					names = append(names, p.Page)
				}
			}
			if len(names) > 0 {
				fmt.Printf("%s (%d):\n", cat.Title, len(names))
				for _, n := range names {
					fmt.Printf("  %s\n", dist.Printable(n))
				}
			}
		}
		return nil
	}
	if len(res.Pages) != 1 {
		return fmt.Errorf("the appliance answered %d pages for %q", len(res.Pages), dist.Printable(args[1]))
	}
	pg := res.Pages[0]
	if pg.Size > docs.MaxTerminalPage {
		return fmt.Errorf("provider %s %s: the page %s is %s, over the %s this prints", dist.Printable(res.Provider), dist.Printable(res.Version), dist.Printable(pg.Page), dist.HumanSize(pg.Size), dist.HumanSize(docs.MaxTerminalPage))
	}
	src, err := cl.get(ctx, strings.TrimPrefix(pg.Raw, "/"), docs.MaxTerminalPage)
	if err != nil {
		return err
	}
	docs.WritePage(os.Stdout, src)
	return nil
}

// printModuleURL prints a module version's documentation as the
// appliance serves it (its newest documented version without ver): the
// README, inputs, outputs and required providers, as from a store, then
// the registry modules it calls.
func (c *docsCmd) printModuleURL(ctx context.Context, cl *docsClient, base, addr, ver, name string) error {
	if name != "" {
		return fmt.Errorf("module %s has one page of documentation; give no NAME", dist.Printable(addr))
	}
	q := url.Values{"module": {addr}}
	if ver != "" {
		q.Set("version", ver)
	}
	var res struct {
		Module, Version string
		Docs            dist.ModuleDocs
		Calls           []struct {
			Module, Version, File string
			Line                  int
		}
	}
	b, err := cl.get(ctx, "ui/docs/module.json?"+q.Encode(), docsURLMaxModule)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&res); err != nil {
		return fmt.Errorf("the appliance's answer for module %s is not what airgap expects (an older serve?): %w", dist.Printable(addr), err)
	}
	if len(res.Docs.Readme) > dist.MaxModuleReadme || len(res.Docs.Submodules) > dist.MaxModuleSubmodules {
		return fmt.Errorf("the appliance's answer for module %s is over the bounds of a module's documentation", dist.Printable(addr))
	}
	fmt.Printf("%s %s\n\n", dist.Printable(res.Module), dist.Printable(res.Version))
	docs.WriteModule(os.Stdout, &res.Docs)
	if len(res.Calls) > 0 {
		fmt.Printf("\nRegistry modules it calls (%d):\n", len(res.Calls))
		for _, c := range res.Calls {
			fmt.Printf("  %s  %s  (%s:%d)\n", dist.Printable(c.Module), dist.Printable(c.Version), dist.Printable(c.File), c.Line)
		}
	}
	return nil
}

// applianceOf is the appliance a CLI configuration (as 'airgap
// client-config' writes it) sends terraform to: the base URL its host
// blocks' services name before /origin/, and those hosts (sorted); "" when
// it names none, an error when it names more than one.
func applianceOf(cfg *registry.CLIConfig) (base string, hosts []string, err error) {
	bases := map[string]bool{}
	for h, hb := range cfg.Hosts {
		for _, u := range hb.Services {
			if u == nil || u.Scheme != "https" {
				continue
			}
			if i := strings.Index(u.Path, "/origin/"); i >= 0 {
				b := "https://" + u.Host + u.Path[:i+1]
				if !bases[b] {
					bases[b] = true
					base = b
				}
				if !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
				}
			}
		}
	}
	if len(bases) > 1 {
		return "", nil, fmt.Errorf("your CLI configuration sends terraform to %d appliances\nhint: give --url", len(bases))
	}
	sort.Strings(hosts)
	return base, hosts, nil
}

// docsClient asks one appliance, with the person's token.
type docsClient struct {
	base       *url.URL
	token      string
	http       *http.Client
	envWarning string // printed when the appliance refuses the token: TF_CLI_CONFIG_FILE is set
}

// get reads rel (relative to the base URL) up to max bytes, refusing a
// longer answer; a refusal is said with the appliance's reason, escaped.
func (c *docsClient) get(ctx context.Context, rel string, max int64) ([]byte, error) {
	u, err := c.base.Parse(rel)
	// The same scheme and host: a page named http://SAMEHOST/ would send
	// the token in the clear.
	if err != nil || u.Host != c.base.Host || u.Scheme != c.base.Scheme || u.User != nil {
		return nil, fmt.Errorf("the appliance named a page outside it: %q", dist.Printable(rel))
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w\nhint: check --url, and that this machine trusts the appliance's CA (--ca FILE or SSL_CERT_FILE)", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", dist.Printable(u.String()), err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("GET %s: the answer is over %s, more than this reads", dist.Printable(u.String()), dist.HumanSize(max))
	}
	why := func() string {
		var e struct{ Errors []string }
		if json.Unmarshal(b, &e) == nil && len(e.Errors) > 0 {
			return dist.Printable(strings.Join(e.Errors, "; "))
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			return "" // a page for browsers: its status says it
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		if len(line) > 200 {
			line = line[:200]
		}
		return dist.Printable(line)
	}
	host := dist.Printable(c.base.Host)
	switch {
	case resp.StatusCode == http.StatusOK:
		return b, nil
	case resp.StatusCode == http.StatusUnauthorized && c.token == "":
		return nil, fmt.Errorf("refused: %s asks for a token, and none was found%s\nhint: run 'terraform login' for the hosts your client configuration lists, or give --token-file FILE", host, colon(why()))
	case resp.StatusCode == http.StatusUnauthorized:
		fmt.Fprint(os.Stderr, c.envWarning)
		return nil, fmt.Errorf("refused: %s did not take your token%s\nhint: it may have expired or been revoked: run 'terraform login' again, or ask the appliance's operator", host, colon(why()))
	case resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("refused: %s does not let your token read this%s\nhint: ask the appliance's operator", host, colon(why()))
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("refused: %s%s\nhint: the access rules of your token may not include it; 'airgap docs --url %s --search NAME' finds what you may read%w", host, colon(why()), dist.Printable(c.base.String()), quiet{errNotFound})
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, fmt.Errorf("refused: %s sends this request to sign in (HTTP %d)\nhint: sign in with 'terraform login', or give --token-file FILE", host, resp.StatusCode)
	default:
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", dist.Printable(u.String()), resp.StatusCode, why())
	}
}

// quiet wraps an error for errors.Is without adding to the message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// colon is ": s", or "" for "".
func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func (c *docsClient) getJSON(ctx context.Context, rel string, v any) error {
	b, err := c.get(ctx, rel, docsURLMaxJSON)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the appliance's answer to %s is not what airgap expects (an older serve?): %w", dist.Printable(rel), err)
	}
	return nil
}
