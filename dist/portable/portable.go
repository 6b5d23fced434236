// Package portable decides whether the names in a module's tree mean the
// same files on every file system Terraform and OpenTofu run on: Linux
// (where airgap exports), macOS (APFS and HFS+, case-insensitive and
// normalization-insensitive by default) and Windows (NTFS and the Win32
// name rules). Names that are distinct on the exporting Linux machine but
// one file elsewhere let a module hide configuration from the review: an
// "override.tf" in "modules/net" merges, on a Mac, into the "Modules/net"
// that airgap read and vendored.
//
// It is the one place that rule lives. dist/getter applies it to every
// entry of a module archive, every path of a git tree (before anything is
// checked out) and every file of the tree it archives; dist/vendoring uses
// Equal for its reserved folder.
//
// A name is refused when one of its components holds a character Windows
// cannot create or reads as a separator, ends in a dot or a space, is a
// Windows device name or has the shape of an 8.3 short name; and a Set
// refuses a name that collides with one added before under Unicode's
// canonical caseless matching (Key), component by component. The rule is
// deliberately wider than any one file system: a wider rule refuses names no
// real module has; a narrower one lets a merge through on some engineer's
// machine.
//
// The full rule, its examples and why golang.org/x/text: docs/fetching.md,
// "Names that are one file everywhere".
//
// It reads no files and touches no file system: it judges names.
package portable

import (
	"errors"
	"fmt"
	"hash/maphash"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// ErrName is wrapped by every error of this package.
var ErrName = errors.New("a name that is not the same file on every file system")

// Check reports why name (a slash path relative to the module root, as
// archives and git spell it) is not the same file on Linux, macOS and
// Windows, or nil. It does not look for collisions with other names (see
// Set).
func Check(name string) error {
	for _, c := range strings.Split(name, "/") {
		if why := component(c); why != "" {
			return fmt.Errorf("%w: %q: %s", ErrName, name, why)
		}
	}
	return nil
}

// component says what is wrong with one path component, or "".
func component(c string) string {
	if c == "" || c == "." || c == ".." {
		return "" // the callers' path rules handle these
	}
	if i := strings.IndexAny(c, `\:<>"|?*`); i >= 0 {
		switch c[i] {
		case '\\':
			return "a backslash is a directory separator on Windows"
		case ':':
			return "a colon names an alternate data stream on Windows and is a separator on macOS"
		default:
			return fmt.Sprintf("Windows cannot create a name with %q in it", c[i])
		}
	}
	if last := c[len(c)-1]; last == '.' || last == ' ' {
		return fmt.Sprintf("Windows drops trailing dots and spaces (there it is %q)", strings.TrimRight(c, ". "))
	}
	base, _, _ := strings.Cut(c, ".")
	base = strings.TrimRight(base, " ")
	if isDevice(base) {
		return fmt.Sprintf("%s is a device name on Windows, with any extension", strings.ToUpper(base))
	}
	if reShortName.MatchString(c) {
		return "it has the shape of an NTFS short (8.3) name, which can open another file of the module on Windows"
	}
	return ""
}

// reShortName: up to six characters, "~", digits, and an extension of at
// most three characters: what NTFS generates as a file's short name.
var reShortName = regexp.MustCompile(`^[^.~]{0,6}~[0-9]+(\.[^.]{0,3})?$`)

func isDevice(base string) bool {
	u := strings.ToUpper(base)
	switch u {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if rest, ok := strings.CutPrefix(u, "COM"); ok {
		return deviceNumber(rest)
	}
	if rest, ok := strings.CutPrefix(u, "LPT"); ok {
		return deviceNumber(rest)
	}
	return false
}

func deviceNumber(s string) bool {
	switch s {
	case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
		return true
	}
	return false
}

// Key is the form under which two path components are the same name on
// some file system: NFD(fold(simple(NFD(c)))), Unicode's canonical
// caseless match after each rune is mapped to the lower case of its
// simple upper case. That first mapping is for NTFS, which compares names
// by its upcase table (each rune's simple upper case), under which "ı"
// (dotless i) is "I" and so "i", while Unicode's case folding keeps "ı"
// apart; and it gives x/text's folding, which swaps rather than joins the
// upper and lower case Cherokee letters ("Ꮜ" folds to "ꮜ" and "ꮜ" to "Ꮜ"),
// one form to fold. ASCII takes a shortcut with the same result.
func Key(c string) string {
	if isASCII(c) {
		return strings.ToLower(c)
	}
	return norm.NFD.String(cases.Fold().String(strings.Map(simpleCase, norm.NFD.String(c))))
}

// simpleCase is r's simple lower case of its simple upper case.
func simpleCase(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }

// Equal reports whether a and b are the same path component on some file
// system airgap's modules are installed on.
func Equal(a, b string) bool { return a == b || Key(a) == Key(b) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// A Set holds the names of one tree and refuses a name that is one of
// them under Key (see Add). The zero value is not usable; use NewSet.
//
// Memory: one entry per distinct (directory, component) pair — the
// callers add every directory and file of a tree, so at most as many as
// the tree's entries (getter.MaxArchiveEntries, 100,000) — of 16 bytes of
// key and the component's text (at most MaxComponent bytes): at most
// about 30 MiB for a tree at the limits, a few KB for real modules.
type Set struct {
	seed maphash.Seed
	// names: (hash of the parent's path as written, hash of the
	// component's Key) -> the component as first written.
	names map[setKey]string
}

type setKey struct{ parent, fold uint64 }

// MaxComponent bounds one path component (NAME_MAX on ext4, APFS and
// NTFS: no file system the clients use can create a longer one).
const MaxComponent = 255

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{seed: maphash.MakeSeed(), names: map[setKey]string{}} }

// Add checks name (Check) and adds it and each of its parent directories;
// it refuses a name one of whose components is, under Key, another
// component already added in the same directory. The error names both: the
// path added before and the path now, up to the colliding component, and
// the whole name when the collision is in a parent directory. Adding the
// same name twice is not a collision (a directory has many entries).
func (s *Set) Add(name string) error {
	if err := Check(name); err != nil {
		return err
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	rest, at := name, 0
	for rest != "" {
		c, next, _ := strings.Cut(rest, "/")
		rest = next
		if c == "" || c == "." {
			at += len(c) + 1
			continue
		}
		if len(c) > MaxComponent {
			return fmt.Errorf("%w: %q: a name in it is longer than %d bytes, which no file system the clients use can hold", ErrName, name, MaxComponent)
		}
		k := setKey{parent: h.Sum64(), fold: maphash.String(s.seed, Key(c))}
		if prev, ok := s.names[k]; ok && prev != c && Equal(prev, c) {
			return collision(name, name[:at], prev, c)
		} else if !ok {
			s.names[k] = c
		}
		h.WriteString(c)
		h.WriteByte('/')
		at += len(c) + 1
	}
	return nil
}

// collision is the error for component c of name (under parent, a prefix
// of name ending in "/" or empty) that is prev under Key.
func collision(name, parent, prev, c string) error {
	first, now := parent+prev, parent+c
	why := "they differ only in case (under Unicode case folding), which macOS and Windows ignore"
	if norm.NFC.String(prev) == norm.NFC.String(c) {
		why = "they differ only in Unicode normalization (NFC against NFD), which macOS ignores"
	}
	where := ""
	if now != name {
		where = fmt.Sprintf(" (in %q)", name)
	}
	return fmt.Errorf("%w: %q and %q%s are one entry on some file systems: %s, and their contents would merge there", ErrName, first, now, where, why)
}
