package tfconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/airgap/airgap/dist"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// Limits on what one configuration tree may make airgap read.
const (
	// MaxFileSize: bytes in one .tf, .tf.json or lock file. Real module
	// files are kilobytes; generated ones rarely reach a megabyte. HCL
	// parsing allocates up to ~60 times the input for dense syntax, so
	// this also bounds the parser's memory per file (~250 MiB).
	MaxFileSize = 4 << 20
	// MaxTreeBytes: bytes of configuration files read for one tree (the
	// parse of a hostile 64 MiB tree measured 41 s and 4 GiB allocated;
	// 16 MiB keeps that to about 10 s).
	MaxTreeBytes = 16 << 20
	// MaxFilesPerDir: .tf and .tf.json files in one directory.
	MaxFilesPerDir = 10_000
	// MaxLocalModules: directories one tree may visit through local calls.
	MaxLocalModules = 1000
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
	// File is the calling file's path relative to the tree LoadTreeIn was
	// given (unescaped; empty from ParseConfig), Line the line of the
	// source argument (of the block if it has none).
	File string
	Line int
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

// at formats an error at a source position: file:line:col: message.
func at(r hcl.Range, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: %w: %s", dist.Printable(r.Filename), r.Start.Line, r.Start.Column, ErrMalformed, dist.Printable(fmt.Sprintf(format, args...)))
}

// diagErr turns the first error of diags into file:line:col: summary; detail.
func diagErr(diags hcl.Diagnostics, file string) error {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			return at(*d.Subject, "%s", msg)
		}
		return fmt.Errorf("%s: %w: %s", dist.Printable(file), ErrMalformed, dist.Printable(msg))
	}
	return nil
}

// str is v as a string, if it is a known, non-null string.
func str(v cty.Value) (string, bool) {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// tree reads configuration directories through an os.Root, within budget.
type tree struct {
	root  *os.Root
	base  string // the root's path, for messages
	bytes int64
}

// path is rel for messages: names come from downloaded modules, so control
// characters are escaped (dist.Printable).
func (t *tree) path(rel string) string { return dist.Printable(filepath.Join(t.base, rel)) }

// fail reports that rel could not be opened inside the tree: missing, or
// refused by os.Root because a symlink on the way leads out.
func (t *tree) fail(rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) { // missing, not a directory, permissions…
		return fmt.Errorf("%s: %v", t.path(rel), err)
	}
	// os.Root's own refusal (not an errno): a link on the way leads out.
	return fmt.Errorf("%s: %w: a symlink leads out of %s (%v)"+outsideHint, t.path(rel), ErrOutside, dist.Printable(t.base), err)
}

// readFile reads rel (at most MaxFileSize bytes, within the tree's budget).
func (t *tree) readFile(rel string) ([]byte, error) {
	f, err := t.root.Open(rel)
	if err != nil {
		return nil, t.fail(rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, t.fail(rel, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", t.path(rel), ErrTooLarge, MaxFileSize)
	}
	if t.bytes += int64(len(b)); t.bytes > MaxTreeBytes {
		return nil, fmt.Errorf("%s: %w: the configuration reaches more than %d bytes of files", t.path(rel), ErrTooLarge, MaxTreeBytes)
	}
	return b, nil
}

// loadDir reads the .tf and .tf.json files of rel, a directory in the tree.
func (t *tree) loadDir(rel string) (*Config, error) {
	d, err := t.root.Open(rel)
	if err != nil {
		return nil, t.fail(rel, err)
	}
	var names []string
	for {
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")) {
				continue
			}
			if names = append(names, n); len(names) > MaxFilesPerDir {
				d.Close()
				return nil, fmt.Errorf("%s: %w: more than %d configuration files", t.path(rel), ErrTooLarge, MaxFilesPerDir)
			}
		}
		if err == io.EOF || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			d.Close()
			return nil, t.fail(rel, err)
		}
	}
	d.Close()
	sort.Strings(names)
	cfg := &Config{}
	for _, n := range names {
		src, err := t.readFile(filepath.Join(rel, n))
		if err != nil {
			return nil, err
		}
		c, err := ParseConfig(src, t.path(filepath.Join(rel, n)))
		if err != nil {
			return nil, err
		}
		for i := range c.Modules {
			c.Modules[i].Dir = t.path(rel)
			c.Modules[i].File = filepath.Join(rel, n)
		}
		cfg.Providers = append(cfg.Providers, c.Providers...)
		cfg.Modules = append(cfg.Modules, c.Modules...)
	}
	sort.SliceStable(cfg.Providers, func(i, j int) bool { return cfg.Providers[i].LocalName < cfg.Providers[j].LocalName })
	return cfg, nil
}

// ParseConfig reads one .tf (or, if filename ends in .json, .tf.json) file.
// Module calls' Dir is left empty.
func ParseConfig(src []byte, filename string) (*Config, error) {
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(filename, ".json") {
		f, diags = hcljson.Parse(src, filename)
	} else {
		f, diags = hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, diagErr(diags, filename)
	}
	content, _, diags := f.Body.PartialContent(rootSchema)
	if diags.HasErrors() {
		return nil, diagErr(diags, filename)
	}
	cfg := &Config{}
	for _, b := range content.Blocks {
		switch b.Type {
		case "terraform":
			tc, _, diags := b.Body.PartialContent(terraformSchema)
			if diags.HasErrors() {
				return nil, diagErr(diags, filename)
			}
			for _, rp := range tc.Blocks {
				attrs, diags := rp.Body.JustAttributes()
				if diags.HasErrors() {
					return nil, diagErr(diags, filename)
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
				return nil, diagErr(diags, filename)
			}
			call := ModuleCall{Name: b.Labels[0], Pos: pos(b.DefRange), Line: b.DefRange.Start.Line}
			if a, ok := mc.Attributes["source"]; ok {
				call.Source, _ = literal(a)
				call.Line = a.Range.Start.Line
			}
			if a, ok := mc.Attributes["version"]; ok {
				call.Version, _ = literal(a)
			}
			cfg.Modules = append(cfg.Modules, call)
		}
	}
	sort.SliceStable(cfg.Providers, func(i, j int) bool { return cfg.Providers[i].LocalName < cfg.Providers[j].LocalName })
	return cfg, nil
}

// LoadDir reads the .tf and .tf.json files of one directory.
func LoadDir(dir string) (*Config, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return (&tree{root: root, base: dir}).loadDir(".")
}

// pos is file:line for messages, the file name escaped (dist.Printable).
func pos(r hcl.Range) string { return fmt.Sprintf("%s:%d", dist.Printable(r.Filename), r.Start.Line) }

func literal(a *hcl.Attribute) (string, bool) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return "", false
	}
	return str(v)
}

func providerReq(name string, a *hcl.Attribute) (ProviderReq, error) {
	req := ProviderReq{LocalName: name, Pos: pos(a.Range)}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return req, diagErr(diags, a.Range.Filename)
	}
	switch {
	case !v.IsKnown() || v.IsNull():
		return req, at(a.Expr.Range(), "required_providers entry %q: not an object", name)
	case v.Type() == cty.String:
		req.Version = v.AsString() // legacy: version only
	case v.Type().IsObjectType() || v.Type().IsMapType():
		for k, ev := range v.AsValueMap() {
			if k != "source" && k != "version" {
				continue
			}
			s, ok := str(ev)
			if !ok {
				return req, at(a.Expr.Range(), "required_providers entry %q: %s must be a string", name, k)
			}
			if k == "source" {
				req.Source = s
			} else {
				req.Version = s
			}
		}
	default:
		return req, at(a.Expr.Range(), "required_providers entry %q: not an object", name)
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

// LoadTree reads dir and every local module it calls, recursively, inside
// dir (see LoadTreeIn).
func LoadTree(dir string) (*Config, error) { return LoadTreeIn(dir, dir) }

// LoadTreeIn reads dir and every local module it calls, recursively. dir
// and every local call must stay inside within (the project, or a
// downloaded module's package); everything is read through an os.Root on
// within, so symlinks do not lead out either.
func LoadTreeIn(within, dir string) (*Config, error) {
	rel, err := filepath.Rel(within, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("%s: %w: not inside %s", dir, ErrOutside, within)
	}
	root, err := os.OpenRoot(within)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	t := &tree{root: root, base: within}
	out := &Config{}
	var seen []fs.FileInfo
	var walk func(rel string) error
	walk = func(rel string) error {
		fi, err := root.Stat(rel)
		if err != nil {
			return t.fail(rel, err)
		}
		for _, s := range seen {
			if os.SameFile(s, fi) {
				return nil
			}
		}
		if seen = append(seen, fi); len(seen) > MaxLocalModules {
			return fmt.Errorf("%w: more than %d local module directories", ErrTooLarge, MaxLocalModules)
		}
		c, err := t.loadDir(rel)
		if err != nil {
			return err
		}
		out.Providers = append(out.Providers, c.Providers...)
		for _, m := range c.Modules {
			if !IsLocalSource(m.Source) {
				out.Modules = append(out.Modules, m)
				continue
			}
			next := filepath.Join(rel, filepath.FromSlash(m.Source))
			if !filepath.IsLocal(next) && next != "." {
				return fmt.Errorf("%s: module %q: source %q: %w (%s)"+outsideHint, m.Pos, m.Name, m.Source, ErrOutside, within)
			}
			if err := walk(next); err != nil {
				return fmt.Errorf("%s: module %q: source %q: %w", m.Pos, m.Name, m.Source, err)
			}
		}
		return nil
	}
	if err := walk(rel); err != nil {
		return nil, err
	}
	return out, nil
}

const outsideHint = "\nhint: local module calls are followed only inside the project (or, in a downloaded module, its own package); copy the module in, or publish it to a registry"

// LockedProvider is a provider block of .terraform.lock.hcl.
type LockedProvider struct {
	Address     string
	Version     string
	Constraints string
	Hashes      []string
}

// LoadLockFile reads .terraform.lock.hcl; a missing file gives nil, nil.
func LoadLockFile(path string) (map[string]LockedProvider, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(src) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrTooLarge, MaxFileSize)
	}
	return ParseLockFile(src, path)
}

var lockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provider", LabelNames: []string{"address"}}}}

// ParseLockFile reads the text of a .terraform.lock.hcl.
func ParseLockFile(src []byte, filename string) (map[string]LockedProvider, error) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagErr(diags, filename)
	}
	content, _, diags := f.Body.PartialContent(lockSchema)
	if diags.HasErrors() {
		return nil, diagErr(diags, filename)
	}
	out := map[string]LockedProvider{}
	for _, b := range content.Blocks {
		attrs, diags := b.Body.JustAttributes()
		if diags.HasErrors() {
			return nil, diagErr(diags, filename)
		}
		lp := LockedProvider{Address: strings.ToLower(b.Labels[0])}
		for k, a := range attrs {
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				return nil, diagErr(diags, filename)
			}
			var ok bool
			switch k {
			case "version":
				lp.Version, ok = str(v)
			case "constraints":
				lp.Constraints, ok = str(v)
			case "hashes":
				ok = v.IsKnown() && !v.IsNull() && (v.Type().IsListType() || v.Type().IsTupleType())
				if ok {
					for it := v.ElementIterator(); ok && it.Next(); {
						_, h := it.Element()
						var s string
						s, ok = str(h)
						lp.Hashes = append(lp.Hashes, s)
					}
				}
				if !ok {
					return nil, at(a.Expr.Range(), "provider %q: hashes must be a list of strings", b.Labels[0])
				}
				continue
			default:
				continue
			}
			if !ok {
				return nil, at(a.Expr.Range(), "provider %q: %s must be a string", b.Labels[0], k)
			}
		}
		out[lp.Address] = lp
	}
	return out, nil
}
