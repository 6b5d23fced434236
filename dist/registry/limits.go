package registry

import (
	"time"
)

// Size limits. Every body the client reads is bounded; a body larger than
// its limit is cut off there and the request fails with ErrTooLarge.
const (
	// MaxDiscoverySize bounds /.well-known/terraform.json, as Terraform's
	// own service discovery does (1 MiB).
	MaxDiscoverySize = 1 << 20
	// MaxAPIDocumentSize bounds a registry API JSON answer (versions lists,
	// download documents). The largest real one, the versions list of
	// hashicorp/aws (~700 versions × 14 platforms), is under 0.5 MiB.
	MaxAPIDocumentSize = 4 << 20
	// MaxJSONDepth bounds how deeply the values of a registry's JSON answer
	// (discovery, versions, download, mirror index and version documents,
	// module answers) may nest: the real ones nest 3 to 5 levels.
	MaxJSONDepth = 32
	// MaxSignatureSize bounds a detached SHA256SUMS signature (a few
	// hundred bytes in practice).
	MaxSignatureSize = 64 << 10
	// DefaultMaxPackageSize bounds a provider package when the caller sets
	// no limit. The largest real providers are ~200 MB zipped.
	DefaultMaxPackageSize = 1 << 30
	// DefaultMaxModuleSize bounds a module archive downloaded over HTTP when
	// the caller sets no limit.
	DefaultMaxModuleSize = 256 << 20
	// MinDownloadRate and RateWindow bound how slowly a download may
	// arrive: a body that brings fewer than MinDownloadRate bytes per second
	// averaged over RateWindow is cut off (ErrTooSlow; a provider package
	// download then resumes like a dropped connection, within its retries).
	// 10 KiB/s over a minute passes any real link and stops a server that
	// trickles a byte just inside the idle timeout. Small documents
	// (SHA256SUMS, signatures) have the metadata timeout as a total bound
	// instead (Fetch).
	MinDownloadRate = 10 << 10
	RateWindow      = time.Minute
	// maxRedirects bounds redirects of downloads; API calls and discovery
	// allow MaxAPIRedirects, as Terraform does.
	maxRedirects    = 10
	MaxAPIRedirects = 3
)
