package oci

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
	version "github.com/hashicorp/go-version"
	godigest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Artifact and media types OpenTofu reads (internal/getproviders and
// internal/getmodules in OpenTofu 1.10+).
const (
	ArtifactProvider       = "application/vnd.opentofu.provider"
	ArtifactProviderTarget = "application/vnd.opentofu.provider-target"
	ArtifactModule         = "application/vnd.opentofu.modulepkg"
	MediaTypeZip           = "archive/zip"
	// ModulesSegment is the path segment after the origin host that puts a
	// repository in the module namespace.
	ModulesSegment = "modules"
	// LatestTag is the tag OpenTofu resolves for an oci:// module source
	// without ?tag= or ?digest=.
	LatestTag = "latest"
)

// EmptyConfig is the OCI empty descriptor's content, the config blob of
// every manifest.
var (
	EmptyConfig     = []byte("{}")
	EmptyDescriptor = ocispec.DescriptorEmptyJSON
	EmptyDigest     = verify.Digest(ocispec.DescriptorEmptyJSON.Digest)
)

// reRepoName is the OCI distribution spec's repository name grammar.
var (
	reRepoName = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	reTag      = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
)

// ValidRepoName reports whether s is a valid OCI repository name.
func ValidRepoName(s string) bool { return len(s) <= 255 && reRepoName.MatchString(s) }

// validTag reports whether s is a valid OCI tag.
func validTag(s string) bool { return reTag.MatchString(s) }

// providerRepo is the repository name of a provider.
func providerRepo(host, ns, typ string) string {
	return strings.ToLower(host + "/" + ns + "/" + typ)
}

// ModuleRepo is the repository name of a registry module.
func ModuleRepo(host, ns, name, system string) string {
	return strings.ToLower(host + "/" + ModulesSegment + "/" + ns + "/" + name + "/" + system)
}

// Tag is the tag of a version: "+" becomes "_" (OpenTofu reverses it).
func Tag(v string) string { return strings.ReplaceAll(v, "+", "_") }

// Repository is one OCI repository of a catalog: a provider's versions or
// a module's (exactly one of the two lists is set, in ascending version
// order).
type Repository struct {
	Name      string
	Providers []*dist.ProviderVersion
	Modules   []*dist.ModuleVersion
}

// Repositories returns the repositories of cat, sorted by name. The
// versions point into cat, which must not change afterwards.
func Repositories(cat *dist.Catalog) []*Repository {
	byName := map[string]*Repository{}
	get := func(name string) *Repository {
		r := byName[name]
		if r == nil {
			r = &Repository{Name: name}
			byName[name] = r
		}
		return r
	}
	for i := range cat.Providers {
		p := &cat.Providers[i]
		if name := providerRepo(p.Host, p.Namespace, p.Type); ValidRepoName(name) && validTag(Tag(p.Version)) {
			r := get(name)
			r.Providers = append(r.Providers, p)
		}
	}
	for i := range cat.Modules {
		m := &cat.Modules[i]
		if m.Zip == "" {
			continue
		}
		if name := ModuleRepo(m.Host, m.Namespace, m.Name, m.System); ValidRepoName(name) && validTag(Tag(m.Version)) {
			r := get(name)
			r.Modules = append(r.Modules, m)
		}
	}
	out := make([]*Repository, 0, len(byName))
	for _, r := range byName {
		sort.SliceStable(r.Providers, func(i, j int) bool {
			return dist.CompareVersions(r.Providers[i].Version, r.Providers[j].Version) < 0
		})
		sort.SliceStable(r.Modules, func(i, j int) bool {
			return dist.CompareVersions(r.Modules[i].Version, r.Modules[j].Version) < 0
		})
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Left lists what of cat the layout leaves out, and why, one line each.
func Left(cat *dist.Catalog) []string {
	var out []string
	for _, p := range cat.Providers {
		if !ValidRepoName(providerRepo(p.Host, p.Namespace, p.Type)) || !validTag(Tag(p.Version)) {
			out = append(out, "provider "+p.String()+": not a valid OCI repository name or tag (a host with a port?)")
		}
	}
	for _, m := range cat.Modules {
		switch {
		case m.Zip == "":
			out = append(out, "module "+m.String()+": no zip (exported by an older airgap; export it again)")
		case !ValidRepoName(ModuleRepo(m.Host, m.Namespace, m.Name, m.System)) || !validTag(Tag(m.Version)):
			out = append(out, "module "+m.String()+": not a valid OCI repository name or tag (a host with a port?)")
		}
	}
	return out
}

// Manifest is a generated image manifest or index.
type Manifest struct {
	MediaType    string
	ArtifactType string
	Digest       verify.Digest
	Body         []byte
}

// Descriptor describes m.
func (m *Manifest) Descriptor() ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: m.MediaType, ArtifactType: m.ArtifactType, Digest: godigest.Digest(m.Digest), Size: int64(len(m.Body))}
}

// Blob is a layer or config a manifest refers to. Layers are store blobs
// (Role is their catalog role); the config is EmptyConfig.
type Blob struct {
	Digest    verify.Digest
	Size      int64
	MediaType string
}

// Descriptor describes b.
func (b Blob) Descriptor() ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: b.MediaType, Digest: godigest.Digest(b.Digest), Size: b.Size}
}

// Tagged is one tag: its manifest (an index for providers) and what that
// refers to, children before parents.
type Tagged struct {
	Tag      string
	Root     *Manifest
	Children []*Manifest // per-platform manifests of a provider index
	Layers   []Blob      // the zips (the config, EmptyConfig, is implied)
}

// Content is a repository's generated documents.
type Content struct {
	Tags      []*Tagged // sorted by tag
	manifests map[verify.Digest]*Manifest
	layers    map[verify.Digest]Blob
}

// Tag returns the tag named t.
func (c *Content) Tag(t string) (*Tagged, bool) {
	i := sort.Search(len(c.Tags), func(i int) bool { return c.Tags[i].Tag >= t })
	if i < len(c.Tags) && c.Tags[i].Tag == t {
		return c.Tags[i], true
	}
	return nil, false
}

// Manifest returns the manifest or index with digest d.
func (c *Content) Manifest(d verify.Digest) (*Manifest, bool) {
	m, ok := c.manifests[d]
	return m, ok
}

// Layer returns the layer blob with digest d, if a manifest of this
// repository refers to it.
func (c *Content) Layer(d verify.Digest) (Blob, bool) {
	b, ok := c.layers[d]
	return b, ok
}

// Content builds the repository's documents. It is a pure function of the
// repository's versions.
func (r *Repository) Content() *Content {
	c := &Content{manifests: map[verify.Digest]*Manifest{}, layers: map[verify.Digest]Blob{}}
	for _, p := range r.Providers {
		c.add(providerTag(p))
	}
	var latest *Tagged
	var latestVer string
	for _, m := range r.Modules {
		t := moduleTag(m)
		c.add(t)
		if latest == nil || isRelease(m.Version) || !isRelease(latestVer) {
			latest, latestVer = t, m.Version
		}
	}
	if latest != nil {
		c.add(&Tagged{Tag: LatestTag, Root: latest.Root, Layers: latest.Layers})
	}
	sort.Slice(c.Tags, func(i, j int) bool { return c.Tags[i].Tag < c.Tags[j].Tag })
	return c
}

func isRelease(v string) bool {
	sv, err := version.NewVersion(v)
	return err == nil && sv.Prerelease() == ""
}

func (c *Content) add(t *Tagged) {
	c.Tags = append(c.Tags, t)
	c.manifests[t.Root.Digest] = t.Root
	for _, m := range t.Children {
		c.manifests[m.Digest] = m
	}
	for _, b := range t.Layers {
		c.layers[b.Digest] = b
	}
}

func providerTag(p *dist.ProviderVersion) *Tagged {
	t := &Tagged{Tag: Tag(p.Version)}
	idx := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ArtifactProvider,
		Manifests:    []ocispec.Descriptor{},
	}
	for _, pk := range p.Packages {
		layer := Blob{Digest: pk.Digest, Size: pk.Size, MediaType: MediaTypeZip}
		m := imageManifest(ArtifactProviderTarget, layer, pk.Filename)
		d := m.Descriptor()
		d.Platform = &ocispec.Platform{OS: pk.OS, Architecture: pk.Arch}
		idx.Manifests = append(idx.Manifests, d)
		t.Children = append(t.Children, m)
		t.Layers = append(t.Layers, layer)
	}
	t.Root = document(ocispec.MediaTypeImageIndex, ArtifactProvider, idx)
	return t
}

func moduleTag(m *dist.ModuleVersion) *Tagged {
	layer := Blob{Digest: m.Zip, Size: m.ZipSize, MediaType: MediaTypeZip}
	name := strings.ToLower(m.Namespace + "-" + m.Name + "-" + m.System + "-" + m.Version + ".zip")
	return &Tagged{Tag: Tag(m.Version), Root: imageManifest(ArtifactModule, layer, name), Layers: []Blob{layer}}
}

func imageManifest(artifactType string, layer Blob, title string) *Manifest {
	ld := layer.Descriptor()
	ld.Annotations = map[string]string{ocispec.AnnotationTitle: title}
	return document(ocispec.MediaTypeImageManifest, artifactType, ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       EmptyDescriptor,
		Layers:       []ocispec.Descriptor{ld},
	})
}

func document(mediaType, artifactType string, v any) *Manifest {
	// Marshalling structs (and maps, whose keys encoding/json sorts) is
	// deterministic: the same catalog gives the same bytes and digests.
	b, err := json.Marshal(v)
	if err != nil {
		panic("oci: marshalling a manifest: " + err.Error()) // plain structs of strings cannot fail
	}
	return &Manifest{MediaType: mediaType, ArtifactType: artifactType, Digest: verify.DigestBytes(b), Body: b}
}
