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
// file of its own in dir (a directory of the caller's own, mode 0700: each
// file is created 0600 and O_EXCL), checked: the blob reader stops at the
// size the signed manifest declares and fails at the end of a blob whose
// digest is not the manifest's, hashing while it copies, and nothing is
// returned then. A wanted blob declared larger than max is refused before
// a byte is read, so what is spooled is at most max bytes a blob. It
// stops once it has them all. On an error the files it made are removed;
// the caller removes dir.
func SpoolBlobs(br *Reader, want map[verify.Digest]bool, dir string, max int64) (map[verify.Digest]string, error) {
	for _, b := range br.Manifest().Blobs {
		if want[b.Digest] && b.Size > max {
			return nil, fmt.Errorf("blob %s (%s) is %s, more than the %s a blob is read out of a bundle to show\nhint: import the bundle and read the file in the store", b.Digest.Short(), br.Manifest().Describe(b.Digest), dist.HumanSize(b.Size), dist.HumanSize(max))
		}
	}
	out := map[verify.Digest]string{}
	fail := func(err error) (map[verify.Digest]string, error) {
		for _, p := range out {
			os.Remove(p)
		}
		return nil, err
	}
	for len(out) < len(want) {
		b, r, err := br.Next()
		if err == io.EOF {
			return fail(fmt.Errorf("%w: %d of %d blobs were not found in the bundle", ErrTruncated, len(want)-len(out), len(want)))
		}
		if err != nil {
			return fail(err)
		}
		if !want[b.Digest] {
			continue
		}
		p := filepath.Join(dir, b.Digest.Hex())
		if err := spoolTo(p, r); err != nil {
			return fail(fmt.Errorf("%s: %w", b.Digest.Short(), err))
		}
		out[b.Digest] = p
	}
	return out, nil
}

// spoolTo copies r, a checked blob reader, to the new file path (0600),
// and removes it if the copy fails.
func spoolTo(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
