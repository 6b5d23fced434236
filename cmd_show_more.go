package main

// The show subjects beyond 'report': the SBOM, a module's files and the
// documentation a bundle will publish. Each reads the one blob it needs
// out of the bundle into a temporary file, checked against the digest the
// signed manifest gives it, before a byte of it is printed.

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/verify"
)

// Bounds on what 'airgap show files' reads of a module archive (as hostile
// as any bundle content): at most showMaxEntries entries (a longer archive
// is refused, not listed in part), names of at most showMaxName bytes, and
// one file printed escaped up to docs.MaxTerminalPage (--raw prints any
// size), and at most showMaxContent bytes of files, declared, before one
// is read (a small archive that unpacks to terabytes is refused, not
// decompressed for hours). The listing streams: memory does not grow with
// the archive; the worst case is 200,000 lines of at most about 4 KiB
// each, and 1 GiB decompressed.
const (
	showMaxEntries       = 200_000
	showMaxName          = 4096
	showMaxContent int64 = 1 << 30 // as a module archive export takes in
	// showMaxSpool bounds the blob show copies out of a bundle (to a 0600
	// file in a 0700 directory of its own under $TMPDIR) before it is
	// checked against the signed manifest and printed: one blob, of at most
	// this size, at a time.
	showMaxSpool int64 = 1 << 30
)

// spoolOne reads blob d (what names it for messages) out of br into a
// temporary file, checked against the signed manifest, and returns it
// open and the function that closes and removes it.
func spoolOne(br *bundle.Reader, file string, d verify.Digest, what string) (*os.File, func(), error) {
	for _, b := range br.Manifest().Blobs {
		if b.Digest == d && b.Omitted {
			return nil, nil, fmt.Errorf("%s: this delta bundle does not carry %s (%s; its base did)\nhint: on the offline side, the store has it: 'airgap inventory --store DIR'", file, what, d.Short())
		}
	}
	dir, err := os.MkdirTemp("", "airgap-show-")
	if err != nil {
		return nil, nil, err
	}
	paths, err := bundle.SpoolBlobs(br, map[verify.Digest]bool{d: true}, dir, showMaxSpool)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	f, err := os.Open(paths[d])
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return f, func() { f.Close(); os.RemoveAll(dir) }, nil
}

// copyFile prints f: its bytes with raw, else escaped.
func copyFile(f io.Reader, raw bool) error {
	if raw {
		_, err := io.Copy(os.Stdout, f)
		return err
	}
	if err := dist.CopyPrintable(os.Stdout, f); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// showSBOM prints the bundle's SBOM.
func showSBOM(c *showCmd, br *bundle.Reader, file string, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("sbom takes no arguments, but was given %q", args)}
	}
	m := br.Manifest()
	if m.SBOM == "" {
		return fmt.Errorf("%s carries no SBOM (it was exported by an airgap that wrote none)", dist.Printable(file))
	}
	f, done, err := spoolOne(br, file, m.SBOM, "its SBOM")
	if err != nil {
		return err
	}
	defer done()
	if !c.raw {
		fmt.Fprintf(os.Stderr, "SBOM %s, checked against the bundle's signed manifest (CycloneDX JSON, escaped; --raw prints its bytes)\n", m.SBOM)
	}
	return copyFile(f, c.raw)
}

// entryOf parses ADDRESS@VERSION for show.
func entryOf(arg string) (addr, ver string, err error) {
	addr, ver, ok := strings.Cut(arg, "@")
	if !ok || addr == "" || ver == "" {
		return "", "", usageError{fmt.Sprintf("%q is not ADDRESS@VERSION", dist.Printable(arg))}
	}
	return addr, ver, nil
}

// moduleAt is the module addr (any form Terraform takes) at version ver
// in cat, or nil.
func moduleAt(cat *dist.Catalog, addr, ver string) *dist.ModuleVersion {
	m, _, ok, err := dist.ParseModuleSource(addr)
	if err != nil || !ok {
		return nil
	}
	for i := range cat.Modules {
		if mv := &cat.Modules[i]; strings.EqualFold(mv.Addr(), m.String()) && mv.Version == ver {
			return mv
		}
	}
	return nil
}

// showFiles lists a module version's files, or prints one.
func showFiles(c *showCmd, br *bundle.Reader, file string, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError{"files takes ADDRESS@VERSION (a module) and, to print one file, its PATH"}
	}
	addr, ver, err := entryOf(args[0])
	if err != nil {
		return err
	}
	cat := &br.Manifest().Catalog
	mv := moduleAt(cat, addr, ver)
	if mv == nil {
		if _, isProv, _ := findProvider(cat, addr, ver); isProv {
			return usageError{"files lists a module's files; a provider's packages are listed by 'airgap verify'"}
		}
		return fmt.Errorf("%s carries no module %s\nhint: 'airgap show --keyring KEYRING %s docs' lists what it carries", dist.Printable(file), dist.Printable(args[0]), dist.Printable(file))
	}
	if c.raw && len(args) < 2 {
		return usageError{"--raw prints one file: name its PATH"}
	}
	f, done, err := spoolOne(br, file, mv.Archive, "the module's archive")
	if err != nil {
		return err
	}
	defer done()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("module %s: its archive: %w", mv, err)
	}
	tr := tar.NewReader(gz)
	want := ""
	if len(args) == 2 {
		want = path.Clean(strings.TrimPrefix(args[1], "./"))
	} else {
		fmt.Printf("module %s %s: archive %s (%s), checked against the bundle's signed manifest\n", dist.Printable(mv.Addr()), dist.Printable(mv.Version), mv.Archive, dist.HumanSize(mv.Size))
		if mv.Subdir != "" {
			fmt.Printf("the module is the directory %s of it\n", dist.Printable(mv.Subdir))
		}
	}
	var files int
	var bytes, content int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("module %s: its archive: %w", mv, err)
		}
		if n >= showMaxEntries {
			return fmt.Errorf("module %s: its archive has more than %d entries, more than this lists", mv, showMaxEntries)
		}
		if h.Typeflag == tar.TypeReg {
			if content += h.Size; content > showMaxContent {
				return fmt.Errorf("module %s: its archive holds more than %s of files, more than a module export takes in\nhint: do not approve this bundle: whoever built it did not build it with airgap export", mv, dist.HumanSize(showMaxContent))
			}
		}
		name := h.Name
		if len(name) > showMaxName {
			name = name[:showMaxName] + "…"
		}
		if want != "" {
			if h.Typeflag != tar.TypeReg || path.Clean(h.Name) != want {
				continue
			}
			if !c.raw && h.Size > docs.MaxTerminalPage {
				return fmt.Errorf("module %s: %s is %s, over the %s this prints escaped\nhint: --raw prints its bytes", mv, dist.Printable(want), dist.HumanSize(h.Size), dist.HumanSize(docs.MaxTerminalPage))
			}
			if c.raw {
				_, err := io.Copy(os.Stdout, tr)
				return err
			}
			if err := dist.CopyPrintable(os.Stdout, tr); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		}
		kind := "file"
		switch h.Typeflag {
		case tar.TypeReg:
			files++
			bytes += h.Size
		case tar.TypeDir:
			kind = "dir "
		default:
			kind = fmt.Sprintf("type %q", h.Typeflag)
		}
		fmt.Printf("  %s %04o %9s  %s\n", kind, h.Mode&0o7777, dist.HumanSize(h.Size), dist.Printable(name))
	}
	if want != "" {
		return fmt.Errorf("module %s has no file %q\nhint: 'airgap show --keyring KEYRING %s files %s' lists its files", mv, dist.Printable(want), dist.Printable(file), dist.Printable(args[0]))
	}
	fmt.Printf("%d files, %s\n", files, dist.HumanSize(bytes))
	return nil
}

// showDocs prints the documentation a bundle will publish: a line per
// entry; a provider version's pages or one page; a module's docs.
func showDocs(c *showCmd, br *bundle.Reader, file string, args []string) error {
	if len(args) > 2 {
		return usageError{"docs takes at most ADDRESS[@VERSION] and NAME"}
	}
	if c.raw {
		return usageError{"--raw is for report, sbom and files"}
	}
	cat := &br.Manifest().Catalog
	if len(args) == 0 {
		fmt.Printf("%s: the documentation each entry brings (print one with 'airgap show --keyring KEYRING %s docs ADDRESS@VERSION [NAME]'):\n", dist.Printable(file), dist.Printable(file))
		for _, pv := range cat.Providers {
			fmt.Printf("  provider %s %s: %s\n", dist.Printable(pv.Addr()), dist.Printable(pv.Version), dist.Printable(pv.Docs.Summary()))
		}
		for _, mv := range cat.Modules {
			what := "README, inputs and outputs"
			if mv.Docs == "" {
				what = "none"
			}
			fmt.Printf("  module %s %s: %s\n", dist.Printable(mv.Addr()), dist.Printable(mv.Version), what)
		}
		return nil
	}
	addr, ver, _ := strings.Cut(args[0], "@")
	name := ""
	if len(args) == 2 {
		name = args[1]
	}
	if pv, found, err := findProvider(cat, addr, ver); found {
		if err != nil {
			return err
		}
		if pv.Docs == nil || pv.Docs.Archive == "" {
			return fmt.Errorf("provider %s: no documentation: %s", pv, dist.Printable(pv.Docs.Summary()))
		}
		f, done, err := spoolOne(br, file, pv.Docs.Archive, "the provider's documentation")
		if err != nil {
			return err
		}
		defer done()
		return writeProviderDocs(f, pv, name, "its documentation", fmt.Sprintf("airgap show --keyring KEYRING %s docs %s@%s", dist.Printable(file), pv.Addr(), pv.Version))
	}
	mv, found, err := findModule(cat, addr, ver)
	if !found {
		return fmt.Errorf("%s carries no provider or module %s\nhint: 'airgap show --keyring KEYRING %s docs' lists what it carries", dist.Printable(file), dist.Printable(args[0]), dist.Printable(file))
	}
	if err != nil {
		return err
	}
	if name != "" {
		return usageError{fmt.Sprintf("module %s has one page of documentation; give no NAME", mv)}
	}
	f, done, err := spoolOne(br, file, mv.Docs, "the module's documentation")
	if err != nil {
		return err
	}
	defer done()
	return writeModuleDocs(f, mv)
}
