package acl

import (
	"fmt"
	"path"
	"strings"

	"github.com/airgap/airgap/dist"
)

// releaseHost is the host part of a release pattern: the CLI releases of
// PRODUCT are named cli.airgap.invalid/PRODUCT (dist.ReleaseKeyNamespace),
// a host under .invalid that no registry can have, so no provider or
// module address is ever one.
var releaseHost = strings.TrimSuffix(dist.ReleaseKeyNamespace(""), "/")

// allReleases is the release pattern that admits every product.
var allReleases = releaseHost + "/**"

// ReleaseAddr is the address a release pattern matches for product's
// CLI releases.
func ReleaseAddr(product string) string { return dist.ReleaseKeyNamespace(product) }

// Pattern is one compiled allow pattern (see the package documentation).
type Pattern struct {
	raw  string
	segs []segment
	rest bool // the last part was "**": any number of further parts
	// release: the first part is releaseHost, so the pattern names CLI
	// releases (cli.airgap.invalid/PRODUCT), never providers or modules.
	release bool
}

// segment is one part of a pattern.
type segment struct {
	lit  string // lower-case literal, when glob is false
	glob bool   // path.Match pattern (lower case)
	any  bool   // "*": matches any one part
}

const (
	maxPatternLen = 512
	maxPatterns   = 256
)

// ParsePattern checks and compiles one pattern.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{raw: s}
	if s == "" {
		return p, fmt.Errorf("an empty pattern (want HOST/NAMESPACE/TYPE or HOST/NAMESPACE/NAME/SYSTEM, each part a glob, or \"**\")")
	}
	if len(s) > maxPatternLen {
		return p, fmt.Errorf("pattern of %d bytes (at most %d)", len(s), maxPatternLen)
	}
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return p, fmt.Errorf("pattern %q: only printable ASCII without spaces", s)
		}
	}
	parts := strings.Split(strings.ToLower(s), "/")
	if parts[len(parts)-1] == "**" {
		p.rest = true
		parts = parts[:len(parts)-1]
	}
	n := len(parts)
	p.release = n > 0 && parts[0] == releaseHost
	switch {
	case p.release && !(n == 2 && !p.rest || n == 1 && p.rest):
		return p, fmt.Errorf("pattern %q: a release pattern is %s/PRODUCT (terraform, tofu; a glob) or %s/**\nhint: %s/terraform admits terraform's CLI releases; a rule without any release pattern admits them all", s, releaseHost, releaseHost, releaseHost)
	case p.release:
	case p.rest && n > 3:
		return p, fmt.Errorf("pattern %q: too many parts before \"**\" (addresses have at most four)", s)
	case !p.rest && n != 3 && n != 4:
		return p, fmt.Errorf("pattern %q has %d parts: want HOST/NAMESPACE/TYPE (providers) or HOST/NAMESPACE/NAME/SYSTEM (modules), or end it in /** for any number", s, n)
	}
	for _, part := range parts {
		switch {
		case part == "":
			return p, fmt.Errorf("pattern %q has an empty part", s)
		case part == "**":
			return p, fmt.Errorf("pattern %q: \"**\" may only be the last part", s)
		case part == "*":
			p.segs = append(p.segs, segment{any: true})
		case strings.ContainsAny(part, `*?[\`):
			if _, err := path.Match(part, ""); err != nil {
				return p, fmt.Errorf("pattern %q: part %q is not a valid glob: %v", s, part, err)
			}
			p.segs = append(p.segs, segment{lit: part, glob: true})
		default:
			p.segs = append(p.segs, segment{lit: part})
		}
	}
	return p, nil
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.raw }

// Match reports whether the pattern covers addr, a catalog address
// (host/namespace/type or host/namespace/name/system). It allocates only
// for glob parts of mixed case.
func (p Pattern) Match(addr string) bool {
	i := 0
	for _, seg := range p.segs {
		if i > len(addr) {
			return false
		}
		j := strings.IndexByte(addr[i:], '/')
		part := addr[i:]
		if j >= 0 {
			part = addr[i : i+j]
		}
		if !seg.match(part) {
			return false
		}
		if j < 0 {
			i = len(addr) + 1 // consumed everything
		} else {
			i += j + 1
		}
	}
	if p.rest {
		return true
	}
	return i == len(addr)+1 // exactly as many parts as segments
}

// match reports whether one part of an address matches. An empty part
// matches nothing: addresses have none, and a glob such as "a*" or "***"
// would otherwise match one ("a//b" under "***/**").
func (s segment) match(part string) bool {
	switch {
	case part == "":
		return false
	case s.any:
		return true
	case !s.glob:
		return len(part) == len(s.lit) && strings.EqualFold(part, s.lit)
	}
	ok, _ := path.Match(s.lit, strings.ToLower(part))
	return ok
}

// Rules is a compiled list of allow patterns: an address is allowed when
// any pattern matches it.
type Rules struct {
	pats []Pattern
	key  string
	// releases: some pattern is a release pattern. Rules without one
	// admit every CLI release, as every rule did before release patterns
	// existed (AllowsRelease).
	releases bool
}

// CompileRules compiles patterns (at most 256).
func CompileRules(patterns []string) (*Rules, error) {
	if len(patterns) > maxPatterns {
		return nil, fmt.Errorf("%d patterns (at most %d per rule)", len(patterns), maxPatterns)
	}
	return CompileUnion(patterns)
}

// CompileUnion compiles the union of rules of a file (a person's groups and
// user block, File.LoginRules): as CompileRules, without the count limit
// of one rule (the file's limits bound it).
func CompileUnion(patterns []string) (*Rules, error) {
	r := &Rules{}
	for _, s := range patterns {
		p, err := ParsePattern(s)
		if err != nil {
			return nil, err
		}
		r.pats = append(r.pats, p)
		r.releases = r.releases || p.release
	}
	r.key = strings.Join(normalized(patterns), "\n")
	return r, nil
}

// normalized returns the patterns lower-cased, sorted, without duplicates.
func normalized(patterns []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range patterns {
		p = strings.ToLower(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sortStrings(out)
	return out
}

// Allows reports whether any pattern covers addr. A nil *Rules allows
// nothing. Cost: one Match per pattern until one matches.
func (r *Rules) Allows(addr string) bool {
	if r == nil {
		return false
	}
	for i := range r.pats {
		if r.pats[i].Match(addr) {
			return true
		}
	}
	return false
}

// AllowsRelease reports whether the rules admit product's CLI releases
// (/releases/PRODUCT/…, and their rows on /ui/releases): rules with no
// release pattern admit every product, as before such patterns existed;
// rules with one admit exactly the products a release pattern matches
// ("**" and other provider or module patterns do not count). A nil *Rules
// admits nothing.
func (r *Rules) AllowsRelease(product string) bool {
	if r == nil {
		return false
	}
	if !r.releases {
		return true
	}
	addr := ReleaseAddr(product)
	for i := range r.pats {
		if r.pats[i].release && r.pats[i].Match(addr) {
			return true
		}
	}
	return false
}

// Key identifies the set of addresses the rules allow, as far as their
// text can tell: rules whose patterns are equal after lower-casing,
// sorting and removing duplicates share a key (the server shares what it
// derives from rules between tokens with the same key).
func (r *Rules) Key() string {
	if r == nil {
		return ""
	}
	return r.key
}

// Patterns returns the patterns as written.
func (r *Rules) Patterns() []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.pats))
	for i, p := range r.pats {
		out[i] = p.raw
	}
	return out
}
