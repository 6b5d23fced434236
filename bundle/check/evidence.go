package check

import (
	"slices"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/verify"
)

// The evidence 'airgap verify' shows beside the checks: why each entry is
// in the bundle (Manifest.RequestedBy), what each provider's plugins were
// built from (the SBOM's content, summarised), and whether any scanner
// gate ran.

// NotableModules are the Go modules verify names, with their versions, in
// its summary of each provider's build information: the cryptography,
// network and plugin-protocol code a security review asks about first.
// The SBOM lists every module.
var NotableModules = []string{
	"golang.org/x/crypto", "golang.org/x/net", "golang.org/x/oauth2", "golang.org/x/sys",
	"google.golang.org/grpc", "google.golang.org/protobuf",
	"github.com/hashicorp/go-plugin", "github.com/hashicorp/terraform-plugin-go",
	"github.com/hashicorp/terraform-plugin-framework", "github.com/hashicorp/terraform-plugin-sdk/v2",
}

// BuildSummary is what a provider's plugin was built from, on the
// platforms listed (those whose plugins agree): its Go version, main
// module, how many modules, the NotableModules among them, or why there is
// no build information (None, with the plugin's file name).
type BuildSummary struct {
	Platforms   []string       `json:"platforms"`
	File        string         `json:"file,omitempty"`
	None        string         `json:"none,omitempty"`
	GoVersion   string         `json:"go_version,omitempty"`
	Main        string         `json:"main,omitempty"`
	MainVersion string         `json:"main_version,omitempty"`
	Modules     int            `json:"modules"`
	Notable     []NotableEntry `json:"notable"`
}

// NotableEntry is one of the NotableModules a plugin was built with (the
// version of its replacement, when it is replaced).
type NotableEntry struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// summarizeBuild is the BuildSummary of one plugin (without platforms).
// Its strings are copies: those of info share the memory of the whole
// module string they were parsed from (up to goinfo.MaxModInfo), which a
// summary kept per package must not hold.
func summarizeBuild(info *goinfo.Info) *BuildSummary {
	c := strings.Clone
	s := &BuildSummary{File: c(info.File), None: c(info.None), GoVersion: c(info.GoVersion), Notable: []NotableEntry{}}
	if info.None != "" {
		return s
	}
	s.Modules = info.Modules()
	if info.Main != nil {
		s.Main, s.MainVersion = c(info.Main.Path), c(info.Main.Version)
	}
	for _, d := range info.Deps {
		if !slices.Contains(NotableModules, d.Path) {
			continue
		}
		v := d.Version
		if d.Replace != nil {
			v = "=> " + d.Replace.Path + " " + d.Replace.Version
		}
		s.Notable = append(s.Notable, NotableEntry{Path: c(d.Path), Version: c(v)})
	}
	return s
}

// noteBuild records the build summary of package d (the caller holds the
// Checker's lock).
func (r *Result) noteBuild(d verify.Digest, info *goinfo.Info) {
	if r.builds == nil {
		r.builds = map[verify.Digest]*BuildSummary{}
	}
	r.builds[d] = summarizeBuild(info)
}

// same reports whether two summaries say the same but for the platforms.
func (s *BuildSummary) same(o *BuildSummary) bool {
	return s.File == o.File && s.None == o.None && s.GoVersion == o.GoVersion && s.Main == o.Main &&
		s.MainVersion == o.MainVersion && s.Modules == o.Modules && slices.Equal(s.Notable, o.Notable)
}

// Builds groups the build summaries of p's packages (those checked here:
// a delta's omitted ones are not) by what they say.
func (r *Result) Builds(p dist.ProviderVersion) []BuildSummary {
	out := []BuildSummary{}
	if r == nil {
		return out
	}
	for _, pk := range p.Packages {
		s := r.builds[pk.Digest]
		if s == nil {
			continue
		}
		found := false
		for i := range out {
			if out[i].same(s) {
				out[i].Platforms = append(out[i].Platforms, pk.Platform())
				found = true
				break
			}
		}
		if !found {
			c := *s
			c.Platforms = []string{pk.Platform()}
			out = append(out, c)
		}
	}
	return out
}
