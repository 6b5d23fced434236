package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"oras.land/oras-go/v2"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/airgap/airgap/dist"
)

// Bounds on an OCI archive PushImage reads before it trusts the archive's
// index: entries (an image index of a few platforms has about a dozen)
// and the size of index.json and oci-layout, which are read whole.
const (
	maxArchiveEntries = 4096
	maxArchiveIndex   = 1 << 20
)

var archiveBlobName = regexp.MustCompile(`^blobs/sha256/[0-9a-f]{64}$`)

// ImageResult is what PushImage did.
type ImageResult struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
}

// PushImage copies the image (an image index with its platform images, or
// one image) in the OCI archive at path — a tar of an OCI image layout,
// as 'make image' writes — to target, REGISTRY/REPOSITORY[:TAG]; without a
// tag, the archive's own (its index.json's one ref.name). Credentials and
// trust are Push's (opt.Username, Docker's config, the system roots).
//
// Worst case: the archive is scanned once (at most 4096 entries, each name
// a layout file or a sha256 blob, index.json at most 1 MiB) before oras
// reads it; each blob is sent as it is read, and the registry checks its
// digest.
func PushImage(ctx context.Context, path, target string, opt PushOptions) (*ImageResult, error) {
	if err := checkArchive(path); err != nil {
		return nil, fmt.Errorf("%s: %w\nhint: give the OCI archive 'make image' writes (bin/airgap-image.oci.tar)", dist.Printable(path), err)
	}
	src, err := orasoci.NewFromTar(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w\nhint: give the OCI archive 'make image' writes (bin/airgap-image.oci.tar)", dist.Printable(path), err)
	}
	var tags []string
	if err := src.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil }); err != nil {
		return nil, err
	}
	if len(tags) != 1 {
		return nil, fmt.Errorf("%s names %d images (%s); push copies one\nhint: give the OCI archive of one image", dist.Printable(path), len(tags), dist.Printable(strings.Join(tags, ", ")))
	}
	ref, err := registry.ParseReference(target)
	if err != nil || ref.Repository == "" || strings.HasPrefix(ref.Reference, "sha256:") {
		return nil, fmt.Errorf("--to %q is not REGISTRY/REPOSITORY[:TAG]\nhint: e.g. --to registry.site.example/airgap/airgap:1.2.3", dist.Printable(target))
	}
	if ref.Reference == "" {
		ref.Reference = tags[0]
		if ref.ValidateReferenceAsTag() != nil {
			return nil, fmt.Errorf("the archive's tag %q is not a valid tag\nhint: give one: --to %s:TAG", dist.Printable(tags[0]), dist.Printable(target))
		}
	}
	client, err := newAuthClient(ref.Registry, opt)
	if err != nil {
		return nil, err
	}
	repo := &remote.Repository{Client: client, Reference: ref}
	desc, err := oras.Copy(ctx, src, tags[0], repo, ref.Reference, oras.DefaultCopyOptions)
	if err != nil {
		return nil, fmt.Errorf("pushing %s to %s: %w", dist.Printable(path), dist.Printable(ref.String()), err)
	}
	return &ImageResult{Repository: ref.Registry + "/" + ref.Repository, Tag: ref.Reference, Digest: desc.Digest.String()}, nil
}

// checkArchive reads the tar's headers: an OCI image layout and nothing
// else, within the bounds above.
func checkArchive(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	n := 0
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not a tar file: %w", err)
		}
		if n++; n > maxArchiveEntries {
			return fmt.Errorf("more than %d entries: not an image's layout", maxArchiveEntries)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case h.Typeflag == tar.TypeDir && (name == "blobs/" || name == "blobs/sha256/"):
		case h.Typeflag == tar.TypeReg && (name == "index.json" || name == "oci-layout"):
			if h.Size > maxArchiveIndex {
				return fmt.Errorf("%s is %d bytes, more than %d", name, h.Size, maxArchiveIndex)
			}
		case h.Typeflag == tar.TypeReg && archiveBlobName.MatchString(name):
		default:
			return fmt.Errorf("%q is not part of an OCI image layout", dist.Printable(h.Name))
		}
		if seen[name] {
			return fmt.Errorf("%q is in the archive twice", dist.Printable(name))
		}
		seen[name] = true
	}
	if !seen["index.json"] || !seen["oci-layout"] {
		return errors.New("no index.json or oci-layout: not an OCI image layout")
	}
	return nil
}
