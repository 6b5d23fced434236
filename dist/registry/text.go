package registry

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/airgap/airgap/dist"
)

// Registry strings end up in plans, catalogs, error messages and on the
// offline side's terminals. None of the protocol's fields has a use for
// control characters (or the other runes dist.Printable escapes: bidi
// overrides, zero-width joiners, invalid UTF-8), so a string holding one is
// a protocol violation (ErrInvalidAnswer), refused before anything else looks
// at it; only an ASCII-armored key may span lines. Messages still pass what
// they quote through dist.Printable, since a refusal quotes the string.

// maxQuoted bounds how much of a refused string a message repeats.
const maxQuoted = 120

// checkText returns ErrInvalidAnswer if s, the registry's field (a JSON
// name), holds a rune that is not plain printable text.
func checkText(what, field, s string) error {
	if dist.Printable(s) == s {
		return nil
	}
	return fmt.Errorf("%s: %w: %s holds control characters: %s", what, ErrInvalidAnswer, field, quote(s))
}

// checkArmor is checkText for an ASCII-armored block: line breaks (LF,
// CRLF) and tabs are allowed.
func checkArmor(what, field, s string) error {
	flat := strings.NewReplacer("\r\n", "\n", "\t", " ").Replace(s)
	if dist.PrintableLines(flat) == flat {
		return nil
	}
	return fmt.Errorf("%s: %w: %s holds control characters: %s", what, ErrInvalidAnswer, field, quote(s))
}

// quote is s escaped for a message, cut at maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return `"` + dist.Printable(s[:maxQuoted]) + `"…`
	}
	return `"` + dist.Printable(s) + `"`
}

// status is resp's status line for a message: the reason phrase is the
// server's text.
func status(resp *http.Response) string { return dist.Printable(resp.Status) }
