// Package tfconfig reads what a Terraform/OpenTofu configuration needs:
// required_providers, module calls (with positions, for messages) and the
// dependency lock file. It reads .tf and .tf.json with hashicorp/hcl/v2 and
// evaluates only literal values; it does not run Terraform and does not
// fetch anything.
package tfconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// ProviderReq is one required_providers entry.
type ProviderReq struct {
	LocalName string
	Source    string // as written; "" means hashicorp/<local name>
	Version   string // constraint, may be ""
	Pos       string
}

// ModuleCall is one module block.
type ModuleCall struct {
	Name    string
	Source  string
	Version string
	Pos     string // file:line
	Dir     string // directory of the calling configuration
}

// Config is what one directory (and, with LoadTree, its local modules) needs.
type Config struct {
	Providers []ProviderReq
	Modules   []ModuleCall
}

var rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "terraform"},
	{Type: "module", LabelNames: []string{"name"}},
}}

var terraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}}}

var moduleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "version"}}}

// LoadDir reads the .tf and .tf.json files of one directory.
func LoadDir(dir string) (*Config, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := hclparse.NewParser()
	cfg := &Config{}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") {
			continue
		}
		if strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		var f *hcl.File
		var diags hcl.Diagnostics
		if strings.HasSuffix(n, ".json") {
			f, diags = p.ParseJSONFile(path)
		} else {
			f, diags = p.ParseHCLFile(path)
		}
		if diags.HasErrors() {
			return nil, diags
		}
		content, _, diags := f.Body.PartialContent(rootSchema)
		if diags.HasErrors() {
			return nil, diags
		}
		for _, b := range content.Blocks {
			switch b.Type {
			case "terraform":
				tc, _, diags := b.Body.PartialContent(terraformSchema)
				if diags.HasErrors() {
					return nil, diags
				}
				for _, rp := range tc.Blocks {
					attrs, diags := rp.Body.JustAttributes()
					if diags.HasErrors() {
						return nil, diags
					}
					for name, a := range attrs {
						req, err := providerReq(name, a)
						if err != nil {
							return nil, err
						}
						cfg.Providers = append(cfg.Providers, req)
					}
				}
			case "module":
				mc, _, diags := b.Body.PartialContent(moduleSchema)
				if diags.HasErrors() {
					return nil, diags
				}
				call := ModuleCall{Name: b.Labels[0], Pos: pos(b.DefRange), Dir: dir}
				if a, ok := mc.Attributes["source"]; ok {
					call.Source, _ = literal(a)
				}
				if a, ok := mc.Attributes["version"]; ok {
					call.Version, _ = literal(a)
				}
				cfg.Modules = append(cfg.Modules, call)
			}
		}
	}
	sort.Slice(cfg.Providers, func(i, j int) bool { return cfg.Providers[i].LocalName < cfg.Providers[j].LocalName })
	return cfg, nil
}

func pos(r hcl.Range) string { return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line) }

func literal(a *hcl.Attribute) (string, bool) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

func providerReq(name string, a *hcl.Attribute) (ProviderReq, error) {
	req := ProviderReq{LocalName: name, Pos: pos(a.Range)}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return req, diags
	}
	switch {
	case v.Type() == cty.String:
		req.Version = v.AsString() // legacy: version only
	case v.Type().IsObjectType() || v.Type().IsMapType():
		for k, ev := range v.AsValueMap() {
			if ev.IsNull() || ev.Type() != cty.String {
				continue
			}
			switch k {
			case "source":
				req.Source = ev.AsString()
			case "version":
				req.Version = ev.AsString()
			}
		}
	default:
		return req, fmt.Errorf("%s: required_providers entry %q: not an object", req.Pos, name)
	}
	if req.Source == "" {
		req.Source = "hashicorp/" + name
	}
	return req, nil
}

// IsLocalSource reports whether a module source is a local path.
func IsLocalSource(s string) bool {
	return strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || s == "." || s == ".."
}

// LoadTree reads dir and every local module it calls, recursively.
func LoadTree(dir string) (*Config, error) {
	out := &Config{}
	seen := map[string]bool{}
	var walk func(d string) error
	walk = func(d string) error {
		abs, _ := filepath.Abs(d)
		if seen[abs] {
			return nil
		}
		seen[abs] = true
		c, err := LoadDir(d)
		if err != nil {
			return err
		}
		out.Providers = append(out.Providers, c.Providers...)
		for _, m := range c.Modules {
			if IsLocalSource(m.Source) {
				if err := walk(filepath.Join(d, m.Source)); err != nil {
					return fmt.Errorf("%s: module %q: %w", m.Pos, m.Name, err)
				}
				continue
			}
			out.Modules = append(out.Modules, m)
		}
		return nil
	}
	return out, walk(dir)
}

// LockedProvider is a provider block of .terraform.lock.hcl.
type LockedProvider struct {
	Address     string
	Version     string
	Constraints string
	Hashes      []string
}

// LoadLockFile reads .terraform.lock.hcl; a missing file gives nil, nil.
func LoadLockFile(path string) (map[string]LockedProvider, error) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil, nil
	}
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	if diags.HasErrors() {
		return nil, diags
	}
	content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provider", LabelNames: []string{"address"}}}})
	if diags.HasErrors() {
		return nil, diags
	}
	out := map[string]LockedProvider{}
	for _, b := range content.Blocks {
		attrs, diags := b.Body.JustAttributes()
		if diags.HasErrors() {
			return nil, diags
		}
		lp := LockedProvider{Address: strings.ToLower(b.Labels[0])}
		for k, a := range attrs {
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				return nil, diags
			}
			switch k {
			case "version":
				lp.Version = v.AsString()
			case "constraints":
				lp.Constraints = v.AsString()
			case "hashes":
				for _, h := range v.AsValueSlice() {
					lp.Hashes = append(lp.Hashes, h.AsString())
				}
			}
		}
		out[lp.Address] = lp
	}
	return out, nil
}
