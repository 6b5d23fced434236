package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/dist/tfconfig"
)

// Request is what to export.
type Request struct {
	// Base is the directory of the manifest, or the project: the
	// FILE:LINE positions the bundle records of why each entry is there
	// (Manifest.RequestedBy) are relative to it, so that the same inputs
	// anywhere give the same bundle.
	Base      string
	Platforms []string
	Providers []ProviderReq
	Modules   []ModuleReq
	// Releases are the manifest's cli blocks: Terraform's and OpenTofu's
	// own CLI releases (ReleaseReq).
	Releases []ReleaseReq
	NoDeps   bool
	// NoVendor keeps non-registry module sources as written (warnings);
	// AllowUnvendored makes sources that cannot be vendored warnings
	// instead of errors (package dist/vendoring).
	NoVendor, AllowUnvendored bool
	// Withdraw and Reinstate go into the bundle as they are (see
	// bundle.Manifest): withdraw "ADDR" {...} and reinstate "ADDR" {...}.
	Withdraw  []dist.Withdrawal
	Reinstate []dist.Withdrawal
	// WithdrawAt is where each withdraw block is (FILE:LINE:COL), by
	// index of Withdraw ("" when not from a manifest).
	WithdrawAt []string
	// AllowDownloadHosts are the manifest's allow_download_hosts: hosts a
	// proxy registry's answers may point downloads at besides the proxy
	// (export's --allow-download-host adds to them).
	AllowDownloadHosts []string
	// From is the project directory of a request FromProject read ("" for
	// a manifest), for messages: such a request has no manifest to add to.
	From string
	// Warnings found while reading the request (FromProject: variables in
	// module sources not declared const); Run starts its warnings with them.
	Warnings []string
	// Gates are the scanners every module or provider plugin must pass,
	// and Waivers the entries let through although they fail one
	// (gate "NAME" {...} and waive "NAME" {...}; see runGates).
	Gates   []GateSpec
	Waivers []Waiver
	// PlatformsDefaulted: neither the manifest nor --platform named
	// platforms, so Platforms is this machine's (an export from a store
	// then takes every platform the store has).
	PlatformsDefaulted bool
}

// ProviderReq asks for versions of one provider.
type ProviderReq struct {
	Addr        dist.Provider
	Constraints version.Constraints // nil: any
	Latest      int                 // newest N matches (default 1)
	All         bool                // every match
	Platforms   []string            // nil: Request.Platforms
	Locked      *tfconfig.LockedProvider
	Why         string // where the request came from, for messages
	// Via is the chain of module calls that brought the request
	// ("ADDRESS VERSION", outermost first), from the request of the
	// manifest or project at At (dist.Reason); both empty for a request
	// of the manifest or project itself, whose Why says where it is.
	At  string
	Via []string
	// Docs is the block's docs attribute (DocsSetting).
	Docs DocsSetting
	// Block is its block in a manifest, FILE:LINE:COL ("" otherwise).
	Block string
}

// ModuleReq asks for versions of one registry module.
type ModuleReq struct {
	Addr        dist.Module
	Constraints version.Constraints
	Latest      int
	All         bool
	Why         string
	At          string   // as ProviderReq's
	Via         []string // as ProviderReq's
	// Site is set for the site's own module (a manifest module block with
	// source): its versions and sources come from the block, not from a
	// registry (SiteModule).
	Site *SiteModule
	// Block is its block in a manifest, FILE:LINE:COL ("" otherwise).
	Block string
	// depth: 0 for a request of the manifest or project, n for a module
	// that a module n-1 deep calls.
	depth int
}

type specFile struct {
	Platforms []string       `hcl:"platforms,optional"`
	Providers []specProvider `hcl:"provider,block"`
	Modules   []specModule   `hcl:"module,block"`
	CLI       []specCLI      `hcl:"cli,block"`
	Withdraw  []specWithdraw `hcl:"withdraw,block"`
	Reinstate []specWithdraw `hcl:"reinstate,block"`
	Gates     []specGate     `hcl:"gate,block"`
	Waive     []specWaive    `hcl:"waive,block"`

	// AllowDownloadHosts: further hosts a proxy registry's answers may
	// point downloads at (registry.Client.AllowDownloadHosts).
	AllowDownloadHosts []string `hcl:"allow_download_hosts,optional"`
}

// specWithdraw is a withdraw or reinstate block. The label is a provider
// source ([HOST/]NAMESPACE/TYPE) unless module = true, when it is a module
// address ([HOST/]NAMESPACE/NAME/SYSTEM): a three-part address reads both
// ways, so the kind is never guessed from its shape.
type specWithdraw struct {
	Source   string    `hcl:"source,label"`
	Versions string    `hcl:"versions"`
	Reason   string    `hcl:"reason"`
	Module   *bool     `hcl:"module,optional"`
	CLI      *bool     `hcl:"cli,optional"` // a Terraform or OpenTofu CLI release: the label is the product
	DefRange hcl.Range `hcl:",def_range"`
}

type specProvider struct {
	Source    string   `hcl:"source,label"`
	Versions  *string  `hcl:"versions,optional"`
	Latest    *int     `hcl:"latest,optional"`
	All       *bool    `hcl:"all,optional"`
	Platforms []string `hcl:"platforms,optional"`
	// Docs: false, or the git repository of the provider's docs.
	Docs     hcl.Expression `hcl:"docs,optional"`
	DefRange hcl.Range      `hcl:",def_range"`
}

// specModule is a module block: a registry module (versions is a
// constraint string), or, with source, the site's own module (versions is a
// list, ref the git ref; see SiteModule). versions, source and ref are
// read as expressions because their type, and ${version} in source and ref,
// depend on which it is.
type specModule struct {
	Address  string         `hcl:"address,label"`
	Versions hcl.Expression `hcl:"versions,optional"`
	From     hcl.Expression `hcl:"source,optional"`
	Ref      hcl.Expression `hcl:"ref,optional"`
	Latest   *int           `hcl:"latest,optional"`
	All      *bool          `hcl:"all,optional"`
	DefRange hcl.Range      `hcl:",def_range"`
}

// defaultPlatform is this machine's os_arch.
func defaultPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

// rangeAt is FILE:LINE:COL of r.
func rangeAt(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func rangeErr(r hcl.Range, format string, a ...any) error {
	return fmt.Errorf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, fmt.Sprintf(format, a...))
}

// checkPlatforms refuses platforms Go cannot build for (typos): an export
// that skipped them would look successful and lack what the site needs.
func checkPlatforms(ps []string, r *hcl.Range) error {
	for _, p := range ps {
		if err := dist.CheckPlatform(p); err != nil {
			if r == nil {
				return fmt.Errorf("--platform: %w", err)
			}
			return rangeErr(*r, "%v", err)
		}
	}
	return nil
}

// CheckPlatforms checks --platform values before anything else runs.
func CheckPlatforms(ps []string) error { return checkPlatforms(ps, nil) }

// diagErr turns HCL diagnostics into one error per line, each at
// file:line:col, keeping HCL's own did-you-mean suggestions.
func diagErr(diags hcl.Diagnostics) error {
	lines := dist.DiagLines(diags)
	return fmt.Errorf("%w\n%s\nhint: a manifest looks like this (every block and attribute is optional):\n%s", ErrManifest, strings.Join(lines, "\n"), dist.Indent(ManifestExample, "  "))
}

// ManifestExample is the manifest a hint shows: every block and attribute
// there is, the gate and waive blocks commented out (TestHCLHintsParse
// checks it parses as a manifest, and so do those blocks uncommented).
const ManifestExample = `platforms = ["linux_amd64", "darwin_arm64"]
allow_download_hosts = ["github.com"] # with a proxy registry: hosts its answers may send downloads to
provider "hashicorp/random" {
  versions  = ">= 3.5, < 4.0" # or: latest = 2, or: all = true
  platforms = ["linux_amd64"] # instead of the top-level list
}
module "example/vpc/aws" {
  versions = "~> 1.0" # or: latest = 2, or: all = true
}
module "site.example/net/vpc/aws" { # the site's own module, from its git server or archives
  source   = "git::https://git.site.example/net/vpc.git"
  versions = ["1.0.0"]
  ref      = "v${version}"
}
withdraw "hashicorp/random" {
  versions = "3.5.0"
  reason   = "why the site must not use it"
  # module = true when the address is a module's
}
reinstate "hashicorp/random" {
  versions = "3.5.1"
  reason   = "why it is safe again"
}
# A gate runs a scanner over every module tree (or provider plugin) and
# fails the export unless a waive block lets an entry through; export
# looks its tool up on PATH, so the example leaves them commented out:
# gate "trivy" {
#   for     = "modules" # or "providers" ({binary}, {platform})
#   command = ["trivy", "config", "--format", "sarif", "--output", "{report}", "--exit-code", "1", "{dir}"]
#   # version, fail_level, timeout, max_output, env: optional
# }
# waive "trivy" {
#   for    = "example/vpc/aws@1.0.0"
#   reason = "why the site accepts its findings"
# }
`

// MaxSpecSize is the largest manifest ParseSpec reads: a manifest of
// thousands of providers and modules is a few hundred KiB; its tokens are
// then held to dist.AdmitHCL's budget.
const MaxSpecSize = 16 << 20

// ParseSpec reads an HCL export manifest (at most MaxSpecSize bytes).
// Errors name file:line:col.
func ParseSpec(path string, cliPlatforms []string) (*Request, error) {
	src, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	release, err := dist.AdmitHCL(src, path)
	if err != nil {
		return nil, err
	}
	defer release()
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	// Every value of a manifest is a literal (or, in a site module, a
	// template of ${version}): none needs a for expression, which can
	// stand for gigabytes (dist.LiteralValue).
	if diags := dist.NoForExpr(f.Body); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	// Without a remain field gohcl decodes against the full schema: unknown
	// blocks and attributes are errors, with HCL's did-you-mean.
	var sf specFile
	if diags := gohcl.DecodeBody(f.Body, nil, &sf); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	req := &Request{Platforms: sf.Platforms, Base: filepath.Dir(path), AllowDownloadHosts: sf.AllowDownloadHosts}
	for _, h := range sf.AllowDownloadHosts {
		if err := registry.CheckDownloadHost(h); err != nil {
			return nil, rangeErr(*attrRange(f.Body, "allow_download_hosts"), "allow_download_hosts: %v", err)
		}
	}
	if len(cliPlatforms) > 0 {
		req.Platforms = cliPlatforms
	}
	if len(req.Platforms) == 0 {
		req.Platforms, req.PlatformsDefaulted = []string{defaultPlatform()}, true
	}
	if len(cliPlatforms) > 0 {
		if err := checkPlatforms(cliPlatforms, nil); err != nil {
			return nil, err
		}
	} else if err := checkPlatforms(req.Platforms, platformsRange(f.Body)); err != nil {
		return nil, err
	}
	for _, p := range sf.Providers {
		addr, err := dist.ParseProviderSource(p.Source)
		if err != nil {
			return nil, rangeErr(p.DefRange, "%v", err)
		}
		pr := ProviderReq{Addr: addr, Latest: 1, Platforms: p.Platforms, Why: fmt.Sprintf("%s:%d", path, p.DefRange.Start.Line), Block: rangeAt(p.DefRange)}
		if err := checkPlatforms(p.Platforms, &p.DefRange); err != nil {
			return nil, err
		}
		if p.Versions != nil && *p.Versions != "" {
			if pr.Constraints, err = parseConstraints(*p.Versions); err != nil {
				return nil, rangeErr(p.DefRange, "provider %q: versions %q: %v", p.Source, *p.Versions, err)
			}
		}
		if p.Latest != nil {
			if *p.Latest < 1 {
				return nil, rangeErr(p.DefRange, "provider %q: latest must be at least 1", p.Source)
			}
			pr.Latest = *p.Latest
		}
		pr.All = p.All != nil && *p.All
		if pr.Docs, err = docsSetting(p); err != nil {
			return nil, err
		}
		req.Providers = append(req.Providers, pr)
	}
	for _, m := range sf.Modules {
		mr, err := moduleRequest(m, path)
		if err != nil {
			return nil, err
		}
		req.Modules = append(req.Modules, mr)
	}
	if err := checkModuleBlocks(req.Modules); err != nil {
		return nil, err
	}
	if req.Releases, err = releaseRequests(sf.CLI, path); err != nil {
		return nil, err
	}
	for _, l := range []struct {
		blocks []specWithdraw
		out    *[]dist.Withdrawal
		what   string
	}{{sf.Withdraw, &req.Withdraw, "withdraw"}, {sf.Reinstate, &req.Reinstate, "reinstate"}} {
		for _, b := range l.blocks {
			w, err := b.withdrawal()
			if err != nil {
				return nil, rangeErr(b.DefRange, "%s %q: %v", l.what, b.Source, err)
			}
			*l.out = append(*l.out, w)
			if l.what == "withdraw" {
				req.WithdrawAt = append(req.WithdrawAt, rangeAt(b.DefRange))
			}
		}
	}
	if err := dist.ValidateWithdrawals(&dist.Catalog{}, req.Withdraw, req.Reinstate); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, path, err)
	}
	if req.Gates, req.Waivers, err = parseGates(path, sf.Gates, sf.Waive); err != nil {
		return nil, err
	}
	return req, nil
}

// moduleRequest reads a module block: a registry module, or with source
// the site's own (siteModule).
func moduleRequest(m specModule, path string) (ModuleReq, error) {
	addr, _, ok, err := dist.ParseModuleSource(m.Address)
	if err != nil || !ok {
		return ModuleReq{}, rangeErr(m.DefRange, "module %q: not a registry module address ([HOST/]NAMESPACE/NAME/SYSTEM)", m.Address)
	}
	at := fmt.Sprintf("%s:%d", path, m.DefRange.Start.Line)
	mr := ModuleReq{Addr: addr, Latest: 1, Why: at, Block: rangeAt(m.DefRange)}
	src, diags := m.From.Value(nil)
	if diags.HasErrors() || !src.IsNull() {
		// source is set (perhaps with ${version}, which needs the site
		// module's evaluation context).
		if mr.Site, err = siteModule(m, addr, at); err != nil {
			return ModuleReq{}, err
		}
		mr.All = true
		return mr, nil
	}
	if ref, _ := m.Ref.Value(nil); !ref.IsNull() || len(m.Ref.Variables()) > 0 {
		return ModuleReq{}, rangeErr(m.DefRange, "module %q: ref is for a module with source (the site's own module)", m.Address)
	}
	v, diags := m.Versions.Value(nil)
	if diags.HasErrors() {
		return ModuleReq{}, diagErr(diags)
	}
	if !v.IsNull() {
		if v.Type() != cty.String {
			return ModuleReq{}, rangeErr(m.DefRange, "module %q: versions is a constraint string here (\"~> 5.0\"); a list of versions is for a module with source", m.Address)
		}
		if s := v.AsString(); s != "" {
			if mr.Constraints, err = parseConstraints(s); err != nil {
				return ModuleReq{}, rangeErr(m.DefRange, "module %q: versions %q: %v", m.Address, s, err)
			}
		}
	}
	if m.Latest != nil {
		mr.Latest = *m.Latest
	}
	mr.All = m.All != nil && *m.All
	return mr, nil
}

// checkModuleBlocks refuses a site module whose address another module
// block names too (case-insensitively, as clients compare addresses).
func checkModuleBlocks(mods []ModuleReq) error {
	first := map[string]ModuleReq{}
	for _, m := range mods {
		k := strings.ToLower(m.Addr.String())
		if prev, ok := first[k]; ok && (prev.Site != nil || m.Site != nil) {
			return fmt.Errorf("%w: %s: module %s is also declared at %s; a site module is declared once", ErrManifest, m.Why, m.Addr, prev.Why)
		}
		first[k] = m
	}
	return nil
}

// withdrawal turns a withdraw or reinstate block into its bundle form.
// versions lists exact versions separated by commas or spaces.
func (b specWithdraw) withdrawal() (dist.Withdrawal, error) {
	w := dist.Withdrawal{Kind: dist.KindProvider, Reason: strings.TrimSpace(b.Reason)}
	if b.CLI != nil && *b.CLI {
		if b.Module != nil && *b.Module {
			return w, fmt.Errorf("cli = true and module = true: a withdrawal is of one kind")
		}
		if b.Source != dist.ProductTerraform && b.Source != dist.ProductTofu {
			return w, fmt.Errorf("with cli = true the label is the product: \"terraform\" or \"tofu\"")
		}
		w.Kind, w.Addr = dist.KindRelease, b.Source
	} else if b.Module != nil && *b.Module {
		m, sub, ok, err := dist.ParseModuleSource(b.Source)
		if err != nil || !ok || sub != "" {
			return w, fmt.Errorf("not a registry module address ([HOST/]NAMESPACE/NAME/SYSTEM)")
		}
		w.Kind, w.Addr = dist.KindModule, m.String()
	} else {
		p, err := dist.ParseProviderSource(b.Source)
		if err != nil {
			return w, fmt.Errorf("%v\nhint: for a module, add module = true", err)
		}
		w.Addr = p.String()
	}
	w.Versions = strings.FieldsFunc(b.Versions, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	for i, v := range w.Versions {
		w.Versions[i] = strings.TrimPrefix(v, "=")
	}
	return w, w.Validate()
}

// FromProject derives a Request from a Terraform/OpenTofu project: the
// required_providers of every .tf/.tf.json (following local module calls),
// its registry module calls, and .terraform.lock.hcl, whose versions are
// exported exactly and whose hashes each package must match. Module
// sources and versions written as expressions are evaluated as 'terraform
// init' and 'tofu init' do (tfconfig.LoadProject), the root module's
// variables taking their values from in (--var, --var-file, TF_VAR_), the
// project's tfvars files and their defaults.
func FromProject(dir string, platforms []string, in tfconfig.Inputs) (*Request, error) {
	if err := checkPlatforms(platforms, nil); err != nil {
		return nil, err
	}
	if err := hasTerraformFiles(dir); err != nil {
		return nil, err
	}
	cfg, err := tfconfig.LoadProject(dir, in)
	if err != nil {
		return nil, err
	}
	lock, err := tfconfig.LoadLockFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		return nil, err
	}
	req := &Request{Platforms: platforms, Warnings: cfg.Notes, Base: dir, From: dir}
	if len(req.Platforms) == 0 {
		req.Platforms, req.PlatformsDefaulted = []string{defaultPlatform()}, true
	}
	byAddr := map[string]*ProviderReq{}
	var order []string
	for _, p := range cfg.Providers {
		addr, err := dist.ParseProviderSource(p.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Pos, err)
		}
		pr := byAddr[addr.String()]
		if pr == nil {
			pr = &ProviderReq{Addr: addr, Latest: 1, Why: p.Pos}
			byAddr[addr.String()] = pr
			order = append(order, addr.String())
		}
		if p.Version != "" {
			c, err := parseConstraints(p.Version)
			if err != nil {
				return nil, fmt.Errorf("%s: provider %s: version %q: %w", p.Pos, addr, p.Version, err)
			}
			pr.Constraints = append(pr.Constraints, c...)
		}
	}
	for a, lp := range lock {
		if _, ok := byAddr[a]; !ok {
			addr, err := dist.ParseProviderSource(a)
			if err != nil {
				return nil, fmt.Errorf(".terraform.lock.hcl: %w", err)
			}
			byAddr[a] = &ProviderReq{Addr: addr, Latest: 1, Why: ".terraform.lock.hcl"}
			order = append(order, a)
		}
		lp := lp
		byAddr[a].Locked = &lp
	}
	sort.Strings(order)
	for _, a := range order {
		pr := byAddr[a]
		if pr.Locked != nil {
			c, err := parseConstraints("= " + pr.Locked.Version)
			if err != nil {
				return nil, fmt.Errorf(".terraform.lock.hcl: provider %s: version %q: %w", a, pr.Locked.Version, err)
			}
			pr.Constraints = c
		}
		req.Providers = append(req.Providers, *pr)
	}
	for _, m := range cfg.Modules {
		addr, _, ok, err := dist.ParseModuleSource(m.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Pos, err)
		}
		if !ok {
			continue // git/URL sources are fetched by the clients as written
		}
		mr := ModuleReq{Addr: addr, Latest: 1, Why: m.Pos}
		if m.Version != "" {
			if mr.Constraints, err = parseConstraints(m.Version); err != nil {
				return nil, fmt.Errorf("%s: module %q: version %q: %w", m.Pos, m.Name, m.Version, err)
			}
		}
		req.Modules = append(req.Modules, mr)
	}
	return req, nil
}

// platformsRange is where the top-level platforms attribute is, for errors.
func platformsRange(body hcl.Body) *hcl.Range { return attrRange(body, "platforms") }

// attrRange is where the top-level attribute name is, for errors.
func attrRange(body hcl.Body, name string) *hcl.Range {
	r := hcl.Range{Filename: body.MissingItemRange().Filename, Start: hcl.Pos{Line: 1, Column: 1}}
	if sb, ok := body.(*hclsyntax.Body); ok && sb.Attributes[name] != nil {
		r = sb.Attributes[name].SrcRange
	}
	return &r
}

// hasTerraformFiles refuses a --from directory with no .tf or .tf.json file
// (a wrong path would otherwise export nothing and look successful).
func hasTerraformFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s has no .tf or .tf.json file\nhint: --from takes the directory of a Terraform/OpenTofu project (where you run 'terraform init')", ErrNoConfig, dir)
}

// Empty reports whether the request asks for nothing at all.
// A request that only withdraws or reinstates versions is not empty.
func (r *Request) Empty() bool {
	return len(r.Providers) == 0 && len(r.Modules) == 0 && len(r.Releases) == 0 && len(r.Withdraw) == 0 && len(r.Reinstate) == 0
}

// docsSetting reads a provider block's docs attribute: absent or true
// (the default), false, or a git repository over https or ssh, written as
// a module source would be ("git::https://…", "https://…").
func docsSetting(p specProvider) (DocsSetting, error) {
	if p.Docs == nil {
		return DocsSetting{}, nil
	}
	v, diags := p.Docs.Value(nil)
	if diags.HasErrors() {
		return DocsSetting{}, diagErr(diags)
	}
	r := p.Docs.Range()
	switch {
	case v.IsNull():
		return DocsSetting{}, nil
	case v.Type() == cty.Bool:
		return DocsSetting{Off: v.False()}, nil
	case v.Type() == cty.String:
		src := v.AsString()
		u := strings.TrimPrefix(src, "git::")
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "ssh://") || dist.Printable(src) != src || len(src) > 512 {
			return DocsSetting{}, rangeErr(r, "provider %q: docs = %q: want false, or a git repository as \"git::https://HOST/PATH\"", p.Source, dist.Printable(src))
		}
		return DocsSetting{Source: src}, nil
	}
	return DocsSetting{}, rangeErr(r, "provider %q: docs must be false or a git repository (\"git::https://…\")", p.Source)
}

// readSpec reads the manifest at path, refusing one over MaxSpecSize
// before holding it in memory.
func readSpec(path string) ([]byte, error) {
	src, err := dist.ReadFileLimit(path, MaxSpecSize)
	if errors.Is(err, dist.ErrFileTooLarge) {
		return nil, fmt.Errorf("%s: the manifest is larger than %d MiB\nhint: a manifest names providers and modules, and even thousands of them take a few hundred KiB; is this the right file?", dist.Printable(path), MaxSpecSize>>20)
	}
	return src, err
}
