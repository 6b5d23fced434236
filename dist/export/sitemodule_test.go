package export_test

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/export"
)

// TestSiteModuleSpec: the site module block's sources and refs, per
// version, and every mistake an error at file:line.
func TestSiteModuleSpec(t *testing.T) {
	req, err := export.ParseSpec(writeSpec(t, `
module "site.example/net/vpc/aws" {
  source   = "git::https://git.site.example/net/vpc.git//modules/vpc"
  versions = ["1.1.0", "1.0.0", "2.0.0-rc.1"]
  ref      = "release/${version}"
}
module "Site.Example:8443/net/lb/aws" {
  source   = "git@git.site.example:net/lb.git?depth=1"
  versions = ["0.1.0"]
}
module "site.example/net/dns/aws" {
  source   = "https://archives.site.example/dns-${version}.tar.gz//sub"
  versions = ["3.0.0", "3.1.0"]
}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	vpc, lb, dns := req.Modules[0].Site, req.Modules[1].Site, req.Modules[2].Site
	if strings.Join(vpc.Versions, " ") != "1.0.0 1.1.0 2.0.0-rc.1" {
		t.Errorf("versions %v", vpc.Versions)
	}
	for v, want := range map[string]string{
		"1.0.0":      "git::https://git.site.example/net/vpc.git//modules/vpc?ref=release%2F1.0.0",
		"2.0.0-rc.1": "git::https://git.site.example/net/vpc.git//modules/vpc?ref=release%2F2.0.0-rc.1",
	} {
		if got := vpc.Locations[v]; got != want {
			t.Errorf("vpc %s: %s, want %s", v, got, want)
		}
	}
	if got := lb.Locations["0.1.0"]; got != "git::git@git.site.example:net/lb.git?ref=v0.1.0" {
		t.Errorf("scp-like source: %s", got)
	}
	if req.Modules[1].Addr.Host != "site.example:8443" {
		t.Errorf("host %s", req.Modules[1].Addr.Host)
	}
	if got := dns.Locations["3.1.0"]; got != "https://archives.site.example/dns-3.1.0.tar.gz//sub" || dns.Refs["3.1.0"] != "" {
		t.Errorf("archive source: %s", got)
	}
	for name, c := range map[string]struct{ body, want string }{
		"no versions":         {`module "s.example/a/b/c" { source = "git::https://g.example/r.git" }`, `needs versions = ["1.0.0", …]`},
		"empty versions":      {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = []\n}", "needs versions"},
		"constraint string":   {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = \"~> 1.0\"\n}", "needs versions"},
		"twice":               {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\", \"1.0.0\"]\n}", "listed twice"},
		"build metadata":      {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0+x\"]\n}", "not a semantic version"},
		"latest":              {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\"]\n  latest = 2\n}", "latest and all do not apply"},
		"archive, 2 versions": {"module \"s.example/a/b/c\" {\n  source = \"https://a.example/x.tar.gz\"\n  versions = [\"1.0.0\", \"1.1.0\"]\n}", "must use ${version}"},
		"ref on archive":      {"module \"s.example/a/b/c\" {\n  source = \"https://a.example/x-${version}.tar.gz\"\n  versions = [\"1.0.0\"]\n  ref = \"v1\"\n}", "ref is for git sources"},
		"ref on registry":     {"module \"a/b/c\" {\n  ref = \"v1\"\n}", "ref is for a module with source"},
		"list on registry":    {"module \"a/b/c\" {\n  versions = [\"1.0.0\"]\n}", "a list of versions is for a module with source"},
		"option ref":          {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\"]\n  ref = \"--upload-pack=x\"\n}", "cannot start with '-'"},
		"odd ref":             {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\"]\n  ref = \"a..b\"\n}", "not a valid git ref"},
		"function":            {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\"]\n  ref = upper(\"v\")\n}", "Function calls not allowed"},
		"local path":          {"module \"s.example/a/b/c\" {\n  source = \"git::file:///srv/r.git\"\n  versions = [\"1.0.0\"]\n}", "local disk"},
		"s3":                  {"module \"s.example/a/b/c\" {\n  source = \"s3::https://b/x.zip\"\n  versions = [\"1.0.0\"]\n}", "cannot be fetched by airgap"},
		"declared twice":      {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\"]\n}\nmodule \"S.example/a/b/c\" {}", "a site module is declared once"},
		"subdir in address":   {"module \"s.example/a/b/c//x\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [\"1.0.0\"]\n}", "no //subdirectory in the address"},
		"for expression":      {"module \"s.example/a/b/c\" {\n  source = \"git::https://g.example/r.git\"\n  versions = [for a in [1, 2] : [for b in [1, 2] : \"1.0.0\"]]\n}", "for expression not evaluated"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := export.ParseSpec(writeSpec(t, c.body), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "airgap.hcl:") {
				t.Errorf("err = %v, want %q at airgap.hcl:line", err, c.want)
			}
		})
	}
}
