// Package sbom writes the software bill of materials of a catalog — what a
// bundle carries, or what a store serves — as CycloneDX 1.6 JSON, built with
// github.com/CycloneDX/cyclonedx-go.
//
// It lists one component per provider package (one platform of one provider
// version) with its purl, the zip's SHA-256, its lock-file hashes, its
// publisher keys, its trust tier and its plugin's Go build information, and
// below it one component per Go module compiled into the plugin, so a
// scanner on the offline side can match them against vulnerability
// databases; and one component per module version, with one nested
// component per vendored package.
//
// The same input gives the same bytes: everything is sorted, nothing is
// random, the time is the caller's (absent without one), and the serial
// number is a name-based UUID of the document's own content.
//
// A bundle's SBOM is a function of its signed manifest and of the Go build
// information of its packages (dist/goinfo documents, themselves checked
// against the zips): the bundle check builds it again and compares bytes.
//
// Every field, the purl form for Terraform (not yet in the purl spec) and
// why the serial number is not random: docs/fetching.md, "The SBOM".
//
// It does no I/O beyond what Input's functions do, and does not read
// bundles or stores itself.
package sbom

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/package-url/packageurl-go"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
)

// Generator is the version of the document Generate writes. A bundle's
// check builds the bundle's SBOM again and compares bytes, so the bytes
// Generate writes for one Input and one Generator never change: a change
// to the output (a new property, another order, a cyclonedx-go upgrade that
// encodes differently) is a new Generator, and Generate keeps writing the
// older document for an Input that names the older Generator, so that the
// bundles written before still check. The bundle fixtures in
// testdata/formats carry an SBOM of each Generator, and TestFormatFixtures
// fails when their bytes move.
//
// Generator 2 adds the documentation (bundle format 3): a component of
// type "data" per provider version with a docs record (docsComponent) and
// the property airgap:docs-sha256 on a module with docs.
const Generator = 2

// MediaType is the media type of what Encode writes.
const MediaType = "application/vnd.cyclonedx+json; version=1.6"

// Input is what an SBOM describes.
type Input struct {
	// Generator is the version of the document to write (see Generator);
	// 0 is the newest.
	Generator int
	// Subject names what the SBOM is of (metadata.component), e.g.
	// "airgap bundle" or "airgap store".
	Subject string
	// Tool is the airgap that made the catalog, e.g. "airgap 1.2.3"
	// (metadata.tools); for a bundle, its manifest's tool, so that any
	// airgap that checks the bundle builds the same document.
	Tool string
	// Time is metadata.timestamp; nil for none.
	Time    *time.Time
	Catalog *dist.Catalog
	// BuildInfo returns a package's Go build information; false when none
	// was recorded (an older bundle or store).
	BuildInfo func(pk dist.Package) (*goinfo.Info, bool)
	// Keys returns the fingerprints of the publisher keys a provider
	// version carries.
	Keys func(p dist.ProviderVersion) []string
}

// Generate returns the SBOM of in (Write, into memory).
func Generate(in Input) ([]byte, error) {
	var b bytes.Buffer
	if _, err := Write(&b, in); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes the SBOM of in to w — the bytes Encode(Build(in)) makes —
// and returns how many it wrote. It holds one top-level component (a
// provider package with its Go modules, or a module version) at a time,
// never the document, so that a bundle's check can hash the SBOM of
// thousands of packages in bounded memory. The serial number is a hash of
// the document without it, so each component is built twice: once for
// that hash, once to write. A write error of w ends it.
func Write(w io.Writer, in Input) (int64, error) {
	if in.Generator < 0 || in.Generator > Generator {
		return 0, fmt.Errorf("SBOM generator %d is newer than this airgap's (%d)\nhint: use an airgap at least as new as the one that wrote the bundle", in.Generator, Generator)
	}
	ps := parts(in)
	h := sha256.New()
	if err := writeDoc(h, in, ps, ""); err != nil {
		return 0, err
	}
	cw := &countingWriter{w: w}
	err := writeDoc(cw, in, ps, "urn:uuid:"+contentUUID(h.Sum(nil)))
	return cw.n, err
}

// part is a top-level component not built yet: its bom-ref (the sort key
// of sortComponents) and how to build it.
type part struct {
	ref   string
	build func() cdx.Component
}

// parts lists the top-level components of in in the order Build sorts
// them.
func parts(in Input) []part {
	var ps []part
	for _, p := range in.Catalog.Providers {
		var keys []string
		if in.Keys != nil {
			keys = in.Keys(p)
		}
		for _, pk := range p.Packages {
			ps = append(ps, part{providerRef(p, pk), func() cdx.Component { return providerPackage(in, p, pk, keys) }})
		}
	}
	docs := in.Generator == 0 || in.Generator >= 2
	for _, m := range in.Catalog.Modules {
		ps = append(ps, part{moduleRef(m), func() cdx.Component { return module(m, docs) }})
	}
	if docs {
		for _, p := range in.Catalog.Providers {
			if p.Docs != nil {
				ps = append(ps, part{docsRef(p), func() cdx.Component { return docsComponent(p) }})
			}
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].ref < ps[j].ref })
	return ps
}

// sentinelRef marks where the components go in the encoded skeleton.
const sentinelRef = "airgap:sbom:components-go-here"

// writeDoc writes the document with the given serial number: the
// skeleton (the BOM without its components) encoded around a sentinel
// component, then each part encoded alone where the sentinel was.
// encoding/json encodes a value the same alone as inside its parent, so
// the bytes are Encode's.
func writeDoc(w io.Writer, in Input, ps []part, serial string) error {
	bom := skeleton(in)
	bom.SerialNumber = serial
	if len(ps) == 0 { // as Build writes it: "components":null
		var none []cdx.Component
		bom.Components = &none
		doc, err := encode(bom)
		if err == nil {
			_, err = w.Write(doc)
		}
		return err
	}
	sentinel := cdx.Component{BOMRef: sentinelRef}
	bom.Components = &[]cdx.Component{sentinel}
	doc, err := encode(bom)
	if err != nil {
		return err
	}
	mark, err := encodeComponent(sentinel)
	if err != nil {
		return err
	}
	i := bytes.Index(doc, mark)
	if i < 0 || bytes.Count(doc, mark) != 1 {
		return errors.New("sbom: the component sentinel is not where expected")
	}
	if _, err := w.Write(doc[:i]); err != nil {
		return err
	}
	for k, p := range ps {
		b, err := encodeComponent(p.build())
		if err != nil {
			return err
		}
		if k > 0 {
			b = append([]byte{','}, b...)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err = w.Write(doc[i+len(mark):])
	return err
}

// encodeComponent encodes c as encode encodes it inside a BOM.
func encodeComponent(c cdx.Component) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Build makes the SBOM of in, whole in memory (Write does not).
func Build(in Input) *cdx.BOM {
	bom := skeleton(in)
	var comps []cdx.Component
	for _, p := range parts(in) {
		comps = append(comps, p.build())
	}
	bom.Components = &comps
	return bom
}

// skeleton is the BOM of in without its components.
func skeleton(in Input) *cdx.BOM {
	return &cdx.BOM{
		JSONSchema:  "http://cyclonedx.org/schema/bom-1.6.schema.json",
		BOMFormat:   cdx.BOMFormat,
		SpecVersion: cdx.SpecVersion1_6,
		Version:     1,
		Metadata:    metadata(in),
	}
}

func metadata(in Input) *cdx.Metadata {
	md := &cdx.Metadata{Component: &cdx.Component{BOMRef: "subject", Type: cdx.ComponentTypeData, Name: in.Subject}}
	if in.Time != nil {
		md.Timestamp = in.Time.UTC().Format(time.RFC3339)
	}
	if in.Tool != "" {
		name, version, _ := strings.Cut(in.Tool, " ")
		md.Tools = &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: name, Version: version}}}
	}
	return md
}

// Encode writes bom as compact JSON, with a serial number derived from the
// rest of the document (see the package documentation).
func Encode(bom *cdx.BOM) ([]byte, error) {
	bom.SerialNumber = ""
	body, err := encode(bom)
	if err != nil {
		return nil, err
	}
	d := sha256.Sum256(body)
	bom.SerialNumber = "urn:uuid:" + contentUUID(d[:])
	return encode(bom)
}

func encode(bom *cdx.BOM) ([]byte, error) {
	var b bytes.Buffer
	if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).SetPretty(false).SetEscapeHTML(false).Encode(bom); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// uuidNamespace is the namespace of the serial numbers' version-5 UUIDs (a
// fixed random UUID, chosen once for airgap).
var uuidNamespace = [16]byte{0x5b, 0x0e, 0x6f, 0x3a, 0x1c, 0x7d, 0x4e, 0x21, 0x9a, 0x54, 0x3f, 0x8b, 0x22, 0x61, 0xd0, 0x47}

// contentUUID is the RFC 9562 version-5 UUID whose name is d, the SHA-256
// of the document without its serial number.
func contentUUID(d []byte) string {
	h := sha1.New()
	h.Write(uuidNamespace[:])
	h.Write(d)
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// DefaultRegistry is the registry a terraform purl names without a
// repository_url qualifier.
const defaultRegistry = "registry.terraform.io"

// terraformPURL is the purl of a provider package or module version (see
// the package documentation).
func terraformPURL(host, namespace, name, version, kind string, quals map[string]string) string {
	if host != defaultRegistry {
		quals["repository_url"] = "https://" + host
	}
	q := packageurl.QualifiersFromMap(quals)
	sort.Slice(q, func(i, j int) bool { return q[i].Key < q[j].Key })
	return packageurl.NewPackageURL("terraform", namespace, name, version, q, kind).ToString()
}

func providerRef(p dist.ProviderVersion, pk dist.Package) string {
	return "provider/" + p.Addr() + "@" + p.Version + "/" + pk.Platform()
}

func moduleRef(m dist.ModuleVersion) string { return "module/" + m.Addr() + "@" + m.Version }

func providerPackage(in Input, p dist.ProviderVersion, pk dist.Package, keys []string) cdx.Component {
	ref := providerRef(p, pk)
	c := cdx.Component{
		BOMRef:     ref,
		Type:       cdx.ComponentTypeApplication,
		Name:       p.Addr(),
		Version:    p.Version,
		PackageURL: terraformPURL(p.Host, p.Namespace, p.Type, p.Version, "providers", map[string]string{"os": pk.OS, "arch": pk.Arch}),
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: pk.Digest.Hex()}},
	}
	props := props{}
	props.add("airgap:kind", "provider-package")
	props.add("airgap:os", pk.OS)
	props.add("airgap:arch", pk.Arch)
	props.add("airgap:filename", pk.Filename)
	props.add("airgap:h1", pk.H1)
	props.add("airgap:zh", pk.ZH())
	for _, k := range keys {
		props.add("airgap:signing-key", k)
	}
	props.add("airgap:trust", p.Trust())
	if p.MirrorHashesOnly {
		props.add("airgap:mirror", p.Mirror)
	}
	if p.SiteSigned {
		props.add("airgap:site-signed", "true")
	}
	var info *goinfo.Info
	ok := false
	if in.BuildInfo != nil {
		info, ok = in.BuildInfo(pk)
	}
	switch {
	case !ok:
		props.add("airgap:go:build-info", "not recorded")
	case info.None != "":
		props.add("airgap:go:build-info", "none: "+info.None)
		props.add("airgap:go:plugin", info.File)
	default:
		props.add("airgap:go:plugin", info.File)
		props.add("airgap:go:version", info.GoVersion)
		props.add("airgap:go:path", info.Path)
		for _, s := range info.Settings {
			props.add("airgap:go:setting:"+s.Key, s.Value)
		}
		if mods := goModules(ref, info); len(mods) > 0 {
			c.Components = &mods
		}
	}
	c.Properties = props.sorted()
	return c
}

// goModules are the nested components of a plugin's Go modules.
func goModules(parent string, info *goinfo.Info) []cdx.Component {
	var out []cdx.Component
	add := func(m goinfo.Module, main bool) {
		path, version := m.Path, m.Version
		pr := props{}
		if m.Sum != "" {
			pr.add("airgap:go:sum", m.Sum)
		}
		if main {
			pr.add("airgap:go:main-module", "true")
		}
		if r := m.Replace; r != nil {
			pr.add("airgap:go:replaced-by", strings.TrimSuffix(r.Path+"@"+r.Version, "@"))
			if r.Sum != "" {
				pr.add("airgap:go:replacement-sum", r.Sum)
			}
			if r.Version != "" { // a module, not a local directory: what was compiled
				path, version = r.Path, r.Version
			}
		}
		c := cdx.Component{
			BOMRef:     parent + "/go/" + m.Path + "@" + m.Version,
			Type:       cdx.ComponentTypeLibrary,
			Name:       m.Path,
			Version:    m.Version,
			PackageURL: golangPURL(path, version),
			Properties: pr.sorted(),
		}
		out = append(out, c)
	}
	if info.Main != nil {
		add(*info.Main, true)
	}
	for _, d := range info.Deps {
		add(d, false)
	}
	if v, ok := stdlibVersion(info.GoVersion); ok {
		out = append(out, cdx.Component{
			BOMRef: parent + "/go/stdlib@" + v, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: info.GoVersion,
			PackageURL: packageurl.NewPackageURL(packageurl.TypeGolang, "", "stdlib", v, nil, "").ToString(),
		})
	}
	sortComponents(out)
	return out
}

// golangPURL is pkg:golang/PATH@VERSION (the path's last element is the
// name, the rest the namespace).
func golangPURL(path, version string) string {
	ns, name := "", path
	if i := strings.LastIndex(path, "/"); i >= 0 {
		ns, name = path[:i], path[i+1:]
	}
	if version == "(devel)" {
		version = ""
	}
	return packageurl.NewPackageURL(packageurl.TypeGolang, ns, name, version, nil, "").ToString()
}

// reGoRelease is a Go release at the start of a version string, after
// "go": "1.22.5", "1.23rc1".
var reGoRelease = regexp.MustCompile(`^go([0-9]+(\.[0-9]+)*((rc|beta)[0-9]+)?)`)

// stdlibVersion turns "go1.22.5" (or "go1.26.8 X:jsonv2",
// "go1.26.8-X:jsonv2" with experiments) into "1.22.5", the version
// vulnerability databases give the Go standard library; a development
// build ("devel go1.23-abc") has none.
func stdlibVersion(goVersion string) (string, bool) {
	m := reGoRelease.FindStringSubmatch(goVersion)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func module(m dist.ModuleVersion, docs bool) cdx.Component {
	ref := moduleRef(m)
	c := cdx.Component{
		BOMRef:     ref,
		Type:       cdx.ComponentTypeLibrary,
		Name:       m.Addr(),
		Version:    m.Version,
		PackageURL: terraformPURL(m.Host, m.Namespace+"/"+m.Name, m.System, m.Version, "modules", map[string]string{}),
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: m.Archive.Hex()}},
	}
	pr := props{}
	pr.add("airgap:kind", "module")
	pr.add("airgap:source", m.Source)
	pr.add("airgap:commit", m.Commit)
	pr.add("airgap:subdir", m.Subdir)
	if m.Zip != "" {
		pr.add("airgap:zip-sha256", m.Zip.Hex())
	}
	if docs && m.Docs != "" {
		pr.add("airgap:docs-sha256", m.Docs.Hex())
	}
	c.Properties = pr.sorted()
	var vendored []cdx.Component
	for _, v := range m.Vendored {
		vp := props{}
		vp.add("airgap:vendored:call", fmt.Sprintf("%s:%d", v.File, v.Line))
		vp.add("airgap:vendored:module-block", v.Module)
		vp.add("airgap:vendored:path", v.Path)
		vp.add("airgap:commit", v.Commit)
		vendored = append(vendored, cdx.Component{
			BOMRef:     fmt.Sprintf("%s/vendored/%s:%d/%s", ref, v.File, v.Line, v.Module),
			Type:       cdx.ComponentTypeLibrary,
			Name:       v.Source,
			Version:    v.Commit,
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: v.Digest.Hex()}},
			Properties: vp.sorted(),
		})
	}
	if len(vendored) > 0 {
		sortComponents(vendored)
		c.Components = &vendored
	}
	return c
}

// props collects a component's properties; empty values are left out.
type props []cdx.Property

func (p *props) add(name, value string) {
	if value != "" {
		*p = append(*p, cdx.Property{Name: name, Value: value})
	}
}

func (p props) sorted() *[]cdx.Property {
	if len(p) == 0 {
		return nil
	}
	out := []cdx.Property(p)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Value < out[j].Value
	})
	return &out
}

func sortComponents(cs []cdx.Component) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].BOMRef < cs[j].BOMRef })
}

// docsRef is the bom-ref of a provider version's documentation.
func docsRef(p dist.ProviderVersion) string { return "docs/" + p.Addr() + "@" + p.Version }

// docsComponent describes a provider version's documentation (generator
// 2): a "data" component named for the provider, with the docs tar's
// SHA-256, where it came from (repository, tag, commit, folder) and what
// it holds; or, for docs export left out, airgap:docs:missing and why.
func docsComponent(p dist.ProviderVersion) cdx.Component {
	d := p.Docs
	c := cdx.Component{BOMRef: docsRef(p), Type: cdx.ComponentTypeData, Name: "docs of " + p.Addr(), Version: p.Version}
	pr := props{}
	pr.add("airgap:kind", "provider-docs")
	pr.add("airgap:source", d.Source)
	if d.Archive == "" {
		pr.add("airgap:docs:missing", d.Missing)
		c.Properties = pr.sorted()
		return c
	}
	c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: d.Archive.Hex()}}
	pr.add("airgap:ref", d.Ref)
	pr.add("airgap:commit", d.Commit)
	pr.add("airgap:docs:folder", d.Dir)
	pr.add("airgap:docs:pages", fmt.Sprint(d.Pages))
	pr.add("airgap:docs:files", fmt.Sprint(d.Files))
	pr.add("airgap:docs:bytes", fmt.Sprint(d.Bytes))
	c.Properties = pr.sorted()
	return c
}
