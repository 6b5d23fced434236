// Package goinfo reads the Go build information of a provider's plugin
// binary — the Go version, the main module and every module compiled in —
// while the binary's bytes stream by, and writes it as a small canonical JSON
// document (Info) that a bundle carries next to the package and that the
// SBOM is built from.
//
// Scanner rides on the one pass that export and the bundle check already
// make over every file of a package (for its h1: hash): it finds the
// build-information header that Go 1.18 and later write, at 16-byte-aligned
// offsets as debug/buildinfo does, and hands the module string to
// runtime/debug.ParseBuildInfo. Each byte is read once and memory is
// constant, where debug/buildinfo would need the unpacked binary on disk or
// in memory. No build information is not an error: Info.None says why there
// is none.
//
// Everything in the binary is untrusted: strings are bounded (MaxVersion,
// MaxModInfo, MaxString, MaxModules) and must be printable; anything over a
// bound is recorded as Info.None, not read. A Scanner holds at most
// MaxModInfo + 1 KiB, ScanZip holds one Scanner at a time, the search stops
// after MaxCandidates refused headers, and an encoded Info is at most
// MaxDocument bytes.
//
// Why a stream scan and not debug/buildinfo, how a candidate header is
// checked, and what a hostile binary costs: docs/fetching.md, "Go build
// information".
//
// It does not run the binary, unpack packages or decide what to carry.
package goinfo

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/airgap/airgap/dist"
)

// Format is the version of the Info document this package writes.
const Format = 1

// Bounds on what is read from a binary (see the package documentation).
const (
	MaxVersion    = 256
	MaxModInfo    = 4 << 20
	MaxString     = 1024
	MaxModules    = 5000
	MaxCandidates = 4096
	// MaxDocument bounds an encoded Info: MaxModules modules of three
	// MaxString strings would be more, but the module information they
	// come from is at most MaxModInfo bytes.
	MaxDocument = 2 * MaxModInfo
)

// Info is the Go build information of one plugin binary, or why there is
// none. It is the content of a RoleGoBuildInfo blob: Encode writes it in
// one canonical form, so that the same binary always gives the same bytes.
type Info struct {
	Format int `json:"format"`
	// File is the plugin binary's name in the package zip.
	File string `json:"file,omitempty"`
	// None says why there is no build information; the fields below are
	// then empty.
	None      string    `json:"none,omitempty"`
	GoVersion string    `json:"go_version,omitempty"`
	Path      string    `json:"path,omitempty"` // the main package
	Main      *Module   `json:"main,omitempty"`
	Deps      []Module  `json:"deps,omitempty"`
	Settings  []Setting `json:"settings,omitempty"`
}

// Module is one module compiled into the binary.
type Module struct {
	Path    string  `json:"path"`
	Version string  `json:"version,omitempty"`
	Sum     string  `json:"sum,omitempty"`
	Replace *Module `json:"replace,omitempty"`
}

// Setting is one build setting (GOOS, vcs.revision...).
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// keptSettings are the build settings recorded: what says how and from
// what the binary was built. Others (-ldflags, -gcflags, CGO_CFLAGS...) are
// long, free-form, and say nothing a site reviews.
var keptSettings = map[string]bool{
	"-buildmode": true, "-compiler": true, "-trimpath": true, "CGO_ENABLED": true,
	"GOOS": true, "GOARCH": true, "GOAMD64": true, "GOARM": true, "GOARM64": true, "GOEXPERIMENT": true,
	"vcs": true, "vcs.revision": true, "vcs.time": true, "vcs.modified": true,
}

// Reasons recorded in Info.None.
const (
	NoneNotGo     = "no Go build information found in the plugin binary"
	NoneNoPlugin  = "no plugin binary (terraform-provider-*) in the package"
	NonePre118    = "built with a Go release before 1.18: its build information is not read"
	NoneTooLarge  = "build information over the size limit: not read"
	NoneMalformed = "build information is malformed: not read"
	NoneBounds    = "build information over the limits on modules and strings, or with unprintable strings: not read"
	NoneTooMany   = "too many false build-information headers: search stopped"
)

var magic = []byte("\xff Go buildinf:")

const (
	align      = 16
	headerSize = 32
)

type scanPhase int

const (
	searching scanPhase = iota // for an aligned magic
	header                     // collecting the 32-byte header
	version                    // collecting the version string and the module string's length
	module                     // collecting the module string (the candidate was taken)
	done
)

// Scanner finds the build information in a binary written to it. It is an
// io.Writer that never fails; Result says what it found. Not safe for
// concurrent use.
type Scanner struct {
	off     int64  // absolute offset of the next byte written
	carry   []byte // the last bytes of the stream while searching, for a header across writes
	phase   scanPhase
	cand    []byte // what is being collected (header and version, then the module string)
	candOff int64  // where the candidate header starts
	need    int    // bytes cand must hold before the next step
	refused int
	vers    string
	info    *Info
}

// Write scans p.
func (s *Scanner) Write(p []byte) (int, error) {
	n := len(p)
	s.feed(p)
	return n, nil
}

func (s *Scanner) feed(p []byte) {
	for len(p) > 0 {
		switch s.phase {
		case done:
			s.off += int64(len(p))
			return
		case searching:
			p = s.search(p)
		default:
			k := min(len(p), s.need-len(s.cand))
			s.cand = appendBounded(s.cand, p[:k], s.need)
			s.off += int64(k)
			p = p[k:]
			if len(s.cand) == s.need {
				s.step()
			}
		}
	}
}

// appendBounded appends p to b, growing b (by doubling) to at most limit
// bytes of capacity: append's own growth would overshoot the bound a
// Scanner states.
func appendBounded(b, p []byte, limit int) []byte {
	if n := len(b) + len(p); n > cap(b) {
		grown := make([]byte, len(b), min(max(2*cap(b), n), max(limit, n)))
		copy(grown, b)
		b = grown
	}
	return append(b, p...)
}

// search looks for a header at the 16-byte-aligned offsets of carry+p: it
// tests one byte in sixteen (the header can start nowhere else), so it
// costs a few percent of hashing the same bytes. It returns what is left
// of p from the start of a header found (the scanner then collects it), or
// nil when p is used up. carry holds the bytes from an aligned 0xff near
// the end of the previous write, shorter than the magic.
func (s *Scanner) search(p []byte) []byte {
	if len(s.carry) > 0 {
		need := len(magic) - len(s.carry)
		if len(p) < need { // still short: keep collecting
			if bytes.Equal(p, magic[len(s.carry):len(s.carry)+len(p)]) {
				s.carry = append(s.carry, p...)
				s.off += int64(len(p))
				return nil
			}
			s.carry = s.carry[:0]
		} else {
			match := bytes.Equal(p[:need], magic[len(s.carry):])
			start := s.off - int64(len(s.carry))
			if match {
				s.begin(start, s.carry)
				s.carry = s.carry[:0]
				return p
			}
			s.carry = s.carry[:0]
		}
	}
	i := int((align - s.off%align) % align) // the first aligned offset in p
	for ; i < len(p); i += align {
		if p[i] != magic[0] {
			continue
		}
		if len(p)-i < len(magic) {
			if bytes.Equal(p[i:], magic[:len(p)-i]) {
				s.carry = append(s.carry[:0], p[i:]...)
			}
			break
		}
		if bytes.Equal(p[i:i+len(magic)], magic) {
			s.off += int64(i)
			s.begin(s.off, nil)
			return p[i:]
		}
	}
	s.off += int64(len(p))
	return nil
}

// begin starts collecting a candidate header at off, with its first bytes
// (already counted in s.off).
func (s *Scanner) begin(off int64, first []byte) {
	s.phase, s.candOff, s.need = header, off, headerSize
	s.cand = append(s.cand[:0], first...)
}

// step checks what was collected once it holds need bytes: it asks for
// more, takes the candidate, finishes, or refuses the candidate.
func (s *Scanner) step() {
	c := s.cand
	switch s.phase {
	case header:
		ptr, flags := c[14], c[15]
		switch {
		case (ptr != 4 && ptr != 8) || flags&^3 != 0:
			s.refuse()
		case flags&2 == 0:
			s.finish(&Info{None: NonePre118})
		default:
			s.phase, s.need = version, headerSize+binary.MaxVarintLen64
		}
	case version:
		l, n := binary.Uvarint(c[headerSize:])
		if n <= 0 || l == 0 || l > MaxVersion {
			s.refuse()
			return
		}
		end := headerSize + n + int(l)
		if len(c) < end+binary.MaxVarintLen64 {
			s.need = end + binary.MaxVarintLen64
			return
		}
		vers := string(c[headerSize+n : end])
		m, k := binary.Uvarint(c[end:])
		if k <= 0 || dist.Printable(vers) != vers || !(strings.HasPrefix(vers, "go") || strings.HasPrefix(vers, "devel ")) {
			s.refuse()
			return
		}
		// A Go version and a module string's length: this is the header.
		s.vers = vers
		switch {
		case m > MaxModInfo:
			s.finish(&Info{None: NoneTooLarge})
		case m == 0:
			s.finish(s.parse(""))
		default:
			have := c[end+k:]
			if uint64(len(have)) >= m {
				s.finish(s.parse(string(have[:m])))
				return
			}
			s.phase, s.need = module, int(m)
			s.cand = append(s.cand[:0], have...)
		}
	case module:
		s.finish(s.parse(string(c)))
	}
}

// refuse drops the candidate and searches again from the next aligned
// offset, through the bytes already collected (at most a few hundred: a
// candidate is taken or refused before its module string is collected).
func (s *Scanner) refuse() {
	if s.refused++; s.refused > MaxCandidates {
		s.finish(&Info{None: NoneTooMany})
		return
	}
	rest := append([]byte(nil), s.cand[align:]...)
	s.phase, s.cand, s.off = searching, s.cand[:0], s.candOff+align
	s.feed(rest)
}

func (s *Scanner) finish(info *Info) {
	s.phase, s.info, s.cand, s.carry = done, info, nil, nil
}

// parse turns the module string (with its sentinels) into an Info within
// the bounds.
func (s *Scanner) parse(mod string) *Info {
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		// The sentinels of cmd/go/internal/modload (infoStart, infoEnd),
		// stripped as debug/buildinfo does.
		mod = mod[16 : len(mod)-16]
	} else {
		mod = ""
	}
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return &Info{None: NoneMalformed}
	}
	bi.GoVersion = s.vers
	return FromBuildInfo(bi)
}

// Result is what the scan found: the build information, or an Info whose
// None says why there is none. Call it after the whole binary was written.
func (s *Scanner) Result() *Info {
	switch {
	case s.info != nil:
		return s.info
	case s.phase == module:
		return &Info{None: NoneMalformed} // the stream ended inside the module string
	}
	return &Info{None: NoneNotGo}
}

// FromBuildInfo converts the standard library's build information into an
// Info within the bounds (or one that says it is over them).
func FromBuildInfo(bi *debug.BuildInfo) *Info {
	info := &Info{GoVersion: bi.GoVersion, Path: bi.Path}
	ok := fits(bi.GoVersion, MaxVersion) && fits(bi.Path, MaxString)
	mods := 0
	conv := func(m *debug.Module) *Module {
		if m == nil {
			return nil
		}
		mods++
		out := &Module{Path: m.Path, Version: m.Version, Sum: m.Sum}
		ok = ok && fits(m.Path, MaxString) && fits(m.Version, MaxString) && fits(m.Sum, MaxString)
		if m.Replace != nil {
			mods++
			out.Replace = &Module{Path: m.Replace.Path, Version: m.Replace.Version, Sum: m.Replace.Sum}
			ok = ok && fits(m.Replace.Path, MaxString) && fits(m.Replace.Version, MaxString) && fits(m.Replace.Sum, MaxString)
		}
		return out
	}
	if bi.Main.Path != "" {
		info.Main = conv(&bi.Main)
	}
	for _, d := range bi.Deps {
		if mods > MaxModules {
			break
		}
		info.Deps = append(info.Deps, *conv(d))
	}
	for _, st := range bi.Settings {
		if keptSettings[st.Key] {
			ok = ok && fits(st.Value, MaxString)
			info.Settings = append(info.Settings, Setting{Key: st.Key, Value: st.Value})
		}
	}
	if !ok || mods > MaxModules {
		return &Info{None: NoneBounds}
	}
	return info
}

// fits reports whether s is printable and at most max bytes.
func fits(s string, max int) bool { return len(s) <= max && dist.Printable(s) == s }

// Encode is the canonical form of info: compact JSON, a newline, with the
// format set. The same Info always gives the same bytes.
func Encode(info *Info) []byte {
	out := *info
	out.Format = Format
	b, err := json.Marshal(&out)
	if err != nil {
		panic(err) // strings and ints only
	}
	return append(b, '\n')
}

// documentJSON bounds an encoded Info: MaxDocument bytes, nested at most 8
// deep (it nests 4: itself, deps, a module, its replacement), no unknown
// keys.
var documentJSON = dist.JSONLimit{MaxBytes: MaxDocument, MaxDepth: 8, Strict: true}

// ErrDocument: an encoded Info is unreadable or not canonical.
var ErrDocument = errors.New("invalid Go build information document")

// Decode reads an encoded Info (a blob from a bundle or store: untrusted).
// It must be at most MaxDocument bytes, of a format this package reads, and
// exactly what Encode would write for it.
func Decode(b []byte) (*Info, error) {
	if len(b) > MaxDocument {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrDocument, len(b), MaxDocument)
	}
	var info Info
	if err := documentJSON.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDocument, err)
	}
	if info.Format != Format {
		return nil, fmt.Errorf("%w: format %d, this airgap reads %d", ErrDocument, info.Format, Format)
	}
	if !bytes.Equal(Encode(&info), b) {
		return nil, fmt.Errorf("%w: not in canonical form", ErrDocument)
	}
	return &info, nil
}

// Modules counts the modules an Info lists (main, dependencies,
// replacements).
func (info *Info) Modules() int {
	n := 0
	if info.Main != nil {
		n++
	}
	for _, d := range info.Deps {
		n++
		if d.Replace != nil {
			n++
		}
	}
	return n
}
