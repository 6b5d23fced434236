package tfconfig

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"

	"github.com/airgap/airgap/dist"
)

// Limits on what one configuration tree may make airgap read.
const (
	// MaxFileSize: bytes in one .tf, .tf.json or lock file. Real module
	// files are kilobytes; generated ones rarely reach a megabyte. It does
	// not bound the parser's memory: HCL's parsers hold 0.6-1.4 KB per
	// token, and 4 MiB of one-byte tokens ("a\n", "[1,1,…]") took export
	// to 1.6-1.75 GB before the file was refused. That bound is
	// dist.AdmitHCL's: at most dist.MaxHCLTokens tokens per file, and
	// once at most one file at the limit, or dist.MaxHCLTokensParsing
	// tokens of smaller files, being parsed in the whole process (one file
	// at the limit: 150-230 MiB of peak resident memory).
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
	// SourceExpr and VersionExpr are the source and version as written
	// (escaped, shortened) when they are expressions rather than literal
	// strings: Terraform ≥ 1.15 evaluates literals and const variables
	// there, OpenTofu ≥ 1.8 variables and locals. LoadProject evaluates
	// them (Source and Version then hold the results); ParseConfig, LoadDir
	// and LoadTreeIn leave Source or Version empty for them.
	SourceExpr, VersionExpr string

	source, version hcl.Expression            // for evaluation, when not literal
	args            map[string]hcl.Expression // the block's other arguments: the child's inputs
	rng             hcl.Range                 // the block's definition
}

// Config is what one directory (and, with LoadTree, its local modules) needs.
type Config struct {
	Providers []ProviderReq
	Modules   []ModuleCall
	// Notes are things worth saying that are not errors (LoadProject: a
	// module source that uses a variable not declared const = true, which
	// OpenTofu evaluates and Terraform ≥ 1.15 refuses).
	Notes []string

	vars   map[string]*variable // variable blocks, for LoadProject
	locals map[string]*local    // locals entries, for LoadProject
}

// variable is a variable block as LoadProject needs it. Only its
// declaration is read when the file is: the type and default are decoded
// when a module source or version uses the variable, so a configuration
// that uses none loads as it always did.
type variable struct {
	name                string
	rng                 hcl.Range
	typ, def            hcl.Expression // nil when absent
	constSet, constTrue bool
	constBad            bool // const is not a literal bool
	sensitive           bool
	override            bool // declared in an override file
	twice               bool // declared twice outside override files
}

// local is one entry of a locals block.
type local struct {
	name  string
	expr  hcl.Expression
	rng   hcl.Range
	twice bool
}

var rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "terraform"},
	{Type: "module", LabelNames: []string{"name"}},
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "locals"},
}}

var variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "type"}, {Name: "default"}, {Name: "const"}, {Name: "sensitive"},
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
	// eval keeps the expressions LoadProject evaluates (variables,
	// locals, module arguments); without it each directory's are dropped
	// once it is read, so a tree keeps no syntax tree of its files.
	eval bool
	// parsed (without eval) is the caller's memory of files read before.
	parsed *Parsed
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
	f, err := openRegular(t.root, rel)
	if errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%s: %w", t.path(rel), err)
	}
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
		c, err := t.parse(src, rel, n)
		if err != nil {
			return nil, err
		}
		for i := range c.Modules {
			c.Modules[i].Dir = t.path(rel)
			c.Modules[i].File = filepath.Join(rel, n)
		}
		cfg.merge(c)
	}
	sort.SliceStable(cfg.Providers, func(i, j int) bool { return cfg.Providers[i].LocalName < cfg.Providers[j].LocalName })
	return cfg, nil
}

// parse reads the file n of directory rel (its bytes src): from the
// tree's Parsed when it read the same bytes under the same name before,
// else parsed (and, without eval, kept there).
func (t *tree) parse(src []byte, rel, n string) (*Config, error) {
	name := t.path(filepath.Join(rel, n))
	if t.eval || t.parsed == nil {
		c, err := parseConfig(src, name, t.eval, nil)
		if err == nil && !t.eval {
			c.dropExprs()
		}
		return c, err
	}
	key := parsedKey{name: name, sum: sha256.Sum256(src)}
	if c, ok := t.parsed.files[key]; ok {
		return c.clone(), nil
	}
	var hook func(*hcl.File)
	if on := t.parsed.OnParse; on != nil {
		dir := filepath.Join(t.base, rel)
		hook = func(f *hcl.File) { on(dir, n, len(src), f) }
	}
	c, err := parseConfig(src, name, false, hook)
	if err != nil {
		return nil, err
	}
	c.dropExprs()
	t.parsed.files[key] = c
	t.parsed.parses++
	return c.clone(), nil
}

// Parsed is what one reader of a module's tree (an export's module job:
// vendoring, the scan of what it needs, its docs) has parsed of its
// configuration files, so that each file is parsed once: LoadDir and
// LoadTreeIn through it take a file read before under the same path with
// the same bytes (sha256) from here. What is kept is each file's
// declarations without syntax trees or expressions (providers and module
// calls: a small part of the file), so memory is bounded by what the tree
// may hold (MaxTreeBytes of files per load), and the parse itself stays
// within dist.AdmitHCL's process-wide budget of tokens. Not safe for
// concurrent use.
type Parsed struct {
	files  map[parsedKey]*Config
	parses int
	// OnParse, when set, is shown each file this Parsed parses, while its
	// syntax tree is alive (and its tokens admitted): the directory's path,
	// the file's name and size, and the tree. Another reader of the same
	// files (a module's docs) decodes what it needs from it instead of
	// parsing the file again. It must not keep f.
	OnParse func(dir, name string, size int, f *hcl.File)
}

type parsedKey struct {
	name string
	sum  [32]byte
}

// NewParsed is an empty Parsed.
func NewParsed() *Parsed { return &Parsed{files: map[parsedKey]*Config{}} }

// Parses is how many files p parsed (a file taken from p is not counted).
func (p *Parsed) Parses() int { return p.parses }

// LoadDir is LoadDir through p.
func (p *Parsed) LoadDir(dir string) (*Config, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return (&tree{root: root, base: dir, parsed: p}).loadDir(".")
}

// LoadTreeIn is LoadTreeIn through p.
func (p *Parsed) LoadTreeIn(within, dir string) (*Config, error) {
	return loadTree(within, dir, nil, p)
}

// clone is a copy of c's lists, for a caller that changes them.
func (c *Config) clone() *Config {
	return &Config{Providers: slices.Clone(c.Providers), Modules: slices.Clone(c.Modules)}
}

// ParseConfig reads one .tf (or, if filename ends in .json, .tf.json) file,
// with the expressions LoadProject evaluates. Module calls' Dir is left
// empty.
func ParseConfig(src []byte, filename string) (*Config, error) {
	return parseConfig(src, filename, true, nil)
}

// parseConfig is ParseConfig; without eval the expressions it keeps are
// not made ready for evaluation (a .tf.json's strings are not parsed as
// templates), since they will be dropped. With eval, a .tf.json's strings
// read as templates are parsed within the file's admission
// (dist.AdmitHCLWithTemplates: their tokens and the file's together at
// most dist.MaxHCLTokens). onParse (may be nil) is shown the syntax tree
// of a file read without error, while it is admitted.
func parseConfig(src []byte, filename string, eval bool, onParse func(*hcl.File)) (cfg *Config, err error) {
	json := strings.HasSuffix(filename, ".json")
	f, release, tmpl, err := parseFile(src, filename, eval && json)
	if err != nil {
		return nil, err
	}
	defer release()
	if onParse != nil {
		// Shown only a file this reading accepted: what onParse does
		// (the docs' decoding) evaluates expressions this reading refuses
		// unevaluated, such as a for expression over literals in a
		// version. Deferred after release, so it runs while admitted.
		defer func() {
			if err == nil {
				onParse(f)
			}
		}()
	}
	content, _, diags := f.Body.PartialContent(rootSchema)
	if diags.HasErrors() {
		return nil, diagErr(diags, filename)
	}
	cfg = &Config{}
	keep := func(e hcl.Expression) hcl.Expression { return e }
	if eval && json {
		keep = func(e hcl.Expression) hcl.Expression { return jsonTemplate(src, e, tmpl) }
		defer func() {
			if tmpl.err != nil {
				cfg, err = nil, tmpl.err
			}
		}()
	}
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
			mc, remain, diags := b.Body.PartialContent(moduleSchema)
			if diags.HasErrors() {
				return nil, diagErr(diags, filename)
			}
			call := ModuleCall{Name: b.Labels[0], Pos: pos(b.DefRange), Line: b.DefRange.Start.Line, rng: b.DefRange}
			// A .tf.json string is read literally by Terraform before 1.15
			// (and kept so here) but as a template by Terraform ≥ 1.15 and
			// OpenTofu: one with a template sequence in it is also kept as
			// an expression, which LoadProject evaluates.
			for _, arg := range []struct {
				name      string
				out, text *string
				expr      *hcl.Expression
			}{{"source", &call.Source, &call.SourceExpr, &call.source}, {"version", &call.Version, &call.VersionExpr, &call.version}} {
				a, ok := mc.Attributes[arg.name]
				if !ok {
					continue
				}
				var lit bool
				*arg.out, lit = literal(a)
				if !lit || json && (strings.Contains(*arg.out, "${") || strings.Contains(*arg.out, "%{")) {
					*arg.expr, *arg.text = keep(a.Expr), exprText(src, a.Expr.Range())
				}
				if arg.name == "source" {
					call.Line = a.Range.Start.Line
				}
			}
			// The other arguments are the child module's inputs; a body
			// with blocks in it still gives its attributes.
			attrs, _ := remain.JustAttributes()
			for name, a := range attrs {
				if call.args == nil {
					call.args = map[string]hcl.Expression{}
				}
				call.args[name] = keep(a.Expr)
			}
			cfg.Modules = append(cfg.Modules, call)
		case "variable":
			v, err := decodeVariable(b, filename)
			if err != nil {
				return nil, err
			}
			cfg.addVariable(v)
		case "locals":
			attrs, diags := b.Body.JustAttributes()
			if diags.HasErrors() {
				return nil, diagErr(diags, filename)
			}
			for name, a := range attrs {
				cfg.addLocal(&local{name: name, expr: keep(a.Expr), rng: a.Range})
			}
		}
	}
	sort.SliceStable(cfg.Providers, func(i, j int) bool { return cfg.Providers[i].LocalName < cfg.Providers[j].LocalName })
	return cfg, nil
}

// decodeVariable reads a variable block's declaration (see variable).
func decodeVariable(b *hcl.Block, filename string) (*variable, error) {
	c, _, diags := b.Body.PartialContent(variableSchema)
	if diags.HasErrors() {
		return nil, diagErr(diags, filename)
	}
	v := &variable{name: b.Labels[0], rng: b.DefRange, override: isOverrideFile(filename)}
	if a, ok := c.Attributes["type"]; ok {
		v.typ = a.Expr
	}
	if a, ok := c.Attributes["default"]; ok {
		v.def = a.Expr
	}
	if a, ok := c.Attributes["const"]; ok {
		v.constSet = true
		val, d := dist.LiteralValue(a.Expr)
		if d.HasErrors() || !val.IsKnown() || val.IsNull() || val.Type() != cty.Bool {
			v.constBad = true
		} else {
			v.constTrue = val.True()
		}
	}
	if a, ok := c.Attributes["sensitive"]; ok {
		val, d := dist.LiteralValue(a.Expr)
		v.sensitive = !d.HasErrors() && val.IsKnown() && !val.IsNull() && val.Type() == cty.Bool && val.True()
	}
	return v, nil
}

// isOverrideFile reports whether a configuration file is an override file
// (override.tf, *_override.tf and their .tf.json forms), whose
// declarations are merged over the others'.
func isOverrideFile(name string) bool {
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(name), ".json"), ".tf")
	return base == "override" || strings.HasSuffix(base, "_override")
}

// addVariable records v; an override file's declaration replaces the
// attributes it sets, a second ordinary declaration is an error when used.
func (c *Config) addVariable(v *variable) {
	if c.vars == nil {
		c.vars = map[string]*variable{}
	}
	old, ok := c.vars[v.name]
	switch {
	case !ok:
		c.vars[v.name] = v
	case v.override:
		if v.typ != nil {
			old.typ = v.typ
		}
		if v.def != nil {
			old.def = v.def
		}
		if v.constSet {
			old.constSet, old.constTrue, old.constBad = true, v.constTrue, v.constBad
		}
		old.sensitive = old.sensitive || v.sensitive
	case old.override:
		c.vars[v.name], v.override = v, false
		c.addVariable(old)
	default:
		old.twice = true
	}
}

// addLocal records l; a name declared twice is an error when used.
func (c *Config) addLocal(l *local) {
	if c.locals == nil {
		c.locals = map[string]*local{}
	}
	if old, ok := c.locals[l.name]; ok {
		old.twice = true
		return
	}
	c.locals[l.name] = l
}

// dropExprs forgets what only LoadProject's evaluation needs: the
// expressions of variables, locals and module arguments, which hold their
// file's syntax tree.
func (c *Config) dropExprs() {
	c.vars, c.locals = nil, nil
	for i := range c.Modules {
		c.Modules[i].source, c.Modules[i].version, c.Modules[i].args = nil, nil, nil
	}
}

// merge adds o's declarations to c (the files of one directory).
func (c *Config) merge(o *Config) {
	c.Providers = append(c.Providers, o.Providers...)
	c.Modules = append(c.Modules, o.Modules...)
	for _, v := range o.vars {
		c.addVariable(v)
	}
	for _, l := range o.locals {
		c.addLocal(l)
	}
}

// jsonTemplate turns a .tf.json string value into the template it stands
// for, as HCL's JSON syntax (and Terraform ≥ 1.15, and OpenTofu) read a
// string where an expression is expected, so that const evaluation checks
// and evaluates it like native syntax. Other JSON values stay as they are
// (evaluated only when they refer to nothing) — unless a string in them
// holds a %{for} directive: HCL evaluates every string of a JSON value as
// a template, and nested %{for}s over literal lists build strings of
// gigabytes from a few hundred bytes, so that string's template stands for
// the value, and const evaluation refuses its for expression.
func jsonTemplate(src []byte, e hcl.Expression, b *templateBudget) hcl.Expression {
	r := e.Range()
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte >= r.End.Byte {
		return e
	}
	pos := hcl.Pos{Line: r.Start.Line, Column: r.Start.Column + 1, Byte: r.Start.Byte + 1}
	var v any
	if json.Unmarshal(src[r.Start.Byte:r.End.Byte], &v) != nil {
		return e
	}
	str, ok := v.(string)
	if !ok {
		if t := forTemplate(v, r.Filename, pos, b); t != nil {
			return t
		}
		return e
	}
	if !b.take(str) {
		return e
	}
	t, diags := hclsyntax.ParseTemplate([]byte(str), r.Filename, pos)
	if diags.HasErrors() {
		return e // evaluating it reports the error
	}
	return t
}

// forTemplate is the template of the first string in v (a decoded JSON
// value: its keys and its strings) that holds a for directive, or nil.
func forTemplate(v any, filename string, pos hcl.Pos, b *templateBudget) hcl.Expression {
	check := func(s string) hcl.Expression {
		if !strings.Contains(s, "%{") || !b.take(s) {
			return nil
		}
		t, diags := hclsyntax.ParseTemplate([]byte(s), filename, pos)
		if !diags.HasErrors() && dist.NoForExpr(t).HasErrors() {
			return t
		}
		return nil
	}
	switch x := v.(type) {
	case string:
		return check(x)
	case []any:
		for _, e := range x {
			if t := forTemplate(e, filename, pos, b); t != nil {
				return t
			}
		}
	case map[string]any:
		for k, e := range x {
			if t := check(k); t != nil {
				return t
			}
			if t := forTemplate(e, filename, pos, b); t != nil {
				return t
			}
		}
	}
	return nil
}

// exprText is an expression as written, for messages: whitespace runs
// folded to one space, at most 120 characters, escaped.
func exprText(src []byte, r hcl.Range) string {
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte >= r.End.Byte {
		return "(expression)"
	}
	text := strings.Join(strings.Fields(string(src[r.Start.Byte:r.End.Byte])), " ")
	if len(text) > 120 {
		text = text[:117] + "…"
	}
	return dist.Printable(text)
}

// parseFile parses HCL, or JSON when filename ends in .json, once
// dist.AdmitHCL lets it (token count, nesting, the process-wide budget of
// tokens being parsed) — with templates, dist.AdmitHCLWithTemplates, and
// tmpl is what the file's strings may then spend on being parsed as
// templates. The caller calls release when it is done with the file's
// syntax tree.
func parseFile(src []byte, filename string, templates bool) (f *hcl.File, release func(), tmpl *templateBudget, err error) {
	tmpl = &templateBudget{file: filename}
	if templates {
		release, tmpl.left, err = dist.AdmitHCLWithTemplates(src, filename)
	} else {
		release, err = dist.AdmitHCL(src, filename)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w: %w", dist.Printable(filename), ErrTooLarge, err)
	}
	var diags hcl.Diagnostics
	if strings.HasSuffix(filename, ".json") {
		f, diags = hcljson.Parse(src, filename)
	} else {
		f, diags = dist.ParseHCL(src, filename)
	}
	if diags.HasErrors() {
		release()
		return nil, nil, nil, diagErr(diags, filename)
	}
	return f, release, tmpl, nil
}

// templateBudget is what the strings of one .tf.json may spend, in
// tokens, on being parsed as templates.
type templateBudget struct {
	file string
	left int
	err  error // the first string over it
}

// take spends s's tokens (dist.HCLTemplateTokens), or reports that they
// are over the budget (and sets b.err).
func (b *templateBudget) take(s string) bool {
	if b.err != nil {
		return false
	}
	if b.left -= dist.HCLTemplateTokens([]byte(s)); b.left < 0 {
		b.err = fmt.Errorf("%s: %w: its strings, read as templates, have more tokens than %d with the file's own\nhint: a .tf.json whose strings are this dense is not a real configuration; split it into several files", dist.Printable(b.file), ErrTooLarge, dist.MaxHCLTokens)
		return false
	}
	return true
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
	v, diags := dist.LiteralValue(a.Expr)
	if diags.HasErrors() {
		return "", false
	}
	return str(v)
}

func providerReq(name string, a *hcl.Attribute) (ProviderReq, error) {
	req := ProviderReq{LocalName: name, Pos: pos(a.Range)}
	v, diags := dist.LiteralValue(a.Expr)
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
// within, so symlinks do not lead out either. Module sources and versions
// that are expressions are not evaluated (their values come from the
// callers): such calls keep an empty Source or Version and their
// SourceExpr or VersionExpr.
func LoadTreeIn(within, dir string) (*Config, error) { return loadTree(within, dir, nil, nil) }

// LoadProject reads the project in dir and every local module it calls as
// 'terraform init' (1.15+) and 'tofu init' (1.8+) do: module sources and
// versions that are expressions are evaluated from literals, variables
// and locals (see evaluator). The root module's variables take their values
// from in, the project's terraform.tfvars and *.auto.tfvars files and
// their defaults, a local module's from the arguments of the module block
// that calls it (one directory called with different values is walked once
// for each). A source or version that is not known at init is an error
// (ErrNotConst) naming the file:line:col, the module, the expression as
// written and why. Uses of variables not declared const = true, which
// OpenTofu evaluates and Terraform refuses, are in Config.Notes.
func LoadProject(dir string, in Inputs) (*Config, error) { return loadTree(dir, dir, &in, nil) }

// loadTree is LoadTreeIn (through parsed, if not nil), and LoadProject
// when in is set.
func loadTree(within, dir string, in *Inputs, memo *Parsed) (*Config, error) {
	rel, err := filepath.Rel(within, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("%s: %w: not inside %s", dir, ErrOutside, within)
	}
	root, err := os.OpenRoot(within)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	t := &tree{root: root, base: within, eval: in != nil, parsed: memo}
	var ev *evaluator
	if in != nil {
		ev = &evaluator{t: t, in: *in, funcs: constFuncs}
	}
	out := &Config{}
	type visit struct {
		fi  fs.FileInfo
		key string // instanceKey: the values its sources depend on
	}
	var seen []visit
	parsed := map[string]*Config{}
	var walk func(rel string, call *ModuleCall, parent *scope) error
	walk = func(rel string, call *ModuleCall, parent *scope) error {
		fi, err := root.Stat(rel)
		if err != nil {
			return t.fail(rel, err)
		}
		c := parsed[rel]
		if c == nil {
			if c, err = t.loadDir(rel); err != nil {
				return err
			}
			parsed[rel] = c
		}
		var s *scope
		key := ""
		if ev != nil {
			s = ev.newScope(c, filepath.ToSlash(rel), call, parent)
			if parent == nil {
				if err := checkVarArgs(in.Vars, c); err != nil {
					return err
				}
			}
			if key, err = s.instanceKey(); err != nil {
				return err
			}
		}
		for _, v := range seen {
			if v.key == key && os.SameFile(v.fi, fi) {
				return nil
			}
		}
		if seen = append(seen, visit{fi, key}); len(seen) > MaxLocalModules {
			return fmt.Errorf("%w: more than %d local module directories", ErrTooLarge, MaxLocalModules)
		}
		out.Providers = append(out.Providers, c.Providers...)
		for _, m := range c.Modules {
			if s != nil {
				if err := s.resolve(&m); err != nil {
					return err
				}
			}
			if !IsLocalSource(m.Source) {
				out.Modules = append(out.Modules, m)
				continue
			}
			next := filepath.Join(rel, filepath.FromSlash(m.Source))
			if !filepath.IsLocal(next) && next != "." {
				return fmt.Errorf("%s: module %q: source %q: %w (%s)"+outsideHint, m.Pos, m.Name, m.Source, ErrOutside, within)
			}
			if err := walk(next, &m, s); err != nil {
				return fmt.Errorf("%s: module %q: source %q: %w", m.Pos, m.Name, m.Source, err)
			}
		}
		return nil
	}
	if err := walk(rel, nil, nil); err != nil {
		return nil, err
	}
	if ev != nil {
		out.Notes = ev.notes
	}
	return out, nil
}

// checkVarArgs refuses a --var for a variable the root module does not
// declare, as terraform's -var does.
func checkVarArgs(vars []VarArg, root *Config) error {
	for _, a := range vars {
		if _, ok := root.vars[a.Name]; a.File == "" && !ok {
			return fmt.Errorf("--var %s: the project declares no variable %q\nhint: --var sets a variable of the root module (a variable block in the --from directory)", dist.Printable(a.Name), dist.Printable(a.Name))
		}
	}
	return nil
}

const outsideHint = "\nhint: local module calls are followed only inside the project (or, in a downloaded module, its own package); copy the module in, or publish it to a registry"

// LockedProvider is a provider block of .terraform.lock.hcl.
type LockedProvider struct {
	Address     string
	Version     string
	Constraints string
	Hashes      []string
}

// openRegular opens rel in root if it is a regular file (a symlink within
// root to one included): opening a named pipe would wait for a writer for
// ever, and a project or module can hold one (mkfifo needs no privilege).
func openRegular(root *os.Root, rel string) (*os.File, error) {
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		what := "a special file"
		switch t := fi.Mode().Type(); {
		case t&fs.ModeNamedPipe != 0:
			what = "a named pipe"
		case t&fs.ModeDevice != 0:
			what = "a device"
		case t&fs.ModeSocket != 0:
			what = "a socket"
		case t&fs.ModeDir != 0:
			what = "a directory"
		}
		return nil, fmt.Errorf("%w: it is %s", ErrNotRegular, what)
	}
	return root.Open(rel)
}

// LoadLockFile reads .terraform.lock.hcl; a missing file gives nil, nil.
// It is read within its directory, like the configuration: a symlink out
// of it, or anything but a regular file, is an error.
func LoadLockFile(path string) (map[string]LockedProvider, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := openRegular(root, filepath.Base(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dist.Printable(path), err)
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
	release, err := dist.AdmitHCL(src, filename)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", dist.Printable(filename), ErrTooLarge, err)
	}
	defer release()
	f, diags := dist.ParseHCL(src, filename)
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
			v, diags := dist.LiteralValue(a.Expr)
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
