package sbom_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/dist/sbom/sbomtest"
	"github.com/airgap/airgap/verify"
)

func digest(s string) verify.Digest { return verify.DigestBytes([]byte(s)) }

// catalog is a catalog of every shape the SBOM describes: two origins, two
// platforms, a site re-signed provider, one with a network mirror's hashes
// only, a module with a vendored package and one with a subdirectory and
// commit.
func catalog() *dist.Catalog {
	c := &dist.Catalog{
		Providers: []dist.ProviderVersion{
			{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws", Version: "5.60.0",
				SigningKeys: []dist.SigningKey{{KeyID: "34365D9472D7468F"}},
				Packages: []dist.Package{
					{OS: "linux", Arch: "amd64", Filename: "terraform-provider-aws_5.60.0_linux_amd64.zip", Digest: digest("aws-linux"), H1: "h1:" + strings.Repeat("A", 43) + "=", BuildInfo: digest("bi-linux")},
					{OS: "darwin", Arch: "arm64", Filename: "terraform-provider-aws_5.60.0_darwin_arm64.zip", Digest: digest("aws-darwin"), H1: "h1:" + strings.Repeat("B", 43) + "=", BuildInfo: digest("bi-darwin")},
				}},
			{Host: "registry.opentofu.org", Namespace: "hashicorp", Type: "random", Version: "3.6.2", SiteSigned: true,
				Packages: []dist.Package{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-random_3.6.2_linux_amd64.zip", Digest: digest("random"), H1: "h1:" + strings.Repeat("C", 43) + "="}}},
			{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "null", Version: "3.2.3", MirrorHashesOnly: true, Mirror: "https://mirror.example.com/terraform/",
				Packages: []dist.Package{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-null_3.2.3_linux_amd64.zip", Digest: digest("null"), H1: "h1:" + strings.Repeat("D", 43) + "=",
					MirrorHashes: []string{"h1:" + strings.Repeat("D", 43) + "="}}}},
		},
		Modules: []dist.ModuleVersion{
			{Host: "registry.terraform.io", Namespace: "terraform-aws-modules", Name: "vpc", System: "aws", Version: "5.8.1",
				Archive: digest("vpc"), Source: "git::https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.8.1", Commit: strings.Repeat("a", 40), Zip: digest("vpc.zip"),
				Vendored: []dist.VendoredCall{{File: "main.tf", Line: 4, Module: "net", Source: "git::https://github.com/example/net.git//sub?ref=v1", Digest: digest("net"), Commit: strings.Repeat("b", 40), Path: "./.airgap/modules/x/sub"}}},
			{Host: "registry.example.com:8443", Namespace: "corp", Name: "base", System: "aws", Version: "1.0.0", Archive: digest("base"), Subdir: "modules/base", Source: "https://archives.example.com/base.tar.gz"},
		},
	}
	return c
}

// selfInfo is build information as goinfo reads it from a provider built
// with modules and VCS stamps (goinfo's tests read real binaries).
func selfInfo(t *testing.T) *goinfo.Info {
	return &goinfo.Info{
		File: "terraform-provider-aws_v5.60.0_x5", GoVersion: "go1.22.5", Path: "github.com/hashicorp/terraform-provider-aws",
		Main: &goinfo.Module{Path: "github.com/hashicorp/terraform-provider-aws", Version: "(devel)"},
		Deps: []goinfo.Module{
			{Path: "github.com/package-url/packageurl-go", Version: "v0.1.7", Sum: "h1:abc="},
			{Path: "golang.org/x/net", Version: "v0.20.0", Sum: "h1:def=", Replace: &goinfo.Module{Path: "golang.org/x/net", Version: "v0.23.0", Sum: "h1:ghi="}},
		},
		Settings: []goinfo.Setting{{Key: "GOOS", Value: "linux"}, {Key: "vcs.revision", Value: strings.Repeat("c", 40)}},
	}
}

func input(t *testing.T) sbom.Input {
	info := selfInfo(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	return sbom.Input{
		Subject: "airgap bundle", Tool: "airgap 1.2.3", Time: &at, Catalog: catalog(),
		BuildInfo: func(pk dist.Package) (*goinfo.Info, bool) {
			switch pk.BuildInfo {
			case digest("bi-linux"):
				return info, true
			case digest("bi-darwin"):
				return &goinfo.Info{File: "terraform-provider-aws_v5.60.0_x5", None: goinfo.NoneNotGo}, true
			}
			return nil, false
		},
		Keys: func(p dist.ProviderVersion) []string {
			if p.Type == "aws" {
				return []string{"C874011F0AB405110D02105534365D9472D7468F"}
			}
			return nil
		},
	}
}

// The SBOM validates against the CycloneDX 1.6 schema, says what the
// catalog holds, and is the same bytes every time.
func TestGenerate(t *testing.T) {
	in := input(t)
	a, err := sbom.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	sbomtest.Validate(t, a)
	// The schema check can fail: a component type CycloneDX does not have.
	if err := sbomtest.Check(bytes.Replace(a, []byte(`"type":"library"`), []byte(`"type":"terraform-module"`), 1)); err == nil {
		t.Fatal("the schema accepted an unknown component type")
	}
	in2 := input(t)
	c := in2.Catalog
	c.Providers[0], c.Providers[1] = c.Providers[1], c.Providers[0] // order does not matter
	b, _ := sbom.Generate(in2)
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs gave different bytes")
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(a), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") || bom.Metadata.Timestamp != "2026-11-01T00:00:00Z" {
		t.Errorf("serial %q, timestamp %q", bom.SerialNumber, bom.Metadata.Timestamp)
	}
	byRef := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byRef[c.BOMRef] = c
	}
	linux := byRef["provider/registry.terraform.io/hashicorp/aws@5.60.0/linux_amd64"]
	if linux.PackageURL != "pkg:terraform/hashicorp/aws@5.60.0?arch=amd64&os=linux#providers" || (*linux.Hashes)[0].Value != digest("aws-linux").Hex() {
		t.Errorf("provider package component: %+v", linux)
	}
	prop := func(c cdx.Component, name string) string {
		for _, p := range *c.Properties {
			if p.Name == name {
				return p.Value
			}
		}
		return ""
	}
	if prop(linux, "airgap:signing-key") != "C874011F0AB405110D02105534365D9472D7468F" || prop(linux, "airgap:zh") != "zh:"+digest("aws-linux").Hex() ||
		prop(linux, "airgap:go:version") == "" || prop(linux, "airgap:h1") == "" {
		t.Errorf("provider package properties: %+v", *linux.Properties)
	}
	var stdlib, xmod, replaced bool
	for _, m := range *linux.Components {
		replaced = replaced || m.PackageURL == "pkg:golang/golang.org/x/net@v0.23.0" && m.Version == "v0.20.0"
		stdlib = stdlib || strings.HasPrefix(m.PackageURL, "pkg:golang/stdlib@1.")
		xmod = xmod || strings.HasPrefix(m.PackageURL, "pkg:golang/github.com/package-url/packageurl-go@v")
	}
	if !stdlib || !xmod || !replaced {
		t.Errorf("the Go modules of the plugin are missing: stdlib %v, packageurl-go %v", stdlib, xmod)
	}
	darwin := byRef["provider/registry.terraform.io/hashicorp/aws@5.60.0/darwin_arm64"]
	if !strings.HasPrefix(prop(darwin, "airgap:go:build-info"), "none: ") || darwin.Components != nil {
		t.Errorf("a plugin without build information: %+v", darwin)
	}
	random := byRef["provider/registry.opentofu.org/hashicorp/random@3.6.2/linux_amd64"]
	if random.PackageURL != "pkg:terraform/hashicorp/random@3.6.2?arch=amd64&os=linux&repository_url=https:%2F%2Fregistry.opentofu.org#providers" ||
		prop(random, "airgap:site-signed") != "true" || prop(random, "airgap:trust") != dist.TrustSite || prop(random, "airgap:go:build-info") != "not recorded" {
		t.Errorf("the site-signed provider: %+v", random)
	}
	if prop(linux, "airgap:trust") != dist.TrustPublisher || prop(linux, "airgap:mirror") != "" {
		t.Errorf("the publisher-signed provider's trust: %+v", *linux.Properties)
	}
	null := byRef["provider/registry.terraform.io/hashicorp/null@3.2.3/linux_amd64"]
	if prop(null, "airgap:trust") != dist.TrustMirror || prop(null, "airgap:mirror") != "https://mirror.example.com/terraform/" || prop(null, "airgap:site-signed") != "" {
		t.Errorf("the provider with mirror hashes only: %+v", null)
	}
	vpc := byRef["module/registry.terraform.io/terraform-aws-modules/vpc/aws@5.8.1"]
	if vpc.PackageURL != "pkg:terraform/terraform-aws-modules/vpc/aws@5.8.1#modules" || prop(vpc, "airgap:commit") != strings.Repeat("a", 40) ||
		vpc.Components == nil || (*vpc.Components)[0].Name != "git::https://github.com/example/net.git//sub?ref=v1" {
		t.Errorf("module component: %+v", vpc)
	}
	base := byRef["module/registry.example.com:8443/corp/base/aws@1.0.0"]
	if !strings.Contains(base.PackageURL, "repository_url=") || prop(base, "airgap:subdir") != "modules/base" {
		t.Errorf("module from another registry: %+v", base)
	}
}

// Strings from bundles reach the SBOM as JSON strings: a hostile source
// cannot break the document out of its field.
func TestGenerateHostileStrings(t *testing.T) {
	in := input(t)
	in.Catalog.Modules[0].Source = "\"}],\"evil\":{\"x\":\"<script>\x1b[2J"
	b, err := sbom.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	sbomtest.Validate(t, b)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil || v["evil"] != nil {
		t.Fatalf("the source escaped its field: %v", err)
	}
	if !bytes.Contains(b, []byte(`<script>`)) || bytes.Contains(b, []byte("\x1b")) {
		t.Errorf("HTML should stay readable (no \\u003c) and control characters escaped")
	}
}

func TestStdlibVersion(t *testing.T) {
	for in, want := range map[string]string{"go1.22.5": "1.22.5", "go1.26.8 X:jsonv2": "1.26.8", "go1.26.8-X:jsonv2": "1.26.8", "go1.23rc1": "1.23rc1", "devel go1.23-abc": "", "": ""} {
		info := &goinfo.Info{GoVersion: in, File: "p"}
		in2 := input(t)
		in2.Catalog = &dist.Catalog{Providers: []dist.ProviderVersion{{Host: "registry.terraform.io", Namespace: "x", Type: "y", Version: "1.0.0",
			Packages: []dist.Package{{OS: "linux", Arch: "amd64", Filename: "f.zip", Digest: digest("z"), H1: "h1:" + strings.Repeat("A", 43) + "="}}}}}
		in2.BuildInfo = func(dist.Package) (*goinfo.Info, bool) { return info, true }
		b, err := sbom.Generate(in2)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(string(b), `"purl":"pkg:golang/stdlib@`+want+`"`)
		if want == "" && strings.Contains(string(b), "pkg:golang/stdlib") || want != "" && !got {
			t.Errorf("%q: want stdlib@%s in %s", in, want, b)
		}
	}
}

// Write streams the bytes Encode(Build(in)) makes from the whole document
// in memory — for a catalog, an empty one, one with hostile strings (a
// sentinel-like bom-ref among them) and one without time or tool — and
// stops at the first write error.
func TestWriteIsEncode(t *testing.T) {
	hostile := input(t)
	hostile.Catalog.Modules[0].Source = "\"}],\"components\":[{\"bom-ref\":\"airgap:sbom:components-go-here\"}]"
	bare := input(t)
	bare.Time, bare.Tool = nil, ""
	empty := input(t)
	empty.Catalog = &dist.Catalog{}
	for name, in := range map[string]sbom.Input{"catalog": input(t), "hostile": hostile, "bare": bare, "empty": empty} {
		want, err := sbom.Encode(sbom.Build(in))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		n, err := sbom.Write(&got, in)
		if err != nil || n != int64(len(want)) || !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%s: Write (%d bytes, %v) differs from Encode(Build) (%d bytes):\n%s\n%s", name, n, err, len(want), got.Bytes(), want)
		}
		if name != "empty" { // generator 1 writes "components":null for an empty catalog
			sbomtest.Validate(t, got.Bytes())
		}
	}
	if _, err := sbom.Write(failingWriter{}, input(t)); err == nil {
		t.Fatal("a write error was lost")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
