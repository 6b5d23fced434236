package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// BuildSBOM is the SBOM of a bundle: dist/sbom over the manifest's catalog,
// its tool and creation time, the fingerprints of the publisher keys each
// provider carries, and the Go build information of each package (info;
// false for a package whose build information is not at hand). Export
// writes it and the consistency check builds it again: both get the same
// bytes from the same manifest and zips.
func BuildSBOM(m *bundle.Manifest, info func(pk dist.Package) (*goinfo.Info, bool)) ([]byte, error) {
	var b bytes.Buffer
	if err := writeSBOM(&b, m, info); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FingerprintCache is keyFingerprints that parses each distinct set of
// armored keys once (KeyringCache).
func FingerprintCache() func(p dist.ProviderVersion) []string {
	kc := KeyringCache{}
	return func(p dist.ProviderVersion) []string {
		kr, err := kc.Keyring(p)
		if err != nil {
			return nil
		}
		return fingerprints(kr)
	}
}

func fingerprints(kr openpgp.EntityList) []string {
	out := make([]string, 0, len(kr))
	for _, e := range kr {
		out = append(out, verify.Fingerprint(e))
	}
	sort.Strings(out)
	return out
}

// checkReports counts the SARIF findings of every gate report again and
// compares them with each result that names the report.
func (c *Checker) checkReports() error {
	type use struct {
		entry string
		r     dist.GateResult
	}
	uses := map[verify.Digest][]use{}
	var order []verify.Digest
	add := func(entry string, rs []dist.GateResult) {
		for _, r := range rs {
			if _, ok := uses[r.Report]; !ok {
				order = append(order, r.Report)
			}
			uses[r.Report] = append(uses[r.Report], use{entry, r})
		}
	}
	for _, p := range c.m.Catalog.Providers {
		for _, pk := range p.Packages {
			add("provider "+p.String()+" "+pk.Platform(), pk.Gates)
		}
	}
	for _, mv := range c.m.Catalog.Modules {
		add("module "+mv.String(), mv.Gates)
	}
	for _, d := range order {
		path, ok := c.have(d)
		if !ok {
			c.rep.Deferred = append(c.rep.Deferred, "findings of "+c.m.Describe(d))
			continue
		}
		f, sarif, err := countReport(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.m.Describe(d), err)
		}
		for _, u := range uses[d] {
			switch {
			case sarif && u.r.Findings == nil:
				return inconsistent(u.entry, "its gate %s report is SARIF with %s, but the result records no findings", u.r.Gate, f)
			case !sarif && u.r.Findings != nil:
				return inconsistent(u.entry, "its gate %s result records %s, but its report is not SARIF", u.r.Gate, u.r.Findings)
			case sarif && *f != *u.r.Findings:
				return inconsistent(u.entry, "its gate %s result records %s, but its SARIF report has %s", u.r.Gate, u.r.Findings, f)
			}
		}
		c.rep.Reports++
	}
	return nil
}

// countReport is dist.CountSARIF of the report at path (at most
// MaxReportSize bytes, as Manifest required).
func countReport(path string) (*dist.GateFindings, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fs, ok := dist.CountSARIF(io.LimitReader(f, bundle.MaxReportSize))
	return fs, ok, nil
}

// MaxSBOMModules bounds the Go modules (with each package itself) the
// SBOM check builds components for: each takes at least 100 bytes of SBOM
// (bom-ref, name, version, purl: 105 with one-character names), so no SBOM
// within MaxSBOMSize lists more. The documents they come from may be small
// (16 bytes a module), and building a component costs far more memory than
// writing it: without the bound, 280 packages of 5000 one-character
// modules each (46 MB of documents, under checkBuildInfoTotal) built an
// SBOM of 1.4 million components before the comparison could refuse it.
// checkH1 counts the modules of the zips it reads (refusing while the
// stream goes on), checkSBOM those of every package before it builds.
const MaxSBOMModules = bundle.MaxSBOMSize / 100

func tooManyModules() error {
	return inconsistent("the bundle's SBOM", "the Go build information of its packages lists over %d modules, more than an SBOM within its %d-byte limit can describe", MaxSBOMModules, bundle.MaxSBOMSize)
}

// checkSBOM builds the bundle's SBOM again from the manifest and the build
// information the check read from the zips (or, for a package the store
// already has, from the store's document), at most MaxSBOMModules modules,
// and compares it with the signed one. A delta whose omitted zips hold
// build information defers it.
func (c *Checker) checkSBOM() error {
	if c.m.SBOM == "" {
		c.rep.SBOM = "none"
		return nil
	}
	missing, modules := 0, 0
	docs := map[verify.Digest][]byte{} // each package's, checked; decoded again as the SBOM is written
	for _, p := range c.m.Catalog.Providers {
		for _, pk := range p.Packages {
			doc, ok := c.infos[pk.Digest]
			if !ok && c.known(pk.Digest) {
				doc, ok = c.readBuildInfo(pk.BuildInfo)
			}
			if !ok {
				missing++
				continue
			}
			info, err := goinfo.Decode(doc)
			if err != nil {
				return inconsistent(c.m.Describe(pk.BuildInfo), "%v", err)
			}
			if modules += info.Modules() + 1; modules > MaxSBOMModules {
				return tooManyModules()
			}
			docs[pk.Digest] = doc
		}
	}
	if missing > 0 {
		c.rep.SBOM = "deferred"
		c.rep.Deferred = append(c.rep.Deferred, fmt.Sprintf("the SBOM (the build information of %d packages is in zips this delta omits)", missing))
		return nil
	}
	info := func(pk dist.Package) (*goinfo.Info, bool) {
		i, err := goinfo.Decode(docs[pk.Digest]) // decoded above without error
		return i, err == nil
	}
	write := func(w io.Writer) error { return writeSBOM(w, c.m, info) }
	d := verify.NewDigester()
	if err := write(d); err != nil {
		return err
	}
	if got := d.Digest(); got != c.m.SBOM {
		return inconsistent("the bundle's SBOM", "it is %s, but the SBOM of what the bundle carries is %s: it does not describe this bundle", c.m.SBOM.Short(), got.Short())
	}
	c.rep.SBOM, c.rep.sbom = "checked", write
	return nil
}

// writeSBOM writes the SBOM of a bundle (BuildSBOM's bytes) to w, one
// component at a time (sbom.Write): the check hashes the SBOM of a bundle
// of thousands of packages without holding it. It fails once more than
// MaxSBOMSize bytes were written.
func writeSBOM(w io.Writer, m *bundle.Manifest, info func(pk dist.Package) (*goinfo.Info, bool)) error {
	lw := &limitedWriter{w: w, left: bundle.MaxSBOMSize}
	_, err := sbom.Write(lw, sbom.Input{
		Generator: m.SBOMGenerator, Subject: "airgap bundle", Tool: m.Tool, Time: m.Created, Catalog: &m.Catalog,
		BuildInfo: info, Keys: FingerprintCache(),
	})
	if lw.over {
		return fmt.Errorf("the SBOM is over the %d-byte limit\nhint: export fewer provider versions per bundle", bundle.MaxSBOMSize)
	}
	return err
}

// WriteSBOM writes the bundle's SBOM as the check found it (SBOM
// "checked"): the signed bytes, made again.
func (r *Result) WriteSBOM(w io.Writer) error {
	if r.sbom == nil {
		return errors.New("the SBOM was not checked")
	}
	return r.sbom(w)
}

// limitedWriter passes at most left bytes to w, then fails.
type limitedWriter struct {
	w    io.Writer
	left int64
	over bool
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		l.over = true
		return 0, errors.New("over the limit")
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}

// readBuildInfo reads a build information document the caller has (a
// store's, for a package it already checked).
func (c *Checker) readBuildInfo(d verify.Digest) ([]byte, bool) {
	path, ok := c.have(d)
	if !ok {
		return nil, false
	}
	b, err := readLimited(path, goinfo.MaxDocument)
	if err != nil || verify.DigestBytes(b) != d {
		return nil, false
	}
	return b, true
}
