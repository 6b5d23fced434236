package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	version "github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"

	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/verify"
)

// ReleaseReq asks for releases of the terraform or tofu CLI (a manifest's
// cli block).
type ReleaseReq struct {
	Product     string // dist.ProductTerraform or dist.ProductTofu
	Constraints version.Constraints
	Latest      int
	All         bool
	Platforms   []string // nil: Request.Platforms
	// PublisherKey is the file of the block's publisher_key (absolute, or
	// relative to the manifest), replacing the publisher's key that airgap
	// pins by fingerprint; "" for the default.
	PublisherKey string
	Block        string // FILE:LINE:COL
}

type specCLI struct {
	Product      string    `hcl:"product,label"`
	Versions     *string   `hcl:"versions,optional"`
	Latest       *int      `hcl:"latest,optional"`
	All          *bool     `hcl:"all,optional"`
	Platforms    []string  `hcl:"platforms,optional"`
	PublisherKey *string   `hcl:"publisher_key,optional"`
	DefRange     hcl.Range `hcl:",def_range"`
}

// Where the publishers publish their releases. A site's exporting machine
// reaches them as any other registry host (HTTPS_PROXY, SSL_CERT_FILE).
const (
	hashicorpReleases = "https://releases.hashicorp.com"
	hashicorpKeyURL   = "https://www.hashicorp.com/.well-known/pgp-key.txt"
	tofuAPI           = "https://get.opentofu.org/tofu/api.json"
	tofuDownloads     = "https://github.com/opentofu/opentofu/releases/download"
	tofuKeyURL        = "https://get.opentofu.org/opentofu.asc"
)

// maxReleaseIndex bounds a publisher's list of releases (releases.hashicorp.com's
// /terraform/index.json is about 6 MiB with every build of every version;
// OpenTofu's api.json a few hundred KiB): read whole, at most 32 MiB and
// values nested at most 8 deep (the real ones nest 5), so a hostile list
// costs at most that and its decoded form (a few times its size).
const maxReleaseIndex = 32 << 20

var releaseIndexJSON = dist.JSONLimit{MaxBytes: maxReleaseIndex, MaxDepth: 8}

func releaseRequests(blocks []specCLI, path string) ([]ReleaseReq, error) {
	var out []ReleaseReq
	seen := map[string]bool{}
	for _, b := range blocks {
		if b.Product != dist.ProductTerraform && b.Product != dist.ProductTofu {
			return nil, rangeErr(b.DefRange, "cli %q: airgap carries the releases of \"terraform\" and \"tofu\"", dist.Printable(b.Product))
		}
		if seen[b.Product] {
			return nil, rangeErr(b.DefRange, "cli %q: a second block for the same product; put both constraints in one (versions = \"~> 1.13, ~> 1.14\" is never true: use latest or all)", b.Product)
		}
		seen[b.Product] = true
		r := ReleaseReq{Product: b.Product, Latest: 1, Platforms: b.Platforms, Block: rangeAt(b.DefRange)}
		if err := checkPlatforms(b.Platforms, &b.DefRange); err != nil {
			return nil, err
		}
		if b.Versions != nil && *b.Versions != "" {
			c, err := parseConstraints(*b.Versions)
			if err != nil {
				return nil, rangeErr(b.DefRange, "cli %q: versions %q: %v", b.Product, *b.Versions, err)
			}
			r.Constraints = c
		}
		if b.Latest != nil {
			if *b.Latest < 1 {
				return nil, rangeErr(b.DefRange, "cli %q: latest must be at least 1", b.Product)
			}
			r.Latest = *b.Latest
		}
		r.All = b.All != nil && *b.All
		if b.PublisherKey != nil {
			k := *b.PublisherKey
			if k == "" {
				return nil, rangeErr(b.DefRange, "cli %q: publisher_key is empty; leave it out for the publisher's own key", b.Product)
			}
			if !filepath.IsAbs(k) {
				k = filepath.Join(filepath.Dir(path), k)
			}
			r.PublisherKey = k
		}
		out = append(out, r)
	}
	return out, nil
}

// releases resolves every cli block to versions and fetches each chosen
// release: its SHA256SUMS and signatures, checked against the pinned key
// before any zip is fetched, then each platform's zip, held to its line
// while it streams (Options.MaxPackageSize bounds each), then the whole
// release once more through check.CheckRelease, the decision verify and
// import make again.
func (e *exporter) releases(ctx context.Context) ([]dist.CLIRelease, error) {
	var out []dist.CLIRelease
	for _, rq := range e.req.Releases {
		vs, err := e.releaseVersions(ctx, rq)
		if err != nil {
			return nil, fmt.Errorf("cli %q (%s): %w", rq.Product, rq.Block, err)
		}
		if len(vs) == 0 {
			return nil, fmt.Errorf("cli %q (%s): no release matches %s\nhint: check the versions constraint; nothing was written", rq.Product, rq.Block, constraintString(rq.Constraints))
		}
		plats := rq.Platforms
		if len(plats) == 0 {
			plats = e.req.Platforms
		}
		for _, v := range vs {
			line := fmt.Sprintf("release %s %s (%s)", rq.Product, v, strings.Join(plats, ", "))
			e.res.Plan = append(e.res.Plan, line)
			e.res.Planned = append(e.res.Planned, PlanItem{Kind: dist.KindRelease, Address: rq.Product, Version: v, Platforms: plats, Why: rq.Block})
			e.chose(dist.KindRelease, rq.Product+" "+v, rq.Block, "")
			if e.opt.DryRun {
				continue
			}
			r, err := e.release(ctx, rq, v, plats)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// releaseVersions lists the product's published versions and selects the
// request's.
func (e *exporter) releaseVersions(ctx context.Context, rq ReleaseReq) ([]string, error) {
	var all []string
	switch rq.Product {
	case dist.ProductTerraform:
		b, err := e.opt.Client.Fetch(ctx, hashicorpReleases+"/terraform/index.json", maxReleaseIndex)
		if err != nil {
			return nil, fmt.Errorf("%w%s", err, releaseListHint(err))
		}
		var idx struct {
			Versions map[string]json.RawMessage `json:"versions"`
		}
		if err := releaseIndexJSON.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("releases.hashicorp.com's index.json: %v%s", err, releaseListHint(nil))
		}
		for v := range idx.Versions {
			all = append(all, v)
		}
	case dist.ProductTofu:
		b, err := e.opt.Client.Fetch(ctx, tofuAPI, maxReleaseIndex)
		if err != nil {
			return nil, fmt.Errorf("%w%s", err, releaseListHint(err))
		}
		var api struct {
			Versions []struct {
				ID string `json:"id"`
			} `json:"versions"`
		}
		if err := releaseIndexJSON.Unmarshal(b, &api); err != nil {
			return nil, fmt.Errorf("OpenTofu's api.json: %v%s", err, releaseListHint(nil))
		}
		for _, v := range api.Versions {
			all = append(all, v.ID)
		}
	}
	var valid []string
	for _, v := range all {
		if dist.ValidVersion(v) {
			valid = append(valid, v)
		}
	}
	return selectVersions(valid, rq.Constraints, rq.Latest, rq.All), nil
}

// releaseListHint is the hint for a publisher's list of releases that
// could not be read (err, if it carries no hint of its own) or is not one
// (err nil): it is the answer of whatever export reached for that host.
func releaseListHint(err error) string {
	if err != nil && strings.Contains(err.Error(), "hint:") {
		return ""
	}
	return fmt.Sprintf("\nhint: check what answers for that host (HTTPS_PROXY, a mirror or proxy in between); export reads the list whole, at most %d MiB with values nested at most %d deep, which the publisher's own stay well within", maxReleaseIndex>>20, releaseIndexJSON.MaxDepth)
}

// releaseURL is where the publisher keeps file of release v.
func releaseURL(product, v, file string) string {
	if product == dist.ProductTofu {
		return tofuDownloads + "/v" + v + "/" + file
	}
	return hashicorpReleases + "/terraform/" + v + "/" + file
}

// release fetches and checks one release for plats.
func (e *exporter) release(ctx context.Context, rq ReleaseReq, v string, plats []string) (dist.CLIRelease, error) {
	r := dist.CLIRelease{Product: rq.Product, Version: v, ShasumsName: dist.ReleaseShasumsName(rq.Product, v), KeyPin: dist.KeyPinDefault}
	what := "release " + r.String()
	files := map[verify.Digest][]byte{}
	keep := func(b []byte, role string) (verify.Digest, error) {
		d, p, err := e.storeBytes(b)
		if err != nil {
			return "", err
		}
		e.addBlob(d, int64(len(b)), role, p)
		files[d] = b
		return d, nil
	}
	// The publisher key: the manifest's, or the publisher's own, which
	// CheckRelease holds to the fingerprint airgap pins.
	var armor []byte
	var err error
	if rq.PublisherKey != "" {
		r.KeyPin = dist.KeyPinManifest
		if armor, err = dist.ReadFileLimit(rq.PublisherKey, dist.MaxReleaseKeySize); err != nil {
			return r, fmt.Errorf("%s: publisher_key: %w\nhint: publisher_key names an armored public key file, relative to the manifest; nothing was written", what, err)
		}
	} else {
		u := hashicorpKeyURL
		if rq.Product == dist.ProductTofu {
			u = tofuKeyURL
		}
		if armor, err = e.opt.Client.Fetch(ctx, u, dist.MaxReleaseKeySize); err != nil {
			return r, fmt.Errorf("%s: the publisher's key: %w", what, err)
		}
	}
	kr, err := verify.ReadKeyring(strings.NewReader(string(armor)))
	if err != nil || len(kr) != 1 {
		return r, fmt.Errorf("%s: the publisher key is not one OpenPGP public key (%v)\nhint: nothing was written", what, err)
	}
	r.KeyFingerprint = verify.Fingerprint(kr[0])
	if r.Key, err = keep(armor, dist.RoleReleaseKey); err != nil {
		return r, err
	}
	sums, err := e.opt.Client.Fetch(ctx, releaseURL(rq.Product, v, r.ShasumsName), dist.MaxShasumsSize)
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, err)
	}
	if r.Shasums, err = keep(sums, dist.RoleReleaseShasums); err != nil {
		return r, err
	}
	for i, name := range dist.ReleaseSignatureNames(rq.Product, v) {
		sig, err := e.opt.Client.Fetch(ctx, releaseURL(rq.Product, v, name), registry.MaxSignatureSize)
		if err != nil {
			if i > 0 && errors.Is(err, registry.ErrStatus) {
				continue // HashiCorp's second name for the same signature is optional
			}
			return r, fmt.Errorf("%s: %w", what, err)
		}
		d, err := keep(sig, dist.RoleReleaseSignature)
		if err != nil {
			return r, err
		}
		r.Signatures = append(r.Signatures, dist.ReleaseSignature{Name: name, Digest: d})
	}
	read := func(d verify.Digest, limit int64) ([]byte, error) {
		if b, ok := files[d]; ok && int64(len(b)) <= limit {
			return b, nil
		}
		return nil, fmt.Errorf("blob %s is not at hand or over %d bytes", d.Short(), limit)
	}
	// The signature before any zip: a release the pinned key did not sign
	// costs no download.
	if _, err := check.CheckRelease(r, read); err != nil {
		return r, fmt.Errorf("%w\nnothing was written", err)
	}
	lines, _, err := dist.ParseShasums(strings.NewReader(string(sums)))
	if err != nil {
		return r, fmt.Errorf("%s: SHA256SUMS: %w", what, err)
	}
	for _, plat := range plats {
		osName, arch, _ := strings.Cut(plat, "_")
		names := []string{dist.ReleaseZipName(rq.Product, v, osName, arch)}
		if rq.Product == dist.ProductTofu {
			names = append(names, dist.ReleaseTarName(v, osName, arch))
		}
		for i, name := range names {
			hex, ok := dist.ShasumFor(lines, name)
			if !ok {
				if i == 0 {
					e.res.Gaps = append(e.res.Gaps, fmt.Sprintf("%s has no %s build", what, plat))
				}
				continue
			}
			d := verify.Digest("sha256:" + hex)
			zwhat := what + " " + name
			p, size, err := e.fetchPackage(ctx, d, releaseURL(rq.Product, v, name), name, zwhat, "the signed SHA256SUMS")
			if err != nil {
				return r, fmt.Errorf("%s: %w", zwhat, err)
			}
			e.addBlob(d, size, dist.RoleReleaseZip, p)
			r.Builds = append(r.Builds, dist.ReleaseBuild{OS: osName, Arch: arch, Filename: name, Digest: d, Size: size})
		}
	}
	if len(r.Builds) == 0 {
		return r, fmt.Errorf("%s has none of the platforms %s\nhint: nothing was written", what, strings.Join(plats, ", "))
	}
	if _, err := check.CheckRelease(r, read); err != nil {
		return r, fmt.Errorf("%w\nnothing was written", err)
	}
	e.opt.Log("%s: SHA256SUMS signed by %s (%s pin), %d zips", what, verify.GroupFingerprint(r.KeyFingerprint), r.KeyPin, len(r.Builds))
	return r, nil
}
