package registry

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/airgap/airgap/dist"
)

// CLIConfig is what 'airgap export' reads of the Terraform CLI
// configuration, from the files Terraform reads (cliconfig.LoadConfig in
// Terraform 1.x): the file TF_CLI_CONFIG_FILE (or TERRAFORM_CONFIG) names,
// else ~/.terraformrc (Windows: %APPDATA%\terraform.rc) together with every
// *.tfrc and *.tfrc.json in the configuration directory (~/.terraform.d,
// where 'terraform login' keeps credentials.tfrc.json). Later files override
// earlier ones host by host, as in Terraform.
//
// It reads:
//   - credentials "HOST" { token = "…" } blocks;
//   - credentials_helper "NAME" { args = […] }: the terraform-credentials-NAME
//     program in ~/.terraform.d/plugins (or its OS_ARCH subdirectory), asked
//     for hosts no variable or block has a token for (CredentialsHelper);
//   - host "HOST" { services = { "providers.v1" = "…", "modules.v1" = "…" } }:
//     that host's services, skipping its discovery (Client.UseHostBlock);
//   - provider_installation { network_mirror {…} direct {…} … }: where
//     providers come from (InstallMethod).
//
// Everything else (plugin_cache_dir, disable_checkpoint, …) is ignored.
// Terraform parses the file with HCL 1; airgap with HCL 2's native syntax,
// which reads every form Terraform's documentation shows. A file that does
// not parse, two credentials_helper or provider_installation blocks, or an
// invalid host name is an error naming the file and line. A missing file is
// no error (as for Terraform, which only warns).
type CLIConfig struct {
	// Files are the files read, in order.
	Files        []string
	Credentials  Credentials
	Hosts        map[string]HostBlock // by normalized host name
	Installation *Installation        // nil without a provider_installation block
}

// HostBlock is a CLI config host block: the host's service URLs (each
// ending in "/"), and where it was written, for messages.
type HostBlock struct {
	Services map[string]*url.URL
	At       string // file:line
}

// Installation is a provider_installation block: its methods in order.
type Installation struct {
	Methods []InstallMethod
	At      string
}

// Method kinds of a provider_installation block that export can use;
// filesystem_mirror, dev_overrides and OpenTofu's oci_mirror are read but
// not used (a provider only they would serve is an error naming the block).
const (
	MethodDirect        = "direct"
	MethodNetworkMirror = "network_mirror"
)

// InstallMethod is one method of a provider_installation block, or the
// --provider-mirror flag (a network mirror for every provider).
type InstallMethod struct {
	Kind    string
	URL     *url.URL // network_mirror: the mirror's base URL, https, ending in "/"
	Include []ProviderPattern
	Exclude []ProviderPattern
	At      string // file:line or the flag, for messages
}

// Usable reports whether export can fetch providers through m.
func (m InstallMethod) Usable() bool {
	return m.Kind == MethodDirect || m.Kind == MethodNetworkMirror
}

// Matches reports whether m applies to p under its include and exclude
// patterns, as Terraform decides it: p must match an include pattern if
// there are any, and no exclude pattern.
func (m InstallMethod) Matches(p dist.Provider) bool {
	if len(m.Include) > 0 {
		ok := false
		for _, pat := range m.Include {
			ok = ok || pat.Match(p)
		}
		if !ok {
			return false
		}
	}
	for _, pat := range m.Exclude {
		if pat.Match(p) {
			return false
		}
	}
	return true
}

// Describe names the method for messages.
func (m InstallMethod) Describe() string {
	if m.Kind == MethodNetworkMirror {
		return fmt.Sprintf("network mirror %s (%s)", m.URL, m.At)
	}
	return fmt.Sprintf("%s (%s)", m.Kind, m.At)
}

// ProviderPattern is an include or exclude pattern: HOST/NAMESPACE/TYPE
// or NAMESPACE/TYPE (the default registry), where each part may be "*"
// and a "*" namespace needs a "*" type, as in Terraform.
type ProviderPattern struct{ Host, Namespace, Type string }

// parseProviderPattern reads an include or exclude pattern.
func parseProviderPattern(s string) (ProviderPattern, error) {
	parts := strings.Split(s, "/")
	var p ProviderPattern
	switch len(parts) {
	case 2:
		p = ProviderPattern{dist.DefaultRegistry, parts[0], parts[1]}
	case 3:
		p = ProviderPattern{parts[0], parts[1], parts[2]}
		if p.Host != "*" {
			h, err := dist.NormalizeHost(p.Host)
			if err != nil {
				return p, fmt.Errorf("provider pattern %q: %w", s, err)
			}
			p.Host = h
		}
	default:
		return p, fmt.Errorf("provider pattern %q: want [HOST/]NAMESPACE/TYPE, each part a name or *", s)
	}
	p.Namespace, p.Type = strings.ToLower(p.Namespace), strings.ToLower(p.Type)
	for _, part := range []string{p.Namespace, p.Type} {
		if part != "*" && !dist.ValidProviderName(part) {
			return p, fmt.Errorf("provider pattern %q: invalid name %q", s, part)
		}
	}
	if p.Namespace == "*" && p.Type != "*" {
		return p, fmt.Errorf("provider pattern %q: a * namespace needs a * type", s)
	}
	return p, nil
}

// Match reports whether p matches the pattern.
func (pat ProviderPattern) Match(p dist.Provider) bool {
	return (pat.Host == "*" || pat.Host == p.Host) && (pat.Namespace == "*" || pat.Namespace == p.Namespace) &&
		(pat.Type == "*" || pat.Type == p.Type)
}

// ErrCLIConfig: the CLI configuration cannot be used as it is.
var ErrCLIConfig = errors.New("CLI configuration")

// cliConfigFiles lists the files Terraform reads, in order, and whether the
// first was named by the environment.
func cliConfigFiles() []string {
	if p := os.Getenv("TF_CLI_CONFIG_FILE"); p != "" {
		return []string{p}
	}
	if p := os.Getenv("TERRAFORM_CONFIG"); p != "" {
		return []string{p}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	main := filepath.Join(home, ".terraformrc")
	if runtime.GOOS == "windows" {
		main = filepath.Join(os.Getenv("APPDATA"), "terraform.rc")
	}
	files := []string{main}
	dir := configDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return files
	}
	var more []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".tfrc") || strings.HasSuffix(n, ".tfrc.json")) {
			more = append(more, filepath.Join(dir, n))
		}
	}
	sort.Strings(more)
	return append(files, more...)
}

// configDir is Terraform's configuration directory: ~/.terraform.d
// (Windows: %APPDATA%\terraform.d).
func configDir() string {
	if runtime.GOOS == "windows" {
		return filepath.Join(os.Getenv("APPDATA"), "terraform.d")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".terraform.d")
}

// LoadCLIConfig reads the CLI configuration the way Terraform finds it.
// Its credentials helper, if any, is located but not run.
func LoadCLIConfig() (*CLIConfig, error) {
	cfg := &CLIConfig{Credentials: Credentials{fromConfig: map[string]string{}}, Hosts: map[string]HostBlock{}}
	var helper *helperBlock
	for _, path := range cliConfigFiles() {
		src, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCLIConfig, err)
		}
		cfg.Files = append(cfg.Files, path)
		h, err := cfg.readFile(path, src)
		if err != nil {
			return nil, err
		}
		if h != nil {
			if helper != nil {
				return nil, fmt.Errorf("%w: %s: a second credentials_helper block (the first is at %s); Terraform allows one", ErrCLIConfig, h.at, helper.at)
			}
			helper = h
		}
	}
	if helper != nil {
		hp, err := findCredentialsHelper(helper.name, helper.args, helper.at)
		if err != nil {
			return nil, err
		}
		cfg.Credentials.helper = hp
	}
	return cfg, nil
}

// LoadCredentials reads the credentials of the CLI configuration (see
// LoadCLIConfig).
func LoadCredentials() (Credentials, error) {
	cfg, err := LoadCLIConfig()
	if err != nil {
		return Credentials{}, err
	}
	return cfg.Credentials, nil
}

type helperBlock struct {
	name, at string
	args     []string
}

var cliSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "credentials", LabelNames: []string{"host"}},
	{Type: "credentials_helper", LabelNames: []string{"name"}},
	{Type: "host", LabelNames: []string{"name"}},
	{Type: "provider_installation"},
}}

// readFile merges one file into cfg and returns its credentials_helper
// block, if it has one.
func (cfg *CLIConfig) readFile(path string, src []byte) (*helperBlock, error) {
	release, err := dist.AdmitHCL(src, path)
	if err != nil {
		return nil, err
	}
	defer release()
	p := hclparse.NewParser()
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(path, ".json") {
		f, diags = p.ParseJSON(src, path)
	} else {
		f, diags = p.ParseHCL(src, path)
	}
	if diags.HasErrors() {
		return nil, cliDiagErr(diags)
	}
	if diags := dist.NoForExpr(f.Body); diags.HasErrors() { // see dist.LiteralValue
		return nil, cliDiagErr(diags)
	}
	content, _, diags := f.Body.PartialContent(cliSchema)
	if diags.HasErrors() {
		return nil, cliDiagErr(diags)
	}
	var helper *helperBlock
	for _, b := range content.Blocks {
		at := rangeAt(b.DefRange)
		var err error
		switch b.Type {
		case "credentials":
			err = cfg.readCredentials(b, at)
		case "host":
			err = cfg.readHost(b, at)
		case "credentials_helper":
			if helper != nil {
				return nil, fmt.Errorf("%w: %s: a second credentials_helper block (the first is at %s); Terraform allows one", ErrCLIConfig, at, helper.at)
			}
			helper = &helperBlock{name: b.Labels[0], at: at}
			helper.args, err = stringListAttr(b.Body, "args")
		case "provider_installation":
			if cfg.Installation != nil {
				return nil, fmt.Errorf("%w: %s: a second provider_installation block (the first is at %s); Terraform allows one", ErrCLIConfig, at, cfg.Installation.At)
			}
			cfg.Installation, err = readInstallation(b.Body, at)
		}
		if err != nil {
			return nil, err
		}
	}
	return helper, nil
}

func rangeAt(r hcl.Range) string { return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line) }

func cliDiagErr(diags hcl.Diagnostics) error {
	return fmt.Errorf("%w: %s\nhint: fix the file, or point TF_CLI_CONFIG_FILE at another one", ErrCLIConfig, strings.Join(dist.DiagLines(diags), "\n"))
}

func (cfg *CLIConfig) readCredentials(b *hcl.Block, at string) error {
	host, err := dist.NormalizeHost(b.Labels[0])
	if err != nil {
		return fmt.Errorf("%w: %s: credentials block: %v", ErrCLIConfig, at, err)
	}
	attrs, diags := b.Body.JustAttributes()
	if diags.HasErrors() {
		return cliDiagErr(diags)
	}
	tok := ""
	if a, ok := attrs["token"]; ok {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() || v.IsNull() || v.Type() != cty.String {
			return fmt.Errorf("%w: %s: credentials %q: token must be a string", ErrCLIConfig, at, host)
		}
		tok = v.AsString()
	}
	// A block without a token still shadows the helper for its host, as
	// in Terraform.
	cfg.Credentials.fromConfig[host] = tok
	return nil
}

func (cfg *CLIConfig) readHost(b *hcl.Block, at string) error {
	host, err := dist.NormalizeHost(b.Labels[0])
	if err != nil {
		return fmt.Errorf("%w: %s: host block: %v", ErrCLIConfig, at, err)
	}
	attrs, diags := b.Body.JustAttributes()
	if diags.HasErrors() {
		return cliDiagErr(diags)
	}
	hb := HostBlock{Services: map[string]*url.URL{}, At: at}
	a, ok := attrs["services"]
	if !ok {
		return fmt.Errorf("%w: %s: host %q has no services", ErrCLIConfig, at, host)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return fmt.Errorf("%w: %s: host %q: services must be a map of service IDs to URLs", ErrCLIConfig, at, host)
	}
	// Relative service URLs resolve as if they came from the host's own
	// discovery document, as in Terraform.
	disco := &url.URL{Scheme: "https", Host: host, Path: "/.well-known/terraform.json"}
	for it := v.ElementIterator(); it.Next(); {
		k, sv := it.Element()
		if !sv.IsNull() && (sv.Type().IsObjectType() || sv.Type().IsMapType()) {
			// An object service (login.v1: an OAuth client, as 'airgap
			// client-config' writes for single sign-on): Terraform's
			// 'login' reads it; export has no use for it.
			continue
		}
		if sv.IsNull() || sv.Type() != cty.String {
			return fmt.Errorf("%w: %s: host %q: service %s must be a URL string", ErrCLIConfig, at, host, k.AsString())
		}
		ref, err := url.Parse(sv.AsString())
		if err != nil || dist.Printable(sv.AsString()) != sv.AsString() {
			return fmt.Errorf("%w: %s: host %q: service %s: invalid URL %q", ErrCLIConfig, at, host, k.AsString(), dist.Printable(sv.AsString()))
		}
		u := disco.ResolveReference(ref)
		if u.User != nil {
			return fmt.Errorf("%w: %s: host %q: service %s: a URL with credentials in it; give the token in a credentials %q block instead", ErrCLIConfig, at, host, k.AsString(), host)
		}
		if u.Scheme != "https" && u.Scheme != "http" {
			return fmt.Errorf("%w: %s: host %q: service %s: %q is not an http(s) URL", ErrCLIConfig, at, host, k.AsString(), u.Redacted())
		}
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		hb.Services[k.AsString()] = u
	}
	cfg.Hosts[host] = hb
	return nil
}

var installSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: MethodDirect}, {Type: MethodNetworkMirror}, {Type: "filesystem_mirror"}, {Type: "dev_overrides"}, {Type: "oci_mirror"},
}}

func readInstallation(body hcl.Body, at string) (*Installation, error) {
	content, diags := body.Content(installSchema)
	if diags.HasErrors() {
		return nil, cliDiagErr(diags)
	}
	inst := &Installation{At: at}
	for _, b := range content.Blocks {
		m := InstallMethod{Kind: b.Type, At: rangeAt(b.DefRange)}
		if b.Type == "dev_overrides" {
			inst.Methods = append(inst.Methods, m)
			continue
		}
		for _, l := range []struct {
			name string
			out  *[]ProviderPattern
		}{{"include", &m.Include}, {"exclude", &m.Exclude}} {
			ss, err := stringListAttr(b.Body, l.name)
			if err != nil {
				return nil, err
			}
			for _, s := range ss {
				pat, err := parseProviderPattern(s)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %s: %v", ErrCLIConfig, m.At, l.name, err)
				}
				*l.out = append(*l.out, pat)
			}
		}
		if b.Type == MethodNetworkMirror {
			s, err := stringAttr(b.Body, "url")
			if err != nil {
				return nil, err
			}
			if m.URL, err = parseMirrorURL(s); err != nil {
				return nil, fmt.Errorf("%w: %s: network_mirror: %v", ErrCLIConfig, m.At, err)
			}
		}
		inst.Methods = append(inst.Methods, m)
	}
	return inst, nil
}

// parseMirrorURL checks a network mirror's base URL: https (Terraform
// accepts no other), and it gets the "/" the clients would not add.
func parseMirrorURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || dist.Printable(s) != s {
		return nil, fmt.Errorf("invalid mirror URL %q", dist.Printable(s))
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("mirror URL %q: want https://HOST/PATH/ (network mirrors are reached over https only, without credentials or a query in the URL)", u.Redacted())
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// attrValue evaluates an attribute of body (no variables, no functions);
// ok is false if it is absent.
func attrValue(body hcl.Body, name string) (v cty.Value, at string, ok bool, err error) {
	attrs, diags := body.JustAttributes()
	if diags.HasErrors() {
		return cty.NilVal, "", false, cliDiagErr(diags)
	}
	a, ok := attrs[name]
	if !ok {
		return cty.NilVal, rangeAt(body.MissingItemRange()), false, nil
	}
	v, diags = a.Expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, "", false, cliDiagErr(diags)
	}
	return v, rangeAt(a.Range), true, nil
}

// stringListAttr reads an optional list-of-strings attribute.
func stringListAttr(body hcl.Body, name string) ([]string, error) {
	v, at, ok, err := attrValue(body, name)
	if err != nil || !ok {
		return nil, err
	}
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType()) {
		return nil, fmt.Errorf("%w: %s: %s must be a list of strings", ErrCLIConfig, at, name)
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, fmt.Errorf("%w: %s: %s must be a list of strings", ErrCLIConfig, at, name)
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

// stringAttr reads a required string attribute.
func stringAttr(body hcl.Body, name string) (string, error) {
	v, at, ok, err := attrValue(body, name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", fmt.Errorf("%w: %s: %s is required", ErrCLIConfig, at, name)
	case v.IsNull() || v.Type() != cty.String:
		return "", fmt.Errorf("%w: %s: %s must be a string", ErrCLIConfig, at, name)
	}
	return v.AsString(), nil
}

// Methods returns the provider installation methods export uses:
// --provider-mirror if given (one network mirror for every provider), else
// the CLI configuration's provider_installation block, else nil (every
// provider from its origin registry, Terraform's default).
func (cfg *CLIConfig) Methods(providerMirror string) ([]InstallMethod, error) {
	if providerMirror != "" {
		u, err := parseMirrorURL(providerMirror)
		if err != nil {
			return nil, fmt.Errorf("--provider-mirror: %w", err)
		}
		return []InstallMethod{{Kind: MethodNetworkMirror, URL: u, At: "--provider-mirror"}}, nil
	}
	if cfg == nil || cfg.Installation == nil {
		return nil, nil
	}
	return cfg.Installation.Methods, nil
}
