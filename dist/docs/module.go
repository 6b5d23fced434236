package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"

	"github.com/airgap/airgap/dist"
)

// maxModuleConfig bounds the configuration files of one module directory
// that terraform-config-inspect reads into memory (it reads each file
// whole).
const maxModuleConfig = 16 << 20

// ModuleDocs reads the documentation of the module at dir (slash path,
// "." for the root) of the tree root: its README and, with
// terraform-config-inspect, its inputs, outputs and required providers,
// and those of each module under dir/modules/ (at most
// dist.MaxModuleSubmodules). Everything is read through root (os.Root:
// links stay inside the tree). Bounds: the README is cut at
// dist.MaxModuleReadme bytes; a directory whose configuration files
// (.tf, .tf.json) add up to more than 16 MiB is refused rather than read;
// the document is at most dist.MaxModuleDocs bytes. Memory: the
// configuration of one directory at a time, parsed.
func ModuleDocs(root *os.Root, dir string) ([]byte, error) {
	dir = path.Clean(dir)
	md := dist.ModuleDocs{Inputs: []dist.ModuleInput{}, Outputs: []dist.ModuleOutput{}, Providers: []dist.ModuleProvider{}, Submodules: []dist.ModuleSubmodule{}}
	mod, err := inspect(root, dir)
	if err != nil {
		return nil, err
	}
	md.Inputs, md.Outputs = inputs(mod), outputs(mod)
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
		p := path.Join(dir, "modules", s.Name())
		sm, err := inspect(root, p)
		if err != nil || !tfconfig.IsModuleDirOnFilesystem(tfconfig.WrapFS(root.FS()), p) {
			continue
		}
		rel := strings.TrimPrefix(p, dir+"/")
		md.Submodules = append(md.Submodules, dist.ModuleSubmodule{Path: rel, Inputs: inputs(sm), Outputs: outputs(sm)})
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

// inspect runs terraform-config-inspect on dir after checking that its
// configuration files fit maxModuleConfig.
func inspect(root *os.Root, dir string) (*tfconfig.Module, error) {
	ents, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") {
			if info, err := root.Stat(path.Join(dir, n)); err == nil {
				total += info.Size()
			}
		}
	}
	if total > maxModuleConfig {
		return nil, fmt.Errorf("%q holds %s of configuration, over %s", dist.Printable(dir), dist.HumanSize(total), dist.HumanSize(maxModuleConfig))
	}
	mod, _ := tfconfig.LoadModuleFromFilesystem(tfconfig.WrapFS(root.FS()), dir)
	return mod, nil
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
