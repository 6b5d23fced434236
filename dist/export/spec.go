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

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/tfconfig"
)

// Request is what to export.
type Request struct {
	Platforms []string
	Providers []ProviderReq
	Modules   []ModuleReq
	NoDeps    bool
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
	Remain    hcl.Body       `hcl:",remain"`
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

func checkPlatforms(ps []string, r hcl.Range) error {
	for _, p := range ps {
		o, a, ok := strings.Cut(p, "_")
		if !ok || !dist.ValidPlatformPart(o) || !dist.ValidPlatformPart(a) {
			return rangeErr(r, "invalid platform %q: want os_arch, e.g. linux_amd64", p)
		}
	}
	return nil
}

// ParseSpec reads an HCL export manifest. Errors name file:line:col.
func ParseSpec(path string, cliPlatforms []string) (*Request, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diags
	}
	var sf specFile
	if diags := gohcl.DecodeBody(f.Body, nil, &sf); diags.HasErrors() {
		return nil, diags
	}
	if attrs, _ := sf.Remain.JustAttributes(); len(attrs) > 0 {
		for _, a := range attrs {
			return nil, rangeErr(a.Range, "unknown setting %q (want platforms, provider and module blocks)", a.Name)
		}
	}
	req := &Request{Platforms: sf.Platforms}
	if len(cliPlatforms) > 0 {
		req.Platforms = cliPlatforms
	}
	if len(req.Platforms) == 0 {
		req.Platforms = []string{DefaultPlatform()}
	}
	if err := checkPlatforms(req.Platforms, hcl.Range{Filename: path, Start: hcl.Pos{Line: 1, Column: 1}}); err != nil {
		return nil, err
	}
	for _, p := range sf.Providers {
		addr, err := dist.ParseProviderSource(p.Source)
		if err != nil {
			return nil, rangeErr(p.DefRange, "%v", err)
		}
		pr := ProviderReq{Addr: addr, Latest: 1, Platforms: p.Platforms, Why: fmt.Sprintf("%s:%d", path, p.DefRange.Start.Line)}
		if err := checkPlatforms(p.Platforms, p.DefRange); err != nil {
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
