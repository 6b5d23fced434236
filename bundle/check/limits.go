package check

import "time"

// Limits of the consistency check. A provider zip holds the plugin and a few
// text files; HashiCorp's largest packages are about 200 MB zipped and under
// 1 GB unzipped.
const (
	// MaxZipEntries bounds the files in a provider zip whose h1 is computed;
	// MaxZipDirectory bounds the bytes of its central directory (names,
	// extra fields, comments). Both are counted by zipdir.Check in a fixed
	// buffer before archive/zip reads the directory into memory, so that
	// costs at most ≈ MaxZipDirectory + MaxZipEntries × 300 bytes ≈ 1.1 MiB
	// per zip. Real provider zips hold 1–5 files with short names.
	MaxZipEntries   = 256
	MaxZipDirectory = 1 << 20
	// MaxZipUnpacked bounds the declared unpacked size of a provider zip (the
	// h1 hash reads every file unpacked, and archive/zip refuses files
	// longer than declared).
	MaxZipUnpacked = 8 << 30
	// MaxZipRatio bounds a provider zip's declared unpacked size to this
	// many times its packed size, but never below MinZipUnpackedLimit: the
	// h1 hash costs CPU in proportion to the unpacked bytes, and deflate
	// packs zeros ~1000:1, so without it a 1 MiB package could cost the
	// transfer station a GiB of hashing. Real provider binaries pack 2–5:1.
	MaxZipRatio         = 100
	MinZipUnpackedLimit = 64 << 20
	// SiteResignHost is the only origin whose providers may carry a site
	// re-signature: it may list no publisher keys (see
	// docs/trust-model.md); 'airgap export' refuses every other host without keys.
	SiteResignHost = "registry.opentofu.org"
	// SiteKeySource marks the key export adds for a site re-signature.
	SiteKeySource = "airgap site key"
	// signatureSlack is how much later than the bundle's own signature a
	// provider's SHA256SUMS signature may be dated: the publisher's clock
	// and the exporting machine's may disagree by this much.
	signatureSlack = 10 * time.Minute
	// MaxClockAhead is how far past this machine's clock a bundle's
	// signature may be dated: time zones and a wrong clock on either side
	// stay within a day; a signature from next year does not.
	MaxClockAhead = 24 * time.Hour
)
