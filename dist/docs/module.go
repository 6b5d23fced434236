package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/hashicorp/terraform-config-inspect/tfconfig"

	"github.com/airgap/airgap/dist"
)

// maxModuleConfig bounds the configuration files of one module directory
// that inspect reads (each whole, one at a time).
const maxModuleConfig = 16 << 20

// ModuleDocs reads the documentation of the module at dir (slash path,
// "." for the root) of the tree root: its README and, with
// terraform-config-inspect, its inputs, outputs and required providers,
// and those of each module under dir/modules/ (at most
// dist.MaxModuleSubmodules). Everything is read through root (os.Root:
// links stay inside the tree). Bounds: the README is cut at
// dist.MaxModuleReadme bytes; a directory whose configuration files
// (.tf, .tf.json) add up to more than 16 MiB, or that has a file over
// dist.MaxHCLTokens tokens, is refused rather than parsed (inspect);
// the document is at most dist.MaxModuleDocs bytes, and reading stops once
// the inputs and outputs read so far pass that. Memory: the configuration
// of one file at a time, parsed within the process-wide budget of tokens
// (dist.AdmitHCL), plus the module decoded so far and the document.
func ModuleDocs(root *os.Root, dir string) ([]byte, error) { return ModuleDocsFrom(root, dir, nil) }

// ModuleDocsFrom is ModuleDocs taking each directory's inputs, outputs
// and providers from p (may be nil) where another reader of the tree
// already parsed all of its configuration files and showed them to p:
// those files are not parsed again.
func ModuleDocsFrom(root *os.Root, dir string, p *Parsed) ([]byte, error) {
	dir = path.Clean(dir)
	md := dist.ModuleDocs{Inputs: []dist.ModuleInput{}, Outputs: []dist.ModuleOutput{}, Providers: []dist.ModuleProvider{}, Submodules: []dist.ModuleSubmodule{}}
	mod, err := inspect(root, dir, p)
	if err != nil {
		return nil, err
	}
	md.Inputs, md.Outputs = inputs(mod), outputs(mod)
	size := docsSize(md.Inputs, md.Outputs)
	for name, p := range mod.RequiredProviders {
		md.Providers = append(md.Providers, dist.ModuleProvider{Name: name, Source: p.Source, Versions: strings.Join(p.VersionConstraints, ", ")})
	}
	sort.Slice(md.Providers, func(i, j int) bool { return md.Providers[i].Name < md.Providers[j].Name })
	md.Readme, md.ReadmeCut = readme(root, dir)
	subs, _ := fs.ReadDir(root.FS(), path.Join(dir, "modules"))
	for _, s := range subs {
		if !s.IsDir() || len(md.Submodules) >= dist.MaxModuleSubmodules {
			continue
		}
		sp := path.Join(dir, "modules", s.Name())
		sm, err := inspect(root, sp, p)
		if err != nil || !tfconfig.IsModuleDirOnFilesystem(tfconfig.WrapFS(root.FS()), sp) {
			continue
		}
		rel := strings.TrimPrefix(sp, dir+"/")
		sub := dist.ModuleSubmodule{Path: rel, Inputs: inputs(sm), Outputs: outputs(sm)}
		if size += docsSize(sub.Inputs, sub.Outputs); size > dist.MaxModuleDocs {
			return nil, fmt.Errorf("the module's documentation is over %s", dist.HumanSize(dist.MaxModuleDocs))
		}
		md.Submodules = append(md.Submodules, sub)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(md); err != nil {
		return nil, err
	}
	if b.Len() > dist.MaxModuleDocs {
		return nil, fmt.Errorf("the module's documentation is %s, over %s", dist.HumanSize(int64(b.Len())), dist.HumanSize(dist.MaxModuleDocs))
	}
	return b.Bytes(), nil
}

// inspect reads the module in dir with terraform-config-inspect's decoder
// (LoadModuleFromFile), reading and parsing its files itself, one at a
// time, each only once dist.AdmitHCL lets it (token count and nesting
// before anything is parsed, then the process-wide budget of tokens being
// parsed): terraform-config-inspect's LoadModuleFromFilesystem reads and
// parses every file of the directory with no bound, keeps all their
// syntax trees until the end, and when one does not parse parses them all
// again with the legacy HCL 1 parser. The files are regular files read
// through root, at most maxModuleConfig bytes together; what stays of
// each once it is decoded is the module's inputs, outputs and providers.
// A directory p saw whole (every file of names, in this order, within
// maxModuleConfig) is taken from p instead.
func inspect(root *os.Root, dir string, p *Parsed) (*tfconfig.Module, error) {
	names, err := configFiles(root, dir)
	if err != nil {
		return nil, err
	}
	mod := p.take(dir, names)
	var total int64
	if mod != nil {
		names = nil
	} else {
		mod = tfconfig.NewModule(dir)
	}
	for _, n := range names {
		src, err := readConfig(root, n, maxModuleConfig-total)
		if err != nil {
			return nil, err
		}
		if total += int64(len(src)); total > maxModuleConfig {
			return nil, fmt.Errorf("%q holds over %s of configuration", dist.Printable(dir), dist.HumanSize(maxModuleConfig))
		}
		if err := decodeFile(mod, src, n); err != nil {
			return nil, err
		}
	}
	// What LoadModuleFromFilesystem adds after decoding: the providers
	// that resources imply.
	for _, rs := range []map[string]*tfconfig.Resource{mod.ManagedResources, mod.DataResources} {
		for _, r := range rs {
			if _, ok := mod.RequiredProviders[r.Provider.Name]; !ok {
				mod.RequiredProviders[r.Provider.Name] = &tfconfig.ProviderRequirement{}
			}
		}
	}
	return mod, nil
}

// Parsed gathers what ModuleDocsFrom reads of a module's directories from
// the syntax trees another reader of the same tree parses (tfconfig.Parsed's
// OnParse is its File): the directory of the module's docs and those under
// its modules/ (at most dist.MaxModuleSubmodules of them), each decoded as
// inspect decodes it, file by file. It keeps no syntax tree: what stays is
// each directory's decoded module, as inspect keeps it. Not safe for
// concurrent use.
type Parsed struct {
	root, dir string // the tree's path and the module's directory in it (slash)
	dirs      map[string]*parsedDir
}

type parsedDir struct {
	names []string // slash paths in the tree, in the order seen
	size  int64
	mod   *tfconfig.Module
}

// NewParsed gathers for the docs of the module at dir (slash path) of the
// tree at path root.
func NewParsed(root, dir string) *Parsed {
	return &Parsed{root: filepath.Clean(root), dir: path.Clean(dir), dirs: map[string]*parsedDir{}}
}

// File decodes f, the file name of directory dir (an OS path), of size
// bytes, if dir is one ModuleDocsFrom reads. A name seen again (a file
// vendoring rewrote, parsed again) is not decoded twice: vendoring changes
// only module sources, which the docs do not show.
func (p *Parsed) File(dir, name string, size int, f *hcl.File) {
	rel, err := filepath.Rel(p.root, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return
	}
	rel = filepath.ToSlash(rel)
	if rel != p.dir && path.Dir(rel) != path.Join(p.dir, "modules") {
		return
	}
	d := p.dirs[rel]
	if d == nil {
		if len(p.dirs) > dist.MaxModuleSubmodules {
			return
		}
		d = &parsedDir{mod: tfconfig.NewModule(rel)}
		p.dirs[rel] = d
	}
	n := path.Join(rel, name)
	if slices.Contains(d.names, n) {
		return
	}
	d.names = append(d.names, n)
	if d.size += int64(size); d.size > maxModuleConfig {
		return // inspect reads it itself, and refuses it
	}
	if !expands(f) {
		tfconfig.LoadModuleFromFile(f, d.mod)
	}
}

// take is the module of dir if p saw exactly names, in this order (nil
// otherwise, or for a nil p).
func (p *Parsed) take(dir string, names []string) *tfconfig.Module {
	if p == nil {
		return nil
	}
	d := p.dirs[dir]
	if d == nil || d.size > maxModuleConfig || !slices.Equal(d.names, names) {
		return nil
	}
	return d.mod
}

// decodeFile parses one configuration file (within dist.AdmitHCL's
// bounds) and decodes it into mod; a file that does not parse adds what
// its parsed part holds, as terraform-config-inspect's loader does.
func decodeFile(mod *tfconfig.Module, src []byte, name string) error {
	release, err := dist.AdmitHCL(src, name)
	if err != nil {
		return err
	}
	defer release()
	var f *hcl.File
	if strings.HasSuffix(name, ".json") {
		f, _ = hcljson.Parse(src, name)
	} else {
		f, _ = dist.ParseHCL(src, name)
	}
	if f != nil && !expands(f) {
		tfconfig.LoadModuleFromFile(f, mod)
	}
	return nil
}

// configFiles lists the configuration files of dir as
// terraform-config-inspect does: .tf and .tf.json, not hidden nor editor
// backups, override files last.
func configFiles(root *os.Root, dir string) ([]string, error) {
	ents, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return nil, err
	}
	var primary, override []string
	for _, e := range ents {
		n := e.Name()
		ext := ".tf"
		if strings.HasSuffix(n, ".tf.json") {
			ext = ".tf.json"
		}
		if e.IsDir() || !strings.HasSuffix(n, ext) || strings.HasPrefix(n, ".") || strings.HasSuffix(n, "~") || strings.HasPrefix(n, "#") && strings.HasSuffix(n, "#") {
			continue
		}
		if base := strings.TrimSuffix(n, ext); base == "override" || strings.HasSuffix(base, "_override") {
			override = append(override, path.Join(dir, n))
		} else {
			primary = append(primary, path.Join(dir, n))
		}
	}
	return append(primary, override...), nil
}

// readConfig reads the regular file name through root, at most limit
// bytes (one more shows it is over).
func readConfig(root *os.Root, name string, limit int64) ([]byte, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", dist.Printable(name))
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// docsSize is about the bytes ins and outs take in the document: their
// strings' (the JSON adds names and punctuation).
func docsSize(ins []dist.ModuleInput, outs []dist.ModuleOutput) int {
	n := 0
	for _, in := range ins {
		n += len(in.Name) + len(in.Type) + len(in.Description) + len(in.Default)
	}
	for _, o := range outs {
		n += len(o.Name) + len(o.Description)
	}
	return n
}

func inputs(mod *tfconfig.Module) []dist.ModuleInput {
	out := []dist.ModuleInput{}
	for _, v := range mod.Variables {
		in := dist.ModuleInput{Name: v.Name, Type: v.Type, Description: v.Description, Required: v.Required, Sensitive: v.Sensitive}
		if !v.Required {
			if b, err := json.Marshal(v.Default); err == nil {
				in.Default = string(b)
			}
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func outputs(mod *tfconfig.Module) []dist.ModuleOutput {
	out := []dist.ModuleOutput{}
	for _, o := range mod.Outputs {
		out = append(out, dist.ModuleOutput{Name: o.Name, Description: o.Description, Sensitive: o.Sensitive})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// readme is the README of dir (README.md, any case), cut at
// dist.MaxModuleReadme bytes.
func readme(root *os.Root, dir string) (string, bool) {
	ents, _ := fs.ReadDir(root.FS(), dir)
	for _, e := range ents {
		if !strings.EqualFold(e.Name(), "README.md") && !strings.EqualFold(e.Name(), "README") {
			continue
		}
		f, err := root.Open(path.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(f, dist.MaxModuleReadme+1))
		f.Close()
		cut := len(b) > dist.MaxModuleReadme
		if cut {
			b = b[:dist.MaxModuleReadme]
		}
		return strings.ToValidUTF8(string(b), "\uFFFD"), cut
	}
	return "", false
}

// ParseModuleDocs reads a module documentation blob, bounded by
// dist.MaxModuleDocs.
func ParseModuleDocs(r io.Reader) (*dist.ModuleDocs, error) {
	b, err := io.ReadAll(io.LimitReader(r, dist.MaxModuleDocs+1))
	if err != nil {
		return nil, err
	}
	if len(b) > dist.MaxModuleDocs {
		return nil, fmt.Errorf("%w: module documentation over %d bytes", ErrInvalid, dist.MaxModuleDocs)
	}
	var md dist.ModuleDocs
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("%w: module documentation: %v", ErrInvalid, err)
	}
	if len(md.Readme) > dist.MaxModuleReadme || len(md.Submodules) > dist.MaxModuleSubmodules {
		return nil, fmt.Errorf("%w: module documentation out of bounds", ErrInvalid)
	}
	return &md, nil
}

// expands reports whether a value terraform-config-inspect evaluates in f
// (a variable's default, description, nullable and sensitive; an output's
// description and sensitive; a provider's alias and version; a module
// call's source and version; anything in a terraform block) holds a for
// expression or a splat: a few hundred bytes of nested for expressions
// over literals evaluate to gigabytes (20^6 strings). Such a file is left
// out of the docs — its inputs and outputs are not listed — rather than
// evaluated. JSON files are read with no evaluation context, so their
// strings stay literal and never expand.
func expands(f *hcl.File) bool {
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return false
	}
	found := false
	check := func(attrs hclsyntax.Attributes, only ...string) {
		for name, a := range attrs {
			if len(only) > 0 && !slices.Contains(only, name) {
				continue
			}
			hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
				switch n.(type) {
				case *hclsyntax.ForExpr, *hclsyntax.SplatExpr:
					found = true
				}
				return nil
			})
		}
	}
	for _, b := range body.Blocks {
		switch b.Type {
		case "variable":
			check(b.Body.Attributes)
		case "output":
			check(b.Body.Attributes, "description", "sensitive")
		case "provider":
			check(b.Body.Attributes, "alias", "version")
		case "module":
			check(b.Body.Attributes, "source", "version")
		case "terraform":
			check(b.Body.Attributes)
			for _, nb := range b.Body.Blocks {
				check(nb.Body.Attributes)
			}
		}
		if found {
			return true
		}
	}
	return false
}
