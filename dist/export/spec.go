package export

import (
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

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/tfconfig"
)

// Request is what to export.
type Request struct {
	Platforms []string
	Providers []ProviderReq
	Modules   []ModuleReq
	NoDeps    bool
	// NoVendor keeps non-registry module sources as written (warnings);
	// AllowUnvendored makes sources that cannot be vendored warnings
	// instead of errors. See vendor.go.
	NoVendor, AllowUnvendored bool
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
}

// ModuleReq asks for versions of one registry module.
type ModuleReq struct {
	Addr        dist.Module
	Constraints version.Constraints
	Latest      int
	All         bool
	Why         string
}

type specFile struct {
	Platforms []string       `hcl:"platforms,optional"`
	Providers []specProvider `hcl:"provider,block"`
	Modules   []specModule   `hcl:"module,block"`
}

type specProvider struct {
	Source    string    `hcl:"source,label"`
	Versions  *string   `hcl:"versions,optional"`
	Latest    *int      `hcl:"latest,optional"`
	All       *bool     `hcl:"all,optional"`
	Platforms []string  `hcl:"platforms,optional"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type specModule struct {
	Source   string    `hcl:"source,label"`
	Versions *string   `hcl:"versions,optional"`
	Latest   *int      `hcl:"latest,optional"`
	All      *bool     `hcl:"all,optional"`
	DefRange hcl.Range `hcl:",def_range"`
}

// DefaultPlatform is this machine's os_arch.
func DefaultPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

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
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		l := d.Summary
		if d.Detail != "" {
			l += ": " + d.Detail
		}
		if d.Subject != nil {
			l = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, l)
		}
		lines = append(lines, l)
	}
	return fmt.Errorf("%w\n%s\nhint: a manifest has platforms = [...], provider \"SOURCE\" {versions, latest, all, platforms} and module \"SOURCE\" {versions, latest, all}", ErrManifest, strings.Join(lines, "\n"))
}

// ParseSpec reads an HCL export manifest. Errors name file:line:col.
func ParseSpec(path string, cliPlatforms []string) (*Request, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	// Without a remain field gohcl decodes against the full schema: unknown
	// blocks and attributes are errors, with HCL's did-you-mean.
	var sf specFile
	if diags := gohcl.DecodeBody(f.Body, nil, &sf); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	req := &Request{Platforms: sf.Platforms}
	if len(cliPlatforms) > 0 {
		req.Platforms = cliPlatforms
	}
	if len(req.Platforms) == 0 {
		req.Platforms = []string{DefaultPlatform()}
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
		pr := ProviderReq{Addr: addr, Latest: 1, Platforms: p.Platforms, Why: fmt.Sprintf("%s:%d", path, p.DefRange.Start.Line)}
		if err := checkPlatforms(p.Platforms, &p.DefRange); err != nil {
			return nil, err
		}
		if p.Versions != nil && *p.Versions != "" {
			if pr.Constraints, err = version.NewConstraint(*p.Versions); err != nil {
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
		req.Providers = append(req.Providers, pr)
	}
	for _, m := range sf.Modules {
		addr, _, ok, err := dist.ParseModuleSource(m.Source)
		if err != nil || !ok {
			return nil, rangeErr(m.DefRange, "module %q: not a registry module address ([HOST/]NAMESPACE/NAME/SYSTEM)", m.Source)
		}
		mr := ModuleReq{Addr: addr, Latest: 1, Why: fmt.Sprintf("%s:%d", path, m.DefRange.Start.Line)}
		if m.Versions != nil && *m.Versions != "" {
			if mr.Constraints, err = version.NewConstraint(*m.Versions); err != nil {
				return nil, rangeErr(m.DefRange, "module %q: versions %q: %v", m.Source, *m.Versions, err)
			}
		}
		if m.Latest != nil {
			mr.Latest = *m.Latest
		}
		mr.All = m.All != nil && *m.All
		req.Modules = append(req.Modules, mr)
	}
	return req, nil
}

// FromProject derives a Request from a Terraform/OpenTofu project: the
// required_providers of every .tf/.tf.json (following local module calls),
// its registry module calls, and .terraform.lock.hcl, whose versions are
// exported exactly and whose hashes each package must match.
func FromProject(dir string, platforms []string) (*Request, error) {
	if err := checkPlatforms(platforms, nil); err != nil {
		return nil, err
	}
	if err := hasTerraformFiles(dir); err != nil {
		return nil, err
	}
	cfg, err := tfconfig.LoadTree(dir)
	if err != nil {
		return nil, err
	}
	lock, err := tfconfig.LoadLockFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		return nil, err
	}
	req := &Request{Platforms: platforms}
	if len(req.Platforms) == 0 {
		req.Platforms = []string{DefaultPlatform()}
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
			c, err := version.NewConstraint(p.Version)
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
			c, err := version.NewConstraint("= " + pr.Locked.Version)
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
			if mr.Constraints, err = version.NewConstraint(m.Version); err != nil {
				return nil, fmt.Errorf("%s: module %q: version %q: %w", m.Pos, m.Name, m.Version, err)
			}
		}
		req.Modules = append(req.Modules, mr)
	}
	return req, nil
}

// platformsRange is where the top-level platforms attribute is, for errors.
func platformsRange(body hcl.Body) *hcl.Range {
	r := hcl.Range{Filename: body.MissingItemRange().Filename, Start: hcl.Pos{Line: 1, Column: 1}}
	if sb, ok := body.(*hclsyntax.Body); ok && sb.Attributes["platforms"] != nil {
		r = sb.Attributes["platforms"].SrcRange
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
func (r *Request) Empty() bool { return len(r.Providers) == 0 && len(r.Modules) == 0 }
