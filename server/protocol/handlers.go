package protocol

import "net/http"

// Handlers are the answers as the app's route table wires them, one per
// kind of route. Each answers whatever principal the app admitted
// (access.Of) in that principal's scope; none checks access itself
// beyond that scope.
type Handlers struct {
	// The registry protocols (service discovery, providers.v1,
	// modules.v1), in the view the Host or an /origin/{origin}/ prefix
	// chooses.
	Discovery, ProviderVersions, ProviderDownload, ModuleVersions, ModuleDownload http.HandlerFunc
	// The provider network mirror protocol: index.json and
	// <version>.json.
	MirrorIndex, MirrorVersion http.HandlerFunc
	// Content-addressed downloads: /blobs/sha256/{hex}[/{filename}] and
	// /archives/sha256/{file}.
	Blob, Archive http.HandlerFunc
	// Origins is /airgap/v1/origins (OriginsDoc).
	Origins http.HandlerFunc
	// The OCI distribution API, read-only: /v2/ itself, its bearer
	// tokens at /v2/token, and everything else under /v2/.
	OCIBase, OCIToken, OCI http.HandlerFunc
	// Releases answers under ReleasesPrefix: the Terraform and OpenTofu
	// CLI releases in their publishers' layouts.
	Releases http.HandlerFunc
}

// Handlers returns the handlers of s. The JSON answers among them are
// cached per catalog snapshot under the request's canonical key
// (renderKey), which ServeCached serves from after that.
func (s *Answers) Handlers() Handlers {
	return Handlers{
		Discovery:        s.jsonHandler(s.discovery),
		ProviderVersions: s.jsonHandler(s.providerVersions),
		ProviderDownload: s.jsonHandler(s.providerDownload),
		ModuleVersions:   s.jsonHandler(s.moduleVersions),
		ModuleDownload:   s.jsonHandler(s.moduleDownload),
		MirrorIndex:      s.jsonHandler(s.mirrorIndex),
		MirrorVersion:    s.jsonHandler(s.mirrorVersion),
		Blob:             s.blob,
		Archive:          s.archive,
		Origins:          s.jsonHandler(s.originsDoc),
		OCIBase:          s.ociBase,
		OCIToken:         s.ociTokenHandler,
		OCI:              s.ociHandler,
		Releases:         s.releases,
	}
}
