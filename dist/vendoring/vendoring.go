package vendoring

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/portable"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

const (
	// Dir is the reserved folder, at the root of a module's tree, that
	// holds the vendored packages.
	Dir = ".airgap/modules"
	// MaxDepth: levels of nested remote calls followed below the carried
	// module (the module's own calls are level 1).
	MaxDepth = 8
	// MaxPackages: distinct packages vendored into one module's tree.
	MaxPackages = 64
	// MaxCalls: rewritten calls in one module's tree (each is a record in
	// the manifest), and so also module directories visited.
	MaxCalls = 1024
	// MaxConfigBytes: bytes of .tf and .tf.json files read for one
	// module's tree, its vendored packages included (each directory is
	// read once), as much as export then scans of it (tfconfig.LoadTreeIn, which
	// follows the rewritten local calls). Dense HCL parses at about 1.5 MiB/s:
	// this bounds the time. Memory is bounded per file, as for every
	// reader of HCL, by dist.AdmitHCL (tfconfig.LoadDir and rewrite
	// both pass it).
	MaxConfigBytes = tfconfig.MaxTreeBytes
	// maxProblems: unvendorable sources listed in one error.
	maxProblems = 20
)

// FetchFunc fetches a source (getter.Fetch into a fresh work directory);
// done removes what it left.
type FetchFunc func(ctx context.Context, src *getter.Source) (res *getter.Result, done func(), err error)

// Options configure Vendor.
type Options struct {
	Fetch FetchFunc
	// Allow makes unvendorable sources warnings instead of errors (the
	// call is left as written).
	Allow bool
	// Log receives one line per vendored package.
	Log func(format string, a ...any)
	// Parsed (may be nil) is the caller's memory of the tree's parsed
	// configuration files (tfconfig.Parsed): the directories are read
	// through it, so that the caller's own reading of the same files after
	// Vendor (what the module needs, its docs) parses none of them again,
	// except those Vendor rewrote.
	Parsed *tfconfig.Parsed
}

// Result is what Vendor changed.
type Result struct {
	Calls    []dist.VendoredCall // every rewritten source, sorted by file and line
	Warnings []string            // unvendorable sources, with Allow
}

type pkg struct {
	dir    string // slash path in the tree: Dir/<hex>
	digest verify.Digest
	commit string
}

type item struct {
	within, dir string // slash paths in the tree: the package, the module directory
	depth       int
}

type vendorer struct {
	root     string
	tree     *os.Root // on root: every read and write of the tree
	opt      Options
	budget   *getter.Budget
	packages map[string]*pkg   // by source without subdirectory
	failed   map[string]string // sources that could not be fetched: why
	fetches  int               // attempts, failed ones included: at most MaxPackages
	read     map[string]bool   // module directories read (slash paths in the tree)
	// configBytes: .tf and .tf.json bytes read, at most MaxConfigBytes.
	configBytes int64
	// edits: file -> module name -> new source, applied once every module
	// directory has been read (a local module shared by two vendored
	// subdirectories is read twice, and must read as written both times).
	edits    map[string]map[string]string
	res      *Result
	problems []string // at most MaxCalls; dropped counts the rest
	dropped  int
}

// problem records a source that cannot be vendored.
func (v *vendorer) problem(msg string) {
	if len(v.problems) >= MaxCalls {
		v.dropped++
		return
	}
	v.problems = append(v.problems, msg)
}

// Vendor vendors the remote calls of the module at subdir (a slash path,
// "" for the root) of the tree at root, and of everything they call, into
// root/.airgap/modules, rewriting the calls. root must be a tree this
// process unpacked (getter.Unpack: no links, no .git); budget is what
// remains of the archive limits after the tree itself.
func Vendor(ctx context.Context, root, subdir string, budget *getter.Budget, opt Options) (*Result, error) {
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	if err := reserved(root); err != nil {
		return nil, err
	}
	tree, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	v := &vendorer{root: root, tree: tree, opt: opt, budget: budget, packages: map[string]*pkg{}, failed: map[string]string{}, edits: map[string]map[string]string{}, read: map[string]bool{}, res: &Result{}}
	seen := map[string]bool{}
	queue := []item{{within: ".", dir: path.Clean("./" + subdir)}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if seen[it.dir] {
			continue
		}
		seen[it.dir] = true
		next, err := v.module(ctx, it)
		if err != nil {
			return nil, err
		}
		queue = append(queue, next...)
	}
	if len(v.problems) > 0 && !opt.Allow {
		more := ""
		if n := len(v.problems) + v.dropped; n > maxProblems {
			more = fmt.Sprintf("\n  … and %d more", n-maxProblems)
			v.problems = v.problems[:maxProblems]
		}
		return nil, fmt.Errorf("%w:\n  %s%s\nhint: vendoring fetches each source from this machine as the client would; make it a literal git::https://, github.com/… or https://….tar.gz address that is reachable from here, or export with --allow-unvendored (such calls stay as written and fail offline unless reachable there) or --no-vendor (nothing is vendored)", ErrUnvendorable, strings.Join(v.problems, "\n  "), more)
	}
	files := make([]string, 0, len(v.edits))
	for f := range v.edits {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := v.rewriteFile(f, v.edits[f]); err != nil {
			return nil, err
		}
	}
	if v.res.Warnings = v.problems; v.dropped > 0 {
		v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("… and %d more sources that cannot be vendored", v.dropped))
	}
	sort.SliceStable(v.res.Calls, func(i, j int) bool {
		a, b := v.res.Calls[i], v.res.Calls[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Module < b.Module // several blocks on one line of .tf.json
	})
	return v.res, nil
}

// reserved refuses a tree that has .airgap already, in any case or
// Unicode spelling that a file system takes for it (portable.Equal): on
// the case-insensitive file systems of macOS and Windows engineers, a
// ".AIRGAP/modules/<digest>/extra.tf" shipped by the author would be
// extracted into the vendored copy, adding code that is not in the
// package the manifest names.
func reserved(root string) error {
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if portable.Equal(e.Name(), ".airgap") {
			return fmt.Errorf("%w: the module already has a %s folder, which airgap reserves for vendored sources\nhint: export it with --no-vendor, or ask its publisher to rename the folder", ErrReserved, dist.Printable(e.Name()))
		}
	}
	return nil
}

// module vendors the remote calls of one module directory (and the local
// modules it calls inside its package) and returns the vendored module
// directories to visit next.
func (v *vendorer) module(ctx context.Context, it item) ([]item, error) {
	calls, err := v.load(it)
	if err != nil {
		if it.within == "." {
			return nil, fmt.Errorf("reading its configuration: %w", err)
		}
		return nil, fmt.Errorf("reading vendored %s: %w", dist.Printable(it.dir), err)
	}
	var next []item
	for _, c := range calls {
		if _, _, ok, err := dist.ParseModuleSource(c.Source); err == nil && ok {
			continue // a registry address: exported as a module of its own
		}
		file := c.File
		at := fmt.Sprintf("%s:%d: module %q", dist.Printable(file), c.Line, dist.Printable(c.Name))
		if !hclsyntax.ValidIdentifier(c.Name) { // terraform refuses it too; the name is recorded
			v.problem(at + ": the module name is not a valid identifier")
			continue
		}
		if c.Source == "" {
			// Terraform ≥ 1.15 (const variables) and OpenTofu (early
			// evaluation) compute such a source from what each caller of
			// the module passes in; one archive serves every caller.
			v.problem(fmt.Sprintf("%s: the source is not a literal string but an expression (%s): Terraform ≥ 1.15 and OpenTofu compute it from the values each caller of the module passes in, so it cannot be rewritten to one vendored path", at, dist.Printable(c.SourceExpr)))
			continue
		}
		src, err := getter.Parse(c.Source)
		if err != nil {
			v.problem(at + ": " + dist.Printable(firstLine(err.Error())))
			continue
		}
		sub, star := src.Subdir, false
		if sub == "*" || strings.HasPrefix(sub, "*/") {
			sub, star = strings.TrimPrefix(strings.TrimPrefix(sub, "*"), "/"), true
		}
		sub = strings.Trim(path.Clean("/"+sub), "/")
		if msg := ambiguous(file, c.Source, sub); msg != "" {
			v.problem(at + ": " + msg)
			continue
		}
		key := fmt.Sprintf("%s %s %s %v", src.Kind, src.URL, src.Ref, star)
		if len(v.res.Calls) >= MaxCalls {
			return nil, fmt.Errorf("%s: %w: more than %d module sources to rewrite in one module\nhint: export with --no-vendor and check the module", at, ErrTooDeep, MaxCalls)
		}
		p, ok := v.packages[key]
		if !ok {
			if it.depth+1 > MaxDepth {
				return nil, fmt.Errorf("%s: %w: %q is more than %d levels of nested sources below the module\nhint: this looks like a cycle or a generated chain; export with --no-vendor and check the module", at, ErrTooDeep, dist.Printable(c.Source), MaxDepth)
			}
			if msg, bad := v.failed[key]; bad {
				v.problem(at + ": " + msg)
				continue
			}
			// Failed attempts count too: a module naming thousands of
			// dead hosts must not make thousands of fetches.
			if v.fetches >= MaxPackages {
				return nil, fmt.Errorf("%s: %w: more than %d packages to fetch for one module\nhint: export with --no-vendor and check the module", at, ErrTooDeep, MaxPackages)
			}
			v.fetches++
			if p, err = v.fetch(ctx, src); err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				v.failed[key] = dist.Printable(firstLine(err.Error())) // names the source or URL
				v.problem(at + ": " + v.failed[key])
				continue
			}
			v.packages[key] = p
		}
		target := path.Join(p.dir, sub)
		if fi, err := v.tree.Stat(filepath.FromSlash(target)); err != nil || !fi.IsDir() {
			v.problem(fmt.Sprintf("%s: %q: subdirectory %q does not exist in the fetched package", at, dist.Printable(c.Source), dist.Printable(sub)))
			continue
		}
		rel, err := filepath.Rel(filepath.Dir(filepath.Join(v.root, filepath.FromSlash(file))), filepath.Join(v.root, filepath.FromSlash(target)))
		if err != nil {
			return nil, err
		}
		local := filepath.ToSlash(rel)
		if !strings.HasPrefix(local, "../") {
			local = "./" + local
		}
		if old, ok := v.edits[file][c.Name]; ok {
			if old != local {
				return nil, fmt.Errorf("%s: %w: the module is declared twice in one file", at, ErrRewrite)
			}
			continue // a shared local module, read again from another vendored subdirectory
		}
		if v.edits[file] == nil {
			v.edits[file] = map[string]string{}
		}
		v.edits[file][c.Name] = local
		v.res.Calls = append(v.res.Calls, dist.VendoredCall{File: file, Line: c.Line, Module: c.Name, Source: dist.RedactSource(c.Source), Digest: p.digest, Commit: p.commit, Path: local})
		next = append(next, item{within: p.dir, dir: target, depth: it.depth + 1})
	}
	return next, nil
}

// load reads the module directory it.dir and the local modules it calls
// (which must stay inside it.within, the package), and returns the calls
// that are not local, with File a slash path in the tree. Each directory
// is read once per Vendor, whichever visit reaches it first: a local
// module shared by many vendored subdirectories (up to MaxCalls of them)
// is not parsed again for each, and all the configuration read for one
// tree is at most MaxConfigBytes, on top of tfconfig's per-file and
// per-directory limits (the tree itself has no links: Unpack wrote it).
func (v *vendorer) load(it item) ([]tfconfig.ModuleCall, error) {
	if !inside(it.within, it.dir) { // a subdirectory from the registry: checked, not trusted
		return nil, fmt.Errorf("%s: %w (%s)", dist.Printable(it.dir), tfconfig.ErrOutside, dist.Printable(it.within))
	}
	var out []tfconfig.ModuleCall
	stack := []string{it.dir}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.read[d] {
			continue
		}
		if v.read[d] = true; len(v.read) > MaxCalls+tfconfig.MaxLocalModules {
			return nil, fmt.Errorf("%w: more than %d module directories", tfconfig.ErrTooLarge, MaxCalls+tfconfig.MaxLocalModules)
		}
		if err := v.account(d); err != nil {
			return nil, err
		}
		load := tfconfig.LoadDir
		if v.opt.Parsed != nil {
			load = v.opt.Parsed.LoadDir
		}
		cfg, err := load(filepath.Join(v.root, filepath.FromSlash(d)))
		if err != nil {
			return nil, err
		}
		var local []string
		for _, m := range cfg.Modules {
			m.File = path.Join(d, filepath.ToSlash(m.File))
			if !tfconfig.IsLocalSource(m.Source) {
				out = append(out, m)
				continue
			}
			next := path.Join(d, m.Source)
			if !inside(it.within, next) {
				return nil, fmt.Errorf("%s: module %q: source %q: %w (%s)\nhint: local module calls are followed only inside the module's own package", m.Pos, dist.Printable(m.Name), dist.Printable(m.Source), tfconfig.ErrOutside, dist.Printable(it.within))
			}
			local = append(local, next)
		}
		for i := len(local) - 1; i >= 0; i-- {
			stack = append(stack, local[i])
		}
	}
	return out, nil
}

// inside reports whether p (clean) is within (clean, "." for the tree).
func inside(within, p string) bool {
	if within == "." {
		return p == "." || filepath.IsLocal(p)
	}
	rel, ok := strings.CutPrefix(p, within+"/")
	return p == within || ok && filepath.IsLocal(rel)
}

// account adds the configuration files of directory d to what this Vendor
// has read, within MaxConfigBytes, and lists .tofu files as problems.
func (v *vendorer) account(d string) error {
	f, err := v.tree.Open(filepath.FromSlash(d))
	if err != nil {
		return err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1) // the tree holds at most getter.MaxArchiveEntries
	if err != nil {
		return err
	}
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".tofu") || strings.HasSuffix(n, ".tofu.json")) {
			// OpenTofu reads these (instead of a .tf of the same name):
			// their calls would be neither vendored nor recorded.
			v.problem(fmt.Sprintf("%s: OpenTofu-only configuration file: airgap reads .tf and .tf.json only, so module calls in it are not vendored and tofu offline may fetch them from the internet", dist.Printable(path.Join(d, n))))
		}
		if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if v.configBytes += fi.Size(); v.configBytes > MaxConfigBytes {
			return fmt.Errorf("%s: %w: the module and the packages vendored into it have more than %d bytes of configuration", dist.Printable(d), tfconfig.ErrTooLarge, MaxConfigBytes)
		}
	}
	return nil
}

// fetch fetches a package and copies its normalized archive into the
// tree, once per digest.
func (v *vendorer) fetch(ctx context.Context, src *getter.Source) (*pkg, error) {
	res, done, err := v.opt.Fetch(ctx, src)
	if done != nil {
		defer done()
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(res.Archive)
	if err != nil {
		return nil, err
	}
	d, n, err := verify.CopyDigest(io.Discard, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	p := &pkg{dir: path.Join(Dir, d.Hex()), digest: d, commit: res.Commit}
	for _, q := range v.packages {
		if q.digest == d {
			return p, nil // the same bytes under another address
		}
	}
	if err := v.tree.MkdirAll(filepath.FromSlash(Dir), 0o755); err != nil {
		return nil, err
	}
	if err := getter.Unpack(ctx, res.Archive, filepath.Join(v.root, filepath.FromSlash(p.dir)), v.budget); err != nil {
		return nil, err
	}
	v.opt.Log("vendored %s (%s, %d bytes)", dist.Printable(dist.RedactSource(src.Raw)), d.Short(), n)
	return p, nil
}

// rewriteFile edits one configuration file of the tree in place.
func (v *vendorer) rewriteFile(file string, sources map[string]string) error {
	r := v.tree
	name := filepath.FromSlash(file)
	f, err := r.Open(name)
	if err != nil {
		return err
	}
	src, err := io.ReadAll(io.LimitReader(f, tfconfig.MaxFileSize+1))
	f.Close()
	if err != nil {
		return err
	}
	if len(src) > tfconfig.MaxFileSize { // tfconfig read it already: not reached
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrRewrite, dist.Printable(file), tfconfig.MaxFileSize)
	}
	out, err := rewrite(src, file, sources)
	if err != nil {
		return err
	}
	return r.WriteFile(name, out, 0o644)
}

// ambiguous says why a source cannot be rewritten to a path that means the
// same to every client, or "". In .tf.json, terraform reads a source
// string literally while OpenTofu (1.8+, static evaluation) reads it as a
// template: a subdirectory named "%{if true}..%{endif}" would be one
// directory to terraform and the reviewer, and the parent of the package
// to tofu. Such names are refused in every file (no real module has
// them), and so are control and format characters (getter.Parse lets them
// through in a subdirectory; the path is recorded and shown to reviewers).
func ambiguous(file, source, sub string) string {
	tmpl := func(s string) bool { return strings.Contains(s, "${") || strings.Contains(s, "%{") }
	switch {
	case strings.HasSuffix(file, ".json") && tmpl(source):
		return "the source contains ${ or %{, which Terraform before 1.15 reads literally in .tf.json and Terraform 1.15+ and OpenTofu as a template"
	case tmpl(sub):
		return fmt.Sprintf("subdirectory %q contains ${ or %%{, which would be rewritten to a path terraform and OpenTofu read differently", dist.Printable(sub))
	case dist.Printable(sub) != sub:
		return fmt.Sprintf("subdirectory %q contains control or format characters or invalid UTF-8", dist.Printable(sub))
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
