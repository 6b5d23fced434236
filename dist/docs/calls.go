package docs

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	tfconfig "github.com/hashicorp/terraform-config-inspect/tfconfig"

	"github.com/airgap/airgap/dist"
)

// ModuleCall is a registry module a module's configuration calls.
type ModuleCall struct {
	Addr    string // HOST/NAMESPACE/NAME/SYSTEM
	Version string // the version constraint, as written ("" when none)
	File    string // the calling file, a slash path under the module's directory
	Line    int
}

// Bounds of RegistryCalls, on an archive as hostile as any bundle content:
// at most maxCallEntries tar entries are read (more is refused), at most
// maxModuleConfig bytes of configuration files (.tf, .tf.json) are
// parsed, each within dist.AdmitHCL's bounds, and at most maxCalls calls
// are kept (more: cut); an archive declaring more than maxCallContent
// bytes of files is refused before they are decompressed. The archive streams: memory is one configuration
// file and its syntax tree at a time plus the calls. Time: decompressing
// the archive once (a module archive is at most 1 GiB of content).
const (
	maxCallEntries       = 200_000
	maxCalls             = 1000
	maxCallContent int64 = 1 << 30 // declared bytes of files, as a module export takes in
)

// RegistryCalls reads a module archive (the .tar.gz a bundle carries) and
// lists the registry modules the configuration files in dir ("" or "."
// for the archive's root) and below it call, sorted by address, version
// and file; cut is true when there were more than maxCalls. A source that
// is not a registry address (a local path, git::, an URL) is left out.
func RegistryCalls(r io.Reader, dir string) (calls []ModuleCall, cut bool, err error) {
	dir = path.Clean(strings.Trim(dir, "/"))
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, false, fmt.Errorf("module archive: %w", err)
	}
	tr := tar.NewReader(gz)
	var total, content int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("module archive: %w", err)
		}
		if n >= maxCallEntries {
			return nil, false, fmt.Errorf("module archive has more than %d entries", maxCallEntries)
		}
		if h.Typeflag == tar.TypeReg {
			if content += h.Size; content > maxCallContent {
				return nil, false, fmt.Errorf("module archive holds more than %s of files", dist.HumanSize(maxCallContent))
			}
		}
		name := path.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || !(strings.HasSuffix(name, ".tf") || strings.HasSuffix(name, ".tf.json")) ||
			strings.HasPrefix(path.Base(name), ".") || dir != "." && !strings.HasPrefix(name, dir+"/") {
			continue
		}
		if total += h.Size; total > maxModuleConfig {
			return nil, false, fmt.Errorf("module archive holds over %s of configuration", dist.HumanSize(maxModuleConfig))
		}
		src, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, false, fmt.Errorf("module archive: %w", err)
		}
		mod := tfconfig.NewModule(path.Dir(name))
		if err := decodeFile(mod, src, name); err != nil {
			return nil, false, err
		}
		rel := name
		if dir != "." {
			rel = strings.TrimPrefix(name, dir+"/")
		}
		for _, c := range mod.ModuleCalls {
			m, _, ok, err := dist.ParseModuleSource(c.Source)
			if err != nil || !ok {
				continue
			}
			if len(calls) >= maxCalls {
				cut = true
				break
			}
			calls = append(calls, ModuleCall{Addr: m.String(), Version: c.Version, File: rel, Line: c.Pos.Line})
		}
	}
	sort.Slice(calls, func(i, j int) bool {
		a, b := calls[i], calls[j]
		if a.Addr != b.Addr {
			return a.Addr < b.Addr
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return calls, cut, nil
}
