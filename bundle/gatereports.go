package bundle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// What 'airgap show BUNDLE SUBJECT' reads out of a bundle: the blobs a
// person reads as evidence (gate reports now), each checked against the
// signed manifest before a byte of it is shown.

// ReportRef is one gate report a bundle carries: the entry and (for a
// provider) the platform whose result it is, and the result.
type ReportRef struct {
	Kind     string // dist.KindProvider or dist.KindModule
	Address  string
	Version  string
	Platform string // providers only
	dist.GateResult
}

// Entry is "KIND ADDRESS VERSION[ PLATFORM]".
func (r ReportRef) Entry() string {
	s := r.Kind + " " + r.Address + " " + r.Version
	if r.Platform != "" {
		s += " " + r.Platform
	}
	return s
}

// Reports lists every gate report of m, in catalog order.
func (m *Manifest) Reports() []ReportRef {
	var out []ReportRef
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			for _, g := range pk.Gates {
				out = append(out, ReportRef{Kind: dist.KindProvider, Address: p.Addr(), Version: p.Version, Platform: pk.Platform(), GateResult: g})
			}
		}
	}
	for _, mv := range m.Catalog.Modules {
		for _, g := range mv.Gates {
			out = append(out, ReportRef{Kind: dist.KindModule, Address: mv.Addr(), Version: mv.Version, GateResult: g})
		}
	}
	return out
}

// ErrNoMatch: nothing of the bundle matches what was asked for.
var ErrNoMatch = errors.New("no such entry in the bundle")

// MatchReports keeps the reports of entry (ADDRESS@VERSION; an address
// without a host is on dist.DefaultRegistry; case as clients compare it),
// of gate and of platform when they are not "". The error says what the
// bundle has instead.
func MatchReports(refs []ReportRef, entry, gate, platform string) ([]ReportRef, error) {
	addr, ver, ok := strings.Cut(entry, "@")
	if !ok || addr == "" || ver == "" {
		return nil, fmt.Errorf("%q is not ADDRESS@VERSION (e.g. hashicorp/random@3.6.0 or example/vpc/aws@1.0.0)", dist.Printable(entry))
	}
	if strings.Count(addr, "/") == 1 || strings.Count(addr, "/") == 2 && !strings.Contains(strings.SplitN(addr, "/", 2)[0], ".") {
		addr = dist.DefaultRegistry + "/" + addr
	}
	key := dist.VersionKey(addr, ver)
	var out []ReportRef
	entries := map[string]bool{}
	for _, r := range refs {
		if dist.VersionKey(r.Address, r.Version) != key {
			continue
		}
		entries[r.Entry()] = true
		if (gate == "" || r.Gate == gate) && (platform == "" || r.Platform == platform) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		what := "no gate report"
		if len(entries) == 0 {
			what = "no gate report for " + dist.Printable(entry)
		} else {
			var gates []string
			for _, r := range refs {
				if dist.VersionKey(r.Address, r.Version) == key {
					gates = append(gates, dist.Printable(r.Gate+" on "+strings.TrimPrefix(r.Entry(), r.Kind+" ")))
				}
			}
			what += fmt.Sprintf(" of gate %q%s for %s; it has: %s", dist.Printable(gate), platformNote(platform), dist.Printable(entry), strings.Join(gates, "; "))
		}
		return nil, fmt.Errorf("%w: %s", ErrNoMatch, what)
	}
	return out, nil
}

func platformNote(p string) string {
	if p == "" {
		return ""
	}
	return " on " + dist.Printable(p)
}

// SpoolBlobs reads br's blobs and copies each of want (by digest) to a
// file of its own in dir, checked: the blob reader fails at the end of a
// blob whose size or digest is not the signed manifest's, and nothing is
// returned then. It stops once it has them all. The caller removes dir.
func SpoolBlobs(br *Reader, want map[verify.Digest]bool, dir string) (map[verify.Digest]string, error) {
	out := map[verify.Digest]string{}
	for len(out) < len(want) {
		b, r, err := br.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%w: %d of %d blobs were not found in the bundle", ErrTruncated, len(want)-len(out), len(want))
		}
		if err != nil {
			return nil, err
		}
		if !want[b.Digest] {
			continue
		}
		p := filepath.Join(dir, b.Digest.Hex())
		if err := spoolTo(p, r); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Digest.Short(), err)
		}
		out[b.Digest] = p
	}
	return out, nil
}

func spoolTo(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
