package export

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
)

// A site module is one the site publishes itself, from its own git server
// or HTTP archives, under a registry address of its own:
//
//	module "site.example/net/vpc/aws" {
//	  source   = "git::https://git.site.example/net/vpc.git//modules/vpc"
//	  versions = ["1.0.0", "1.1.0"]
//	  ref      = "release-${version}"   # default "v${version}"
//	}
//
// Each version is fetched exactly as a registry module's location would be
// (the same getter, limits, vendoring and dependency scan: dist/getter,
// dist/vendoring), from source with ?ref= set to ref evaluated for that
// version; an HTTP archive source names the version itself
// ("https://archives.site.example/vpc-${version}.tar.gz"). No registry is
// asked anything, so it works on the offline side too, against an internal
// git server. The bundle then serves it like any module: the appliance
// answers modules.v1 for its host (client-config writes a host block for
// it; or point the name at the appliance in DNS).
//
// Rules, each an error at file:line: the address names its host (a site
// module cannot take a public registry's name: registry.terraform.io and
// registry.opentofu.org addresses belong to their publishers, and a store
// would refuse the real module's bundle for a version the site published
// under its name); versions is a non-empty list of distinct semantic
// versions (MAJOR.MINOR.PATCH[-PRE], no "v", no build metadata, as the
// registry protocol requires); source and ref may use ${version} and
// nothing else; a git source gives its ref with ref, not ?ref=; ref is for
// git sources only; an HTTP source for more than one version must use
// ${version} (or every version would be the same archive); latest and all do
// not apply. A ref that does not exist fails the export, naming it and the
// block.

// publicRegistries are the hosts a site module may not be published under.
var publicRegistries = []string{"registry.terraform.io", "registry.opentofu.org"}

// defaultRef is the git ref of a site module version when ref is not set.
const defaultRef = "v${version}"

// SiteModule is a site module's block: the versions it publishes and where
// each is fetched from.
type SiteModule struct {
	Versions  []string          // ascending
	Locations map[string]string // version -> module source address (git::…?ref=…, or an archive URL)
	Refs      map[string]string // version -> git ref ("" for archives)
	At        string            // file:line of the block
}

// siteModule reads a module block that has a source.
func siteModule(m specModule, addr dist.Module, at string) (*SiteModule, error) {
	label := m.Address
	if strings.Count(strings.SplitN(label, "//", 2)[0], "/") != 3 {
		return nil, rangeErr(m.DefRange, "module %q: a module with source is the site's own and needs its host in the address (HOST/NAMESPACE/NAME/SYSTEM, e.g. site.example/%s/%s/%s)", label, addr.Namespace, addr.Name, addr.System)
	}
	for _, h := range publicRegistries {
		if addr.Host == h {
			return nil, rangeErr(m.DefRange, "module %q: %s is a public registry; a site module is published under the site's own host name (e.g. site.example/%s/%s/%s), so it cannot be mistaken for, or shadow, a public module", label, h, addr.Namespace, addr.Name, addr.System)
		}
	}
	if strings.Contains(label, "//") {
		return nil, rangeErr(m.DefRange, "module %q: no //subdirectory in the address; put it in source", label)
	}
	if m.Latest != nil || m.All != nil {
		return nil, rangeErr(m.DefRange, "module %q: latest and all do not apply to a module with source: versions lists exactly what is published", label)
	}
	versions, err := siteVersions(m)
	if err != nil {
		return nil, err
	}
	for _, e := range []struct {
		name string
		expr hcl.Expression
	}{{"source", m.From}, {"ref", m.Ref}} {
		for _, tr := range e.expr.Variables() {
			if tr.RootName() != "version" {
				return nil, rangeErr(tr.SourceRange(), "module %q: %s may use ${version} and nothing else (not %s)", label, e.name, traversalText(tr))
			}
		}
	}
	sm := &SiteModule{Versions: versions, Locations: map[string]string{}, Refs: map[string]string{}, At: at}
	usesVersion := len(m.From.Variables()) > 0
	for _, v := range versions {
		loc, ref, kind, err := siteLocation(m, label, v)
		if err != nil {
			return nil, err
		}
		if kind == "http" && len(versions) > 1 && !usesVersion {
			return nil, rangeErr(m.From.Range(), "module %q: an archive source for %d versions must use ${version} (otherwise every version would be the same archive)", label, len(versions))
		}
		sm.Locations[v], sm.Refs[v] = loc, ref
	}
	return sm, nil
}

// traversalText is a variable reference as written (var.x.y).
func traversalText(tr hcl.Traversal) string {
	s := tr.RootName()
	for _, step := range tr[1:] {
		if a, ok := step.(hcl.TraverseAttr); ok {
			s += "." + a.Name
		}
	}
	return s
}

// siteVersions reads and checks versions = ["1.0.0", …].
func siteVersions(m specModule) ([]string, error) {
	val, diags := m.Versions.Value(nil)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	r := m.Versions.Range()
	if val.IsNull() || !(val.Type().IsListType() || val.Type().IsTupleType()) || val.LengthInt() == 0 {
		return nil, rangeErr(m.DefRange, "module %q: a module with source needs versions = [\"1.0.0\", …], the versions to publish", m.Address)
	}
	var out []string
	seen := map[string]string{}
	for it := val.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, rangeErr(r, "module %q: versions must be strings", m.Address)
		}
		s := e.AsString()
		if !dist.ValidVersion(s) {
			hint := ""
			if strings.HasPrefix(s, "v") && dist.ValidVersion(s[1:]) {
				hint = fmt.Sprintf(" (write %q: the ref, not the version, carries the v)", s[1:])
			}
			return nil, rangeErr(r, "module %q: version %q is not a semantic version MAJOR.MINOR.PATCH[-PRERELEASE]%s", m.Address, dist.Printable(s), hint)
		}
		canon := version.Must(version.NewVersion(s)).String()
		if prev, dup := seen[canon]; dup {
			return nil, rangeErr(r, "module %q: version %s is listed twice (also as %s)", m.Address, s, prev)
		}
		seen[canon] = s
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return dist.CompareVersions(out[i], out[j]) < 0 })
	return out, nil
}

// siteLocation evaluates source and ref for version v and returns the
// module source address to fetch, the git ref ("" for an archive) and the
// source's kind.
func siteLocation(m specModule, label, v string) (loc, ref, kind string, err error) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"version": cty.StringVal(v)}}
	sv, diags := m.From.Value(ctx)
	if diags.HasErrors() {
		return "", "", "", diagErr(diags)
	}
	if sv.IsNull() || sv.Type() != cty.String || sv.AsString() == "" {
		return "", "", "", rangeErr(m.From.Range(), "module %q: source must be a git or HTTP archive address", label)
	}
	src, err := getter.Parse(sv.AsString())
	if err != nil {
		return "", "", "", rangeErr(m.From.Range(), "module %q: source: %v", label, err)
	}
	rv, diags := m.Ref.Value(ctx)
	if diags.HasErrors() {
		return "", "", "", diagErr(diags)
	}
	if src.Kind != "git" {
		if !rv.IsNull() {
			return "", "", "", rangeErr(m.Ref.Range(), "module %q: ref is for git sources; an archive source names the version in its URL", label)
		}
		return src.Raw, "", src.Kind, nil
	}
	if src.Ref != "" {
		return "", "", "", rangeErr(m.From.Range(), "module %q: give the git ref with ref = \"…\" (it may use ${version}), not ?ref= in source", label)
	}
	ref = strings.ReplaceAll(defaultRef, "${version}", v)
	if !rv.IsNull() {
		if rv.Type() != cty.String {
			return "", "", "", rangeErr(m.Ref.Range(), "module %q: ref must be a string", label)
		}
		ref = rv.AsString()
	}
	if err := checkRef(ref); err != nil {
		return "", "", "", rangeErr(m.Ref.Range(), "module %q: version %s: ref %q: %v", label, v, dist.Printable(ref), err)
	}
	loc = gitLocation(src, ref)
	if back, err := getter.Parse(loc); err != nil || back.Ref != ref || back.Subdir != src.Subdir {
		return "", "", "", rangeErr(m.From.Range(), "module %q: source and ref %q do not make a usable git address", label, ref)
	}
	return loc, ref, "git", nil
}

// checkRef refuses refs git could read as an option or that no ref name
// can be (git check-ref-format's rules that matter here).
func checkRef(ref string) error {
	switch {
	case ref == "" || len(ref) > 256:
		return fmt.Errorf("empty or longer than 256 bytes")
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("a ref cannot start with '-'")
	case strings.ContainsAny(ref, " ~^:?*[\\") || strings.Contains(ref, "..") || strings.Contains(ref, "@{") || dist.Printable(ref) != ref:
		return fmt.Errorf("not a valid git ref name")
	}
	return nil
}

// gitLocation is the git:: source address of src at ref: the URL, the
// //subdirectory, then the query with ref, as go-getter reads them.
func gitLocation(src *getter.Source, ref string) string {
	base, query, _ := strings.Cut(src.URL, "?")
	loc := "git::" + base
	if src.Subdir != "" {
		loc += "//" + src.Subdir
	}
	q, _ := url.ParseQuery(query)
	if q == nil {
		q = url.Values{}
	}
	q.Set("ref", ref)
	return loc + "?" + q.Encode()
}
