package goinfo

import (
	"archive/zip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// IsPlugin reports whether a file in a provider package is its plugin
// binary: a top-level file named terraform-provider-*, as Terraform and
// OpenTofu look for it when they install a package.
func IsPlugin(name string) bool {
	return !strings.Contains(name, "/") && strings.HasPrefix(name, "terraform-provider-")
}

// ScanZip computes the h1: hash of a provider package (dirhash.Hash1 over
// its files, exactly dist.H1) and, in the same pass over each file's
// inflated bytes, the Go build information of its plugin binary. A package
// with several plugin files records the first, by name, that has build
// information. It applies no limits: callers check the zip's directory and
// sizes first (bundle.ScanPackage does).
func ScanZip(zipPath string) (h1 string, info *Info, err error) {
	z, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", nil, fmt.Errorf("computing h1 hash of %s: %w", zipPath, err)
	}
	defer z.Close()
	files := make([]string, 0, len(z.File))
	byName := make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		files = append(files, f.Name)
		byName[f.Name] = f
	}
	scans := map[string]*Scanner{}
	open := func(name string) (io.ReadCloser, error) {
		f := byName[name]
		if f == nil {
			return nil, fmt.Errorf("file %q not found in zip", name)
		}
		rc, err := f.Open()
		if err != nil || !IsPlugin(name) {
			return rc, err
		}
		s := &Scanner{}
		scans[name] = s
		return teeCloser{io.TeeReader(rc, s), rc}, nil
	}
	// dirhash.Hash1 opens every file once, in sorted order, and reads it
	// to its end: the scanners see every byte of each plugin.
	h1, err = dirhash.Hash1(files, open)
	if err != nil {
		return "", nil, fmt.Errorf("computing h1 hash of %s: %w", zipPath, err)
	}
	return h1, pick(scans), nil
}

// pick chooses the build information of a package from its plugins' scans.
func pick(scans map[string]*Scanner) *Info {
	if len(scans) == 0 {
		return &Info{None: NoneNoPlugin}
	}
	names := make([]string, 0, len(scans))
	for n := range scans {
		names = append(names, n)
	}
	sort.Strings(names)
	var first *Info
	for _, n := range names {
		info := scans[n].Result()
		info.File = path.Base(n)
		if info.None == "" {
			return info
		}
		if first == nil {
			first = info
		}
	}
	return first
}

type teeCloser struct {
	io.Reader
	io.Closer
}
