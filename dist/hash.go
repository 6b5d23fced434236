package dist

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/airgap/airgap/verify"
	"golang.org/x/mod/sumdb/dirhash"
)

// H1 computes the h1: hash Terraform records for a provider zip file:
// dirhash.HashZip with Hash1. The zip must be the publisher's bytes.
func H1(zipPath string) (string, error) {
	h, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return "", fmt.Errorf("computing h1 hash of %s: %w", zipPath, err)
	}
	return h, nil
}

// ZH is the zh: hash of a package with sha256 digest d.
func ZH(d verify.Digest) string { return "zh:" + d.Hex() }

// ShasumsLine is one line of a SHA256SUMS file.
type ShasumsLine struct {
	Hex      string
	Filename string
}

// MaxShasumsSize bounds a SHA256SUMS file we read.
const MaxShasumsSize = 4 << 20

// ParseShasums parses a SHA256SUMS file ("<64 hex>  <filename>" lines). It
// returns the lines and whether every line was well-formed (Terraform records
// zh: hashes from SHA256SUMS only when all are).
func ParseShasums(r io.Reader) (lines []ShasumsLine, allValid bool, err error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxShasumsSize))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	allValid = true
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		h, name, ok := strings.Cut(line, "  ")
		if !ok || !verify.IsHex64(strings.ToLower(h)) || name == "" || strings.ContainsAny(name, " \t") {
			allValid = false
			continue
		}
		lines = append(lines, ShasumsLine{Hex: strings.ToLower(h), Filename: name})
	}
	return lines, allValid, sc.Err()
}

// ShasumFor returns the hex sha256 recorded for filename.
func ShasumFor(lines []ShasumsLine, filename string) (string, bool) {
	for _, l := range lines {
		if l.Filename == filename {
			return l.Hex, true
		}
	}
	return "", false
}
