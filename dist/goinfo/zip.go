package goinfo

import (
	"io"
	"path"
	"sort"
	"strings"

	"github.com/airgap/airgap/dist"
)

// IsPlugin reports whether a file in a provider package is its plugin
// binary: a top-level file named terraform-provider-*, as Terraform and
// OpenTofu look for it when they install a package.
func IsPlugin(name string) bool {
	return !strings.Contains(name, "/") && strings.HasPrefix(name, "terraform-provider-")
}

// ScanZip computes the h1: hash of a provider package (dist.H1, through
// dist.H1Tap) and, in the same pass over each file's inflated bytes, the
// Go build information of its plugin binary. A package with several plugin
// files records the first, by name, that has build information. It applies
// no limits: callers check the zip's directory and sizes first
// (bundle.ScanPackage does).
func ScanZip(zipPath string) (h1 string, info *Info, err error) {
	scans := map[string]*Scanner{}
	// dist.H1Tap opens every file once, in sorted order, and reads it to
	// its end: the scanners see every byte of each plugin.
	h1, err = dist.H1Tap(zipPath, func(name string) io.Writer {
		if !IsPlugin(name) {
			return nil
		}
		s := &Scanner{}
		scans[name] = s
		return s
	})
	if err != nil {
		return "", nil, err
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
