package check

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// ErrRelease is a CLI release that fails its check (CheckRelease).
var ErrRelease = errors.New("release refused")

// ReleaseFacts is what a checked CLI release's signatures say: who signed
// its SHA256SUMS and who pinned that key (the review's "signer" lines).
type ReleaseFacts struct {
	Release string        `json:"release"` // "terraform 1.14.2"
	Product string        `json:"product"`
	Signer  verify.Signer `json:"signer"`
	KeyPin  string        `json:"key_pin"` // dist.KeyPinDefault or dist.KeyPinManifest
	Builds  int           `json:"builds"`
}

// ReleaseFile reads one blob of a release, at most limit bytes.
type ReleaseFile func(d verify.Digest, limit int64) ([]byte, error)

// CheckRelease is the one decision on a Terraform or OpenTofu CLI release,
// made by export before it writes a bundle and by verify and import before
// they accept one:
//
//   - the carried publisher key is one key (verify.ReadKeyring's bounds)
//     whose fingerprint is the release's KeyFingerprint;
//   - that fingerprint is pinned: by airgap (dist.DefaultReleaseKey, the
//     publisher's own) when the release says KeyPinDefault; a release
//     whose key the manifest's publisher_key named (KeyPinManifest) is
//     vouched for by the signature on the bundle, which is the site's;
//   - every signature file verifies the SHA256SUMS with that key;
//   - every build's zip has its line in the SHA256SUMS, with its digest
//     (the zip's bytes are held to that digest as they stream by: the
//     bundle reader, or export's download), and no other line for it
//     with another digest: clients differ on which line they hold a file
//     to (hc-install the last), so such a file would pass one and fail
//     another.
//
// Reads: the key (dist.MaxReleaseKeySize), the SHA256SUMS
// (dist.MaxShasumsSize) and at most dist.MaxReleaseSignatures signatures
// (bundle.MaxSignatureSize each); at worst dist.MaxReleaseBuilds scans of
// the SHA256SUMS's lines (about 60,000 at its bound). Every error names
// the release and wraps ErrRelease.
func CheckRelease(r dist.CLIRelease, read ReleaseFile) (ReleaseFacts, error) {
	fail := func(format string, a ...any) (ReleaseFacts, error) {
		return ReleaseFacts{}, fmt.Errorf("%w: release %s: %s", ErrRelease, r, fmt.Sprintf(format, a...))
	}
	armor, err := read(r.Key, dist.MaxReleaseKeySize)
	if err != nil {
		return fail("its publisher key: %v", err)
	}
	kr, err := verify.ReadKeyring(bytes.NewReader(armor))
	if err != nil {
		return fail("its publisher key: %v", err)
	}
	if len(kr) != 1 {
		return fail("its publisher key file holds %d keys, not one", len(kr))
	}
	if fp := verify.Fingerprint(kr[0]); fp != r.KeyFingerprint {
		return fail("its publisher key is %s, not the recorded %s", verify.GroupFingerprint(fp), verify.GroupFingerprint(r.KeyFingerprint))
	}
	if r.KeyPin == dist.KeyPinDefault && r.KeyFingerprint != dist.DefaultReleaseKey(r.Product) {
		return fail("it is signed by key %s, which is not the key airgap pins for %s (%s)\nhint: a site whose releases are signed by another key names it in the manifest's cli block (publisher_key = \"FILE.asc\")",
			verify.GroupFingerprint(r.KeyFingerprint), r.Product, verify.GroupFingerprint(dist.DefaultReleaseKey(r.Product)))
	}
	sums, err := read(r.Shasums, dist.MaxShasumsSize)
	if err != nil {
		return fail("its SHA256SUMS: %v", err)
	}
	var signer verify.Signer
	for _, s := range r.Signatures {
		sig, err := read(s.Digest, bundle.MaxSignatureSize)
		if err != nil {
			return fail("%s: %v", s.Name, err)
		}
		if signer, err = verify.CheckDetached(kr, bytes.NewReader(sums), sig); err != nil {
			return fail("%s does not verify its SHA256SUMS with the pinned key %s: %v\nhint: the SHA256SUMS was not signed by the release's publisher key",
				s.Name, verify.GroupFingerprint(r.KeyFingerprint), err)
		}
	}
	lines, _, err := dist.ParseShasums(bytes.NewReader(sums))
	if err != nil {
		return fail("its SHA256SUMS: %v", err)
	}
	for _, b := range r.Builds {
		hex, ok := dist.ShasumFor(lines, b.Filename)
		if !ok {
			return fail("the signed SHA256SUMS has no line for %s", b.Filename)
		}
		for _, l := range lines {
			if l.Filename == b.Filename && l.Hex != hex {
				return fail("the signed SHA256SUMS lists %s twice, as sha256:%s and sha256:%s\nhint: clients hold the file to different lines of it (hc-install the last); the publisher must sign a SHA256SUMS with one digest a file",
					b.Filename, hex, l.Hex)
			}
		}
		if "sha256:"+hex != string(b.Digest) {
			return fail("%s is %s, but the signed SHA256SUMS says sha256:%s\nhint: the zip is not the one the publisher signed", b.Filename, b.Digest, hex)
		}
	}
	return ReleaseFacts{Release: r.String(), Product: r.Product, Signer: signer, KeyPin: r.KeyPin, Builds: len(r.Builds)}, nil
}

// releases runs CheckRelease on every release of the manifest, with the
// blobs that streamed by or that the caller has (Have); a release whose
// small files a delta omitted and the caller does not have is deferred.
func (c *Checker) releases() error {
	for _, r := range c.m.Catalog.Releases {
		missing := ""
		for _, d := range releaseSmallBlobs(r) {
			if _, ok := c.have(d); !ok {
				missing = c.m.Describe(d)
			}
		}
		if missing != "" {
			c.rep.Deferred = append(c.rep.Deferred, "release signature check: "+missing)
			continue
		}
		f, err := CheckRelease(r, func(d verify.Digest, limit int64) ([]byte, error) {
			p, _ := c.have(d)
			return readLimited(p, limit)
		})
		if err != nil {
			return fmt.Errorf("%w%s", err, hintUnlessHinted(err))
		}
		c.rep.Releases = append(c.rep.Releases, f)
	}
	return nil
}

// releaseSmallBlobs are the blobs of r CheckRelease reads.
func releaseSmallBlobs(r dist.CLIRelease) []verify.Digest {
	ds := []verify.Digest{r.Key, r.Shasums}
	for _, s := range r.Signatures {
		ds = append(ds, s.Digest)
	}
	return ds
}

// hintUnlessHinted is a hint for an error that carries none.
func hintUnlessHinted(err error) string {
	if strings.Contains(err.Error(), "hint:") {
		return ""
	}
	return "\nhint: the release's files are not as its publisher signed them"
}
