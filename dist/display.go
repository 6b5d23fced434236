package dist

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s safe to print on a terminal: every rune that could
// move the cursor, rewrite the screen or reorder text is replaced by a Go
// escape — C0 and C1 control characters and DEL (\x1b, \x07, \u009b),
// Unicode format characters such as the bidi overrides and isolates and
// zero-width joiners (\u202e, \u2066, \u200d), line and paragraph separators
// (\u2028) — and invalid UTF-8 bytes become \xHH. Everything else, including
// backslashes, is kept as is, so a clean string prints unchanged.
//
// Registry answers, module sources, manifests and key names are all
// untrusted: every such string goes through Printable (or PrintableLines)
// before it reaches a terminal. strconv.Quote would also escape these, but
// it adds quotes and escapes every backslash and quote too, which would make
// addresses and URLs, the common case, harder to read.
func Printable(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x80 && needsEscape(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// PrintableLines is Printable for text made of lines (an error with its
// "hint:" line): newlines are kept, everything else is escaped.
func PrintableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// CopyPrintable copies text from r to w as PrintableLines would print it,
// a line at a time (a line longer than 64 KiB in pieces of that size, each
// escaped on its own), so memory does not grow with the text.
func CopyPrintable(w io.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text, nl := strings.CutSuffix(string(line), "\n")
			out := Printable(text)
			if nl {
				out += "\n"
			}
			if _, werr := io.WriteString(w, out); werr != nil {
				return werr
			}
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil && err != bufio.ErrBufferFull:
			return err
		}
	}
}

func needsEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || r == utf8.RuneError
}

// HumanSize formats a byte count for people: 512 B, 1.5 KiB, 240.0 MiB.
func HumanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
