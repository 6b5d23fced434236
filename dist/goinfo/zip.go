package goinfo

import (
	"io"
	"path"
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
// files records the first, by name, that has build information (or, when
// none has, why the first has none). It applies no limits on the zip:
// callers check its directory and sizes first (check.ScanPackage does).
//
// Memory: one plugin is scanned at a time, by one Scanner that is reset
// (keeping its buffer) when a file ends (dist.H1Tap closes the tap's
// writer then), so a package holds one Scanner (at most MaxModInfo +
// 1 KiB) and the Info kept (at most what one Scanner parsed), whatever its
// number of files: about 8.1 MiB at worst. A package of 256 plugins that
// each announce a module string of MaxModInfo bytes and stop one byte short
// held all 256 Scanners at once (1.6-1.8 GiB per package).
//
// Time: the search tests one byte in sixteen and stops for good at the
// first header taken, so on a real plugin it costs about 1.3 % of the h1
// pass it rides on (the AWS provider's 707 MB binary, whose header lies at
// 98 % of it: 28 ms of CPU against 2.2 s for the h1, BenchmarkScanZip).
// Scanning plugins one after another costs nothing over scanning them at
// once: each byte is still seen once. The worst case is a hostile plugin
// of aligned fake headers: each refused one re-reads what it collected (at
// most headerSize + MaxVersion + 20 bytes), MaxCandidates of them end that
// plugin's search (about 1.2 MiB re-read in all), and a module string is
// collected and parsed once per plugin (at most MaxModInfo bytes); no
// plugin after one with build information is scanned. So the scan is
// linear in the package's unpacked bytes (which the caller bounds: the
// bundle check's MaxZipUnpacked), plus at most about 5.2 MiB of extra
// work per plugin file, a fraction of inflating it.
func ScanZip(zipPath string) (h1 string, info *Info, err error) {
	p := picker{scan: &Scanner{}}
	// dist.H1Tap opens every file once, in sorted order, and reads it to
	// its end and closes it before it opens the next: the scanner sees
	// every byte of each plugin, one plugin after another.
	h1, err = dist.H1Tap(zipPath, func(name string) io.Writer {
		if !IsPlugin(name) || p.found() {
			return nil
		}
		return &pluginScan{name: name, to: &p}
	})
	if err != nil {
		return "", nil, err
	}
	return h1, p.result(), nil
}

// pluginScan feeds one plugin file to the picker's Scanner and, when the
// file ends (Close), hands its result to the picker, which resets the
// Scanner for the next file.
type pluginScan struct {
	name string
	to   *picker
}

func (ps *pluginScan) Write(b []byte) (int, error) { return ps.to.scan.Write(b) }

// Close ends the file's scan (once).
func (ps *pluginScan) Close() error {
	if ps.to != nil {
		ps.to.offer(ps.name)
		ps.to = nil
	}
	return nil
}

// picker keeps what ScanZip records of the plugins scanned in name order:
// the first with build information, else the first.
type picker struct {
	scan  *Scanner
	first *Info
	with  *Info
}

func (p *picker) found() bool { return p.with != nil }

// offer takes the result of the file just scanned and resets the Scanner,
// keeping its buffer (Result copies what it keeps out of it).
func (p *picker) offer(name string) {
	info := p.scan.Result()
	*p.scan = Scanner{cand: p.scan.cand[:0], carry: p.scan.carry[:0]}
	info.File = path.Base(name)
	switch {
	case p.with != nil:
	case info.None == "":
		p.with = info
	case p.first == nil:
		p.first = info
	}
}

func (p *picker) result() *Info {
	switch {
	case p.with != nil:
		return p.with
	case p.first != nil:
		return p.first
	}
	return &Info{None: NoneNoPlugin}
}
