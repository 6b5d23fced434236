package dist

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/apparentlymart/go-textseg/v15/textseg"
)

// HCLTokens returns an upper bound on the tokens HCL's scanner makes of
// src: hclsyntax's for native syntax, or hcl/json's for a name ending in
// .json. It allocates nothing, so that a file can be refused before the
// parser holds a hundred bytes or more per token (CheckHCL).
//
// Why not hclsyntax.LexConfig: it is the allocation being bounded (a
// Token is 96 bytes, and the slice of them grows by doubling). hcl/json's
// scanner is not exported. The count for JSON follows that scanner
// exactly; the count for native syntax follows hclsyntax's scanner
// (scan_tokens.rl) in its three states that matter for the count — an
// expression, a quoted template, a heredoc — and counts at least one for
// every token it can make there: one per run of letters and digits (two
// if it starts with a digit and has a letter: a number then a name), one per other byte,
// one per comment, one per run of literal text in a template. Where the
// scanner's state cannot be followed cheaply (a byte beyond ASCII outside
// strings and comments, a carriage return alone in a heredoc) it counts the
// rest of the file as a token per byte, a bound in any state. FuzzHCLTokens
// checks the bound against the real scanners.
func HCLTokens(src []byte, filename string) int {
	if len(filename) > 5 && filename[len(filename)-5:] == ".json" {
		return jsonTokens(src)
	}
	return hclTokens(src, inExpr)
}

// jsonTokens counts the tokens of hcl/json's scanner (its scan function),
// step for step: white space skipped; one per punctuation byte, string
// (to an unescaped quote, a control byte or the end, advancing by grapheme
// clusters as the scanner does: a cluster can hold a quote), number run and
// keyword run; the first other byte ends the scan with an invalid token;
// one EOF.
func jsonTokens(src []byte) int {
	n := 1 // EOF
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == '=':
			i++
		case c == '"':
			i = jsonString(src, i)
		case c == '-' || c == '+' || c == '.' || isDigit(c):
			for i < len(src) && (isDigit(src[i]) || src[i] == '-' || src[i] == '+' || src[i] == '.' || src[i] == 'e' || src[i] == 'E') {
				i++
			}
		case isAlpha(c):
			for i < len(src) && (isAlpha(src[i]) || src[i] == '_') {
				i++
			}
		default:
			return n + 1 // invalid, then the scanner stops
		}
		n++
	}
	return n
}

// jsonString returns where the string starting at src[i] ends, as
// hcl/json's scanString finds it.
func jsonString(src []byte, i int) int {
	i++
	escaping := false
	for i < len(src) {
		switch b := src[i]; {
		case b == '\\':
			escaping = !escaping
			i++
		case b == '"':
			i++
			if !escaping {
				return i
			}
			escaping = false
		case b < 32:
			return i
		default:
			advance, _, _ := textseg.ScanGraphemeClusters(src[i:], true)
			i += advance
			escaping = false
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isWord(c byte) bool  { return isDigit(c) || isAlpha(c) || c == '_' }

// scanner states of hclTokens.
const (
	inExpr = iota
	inQuoted
	inHeredoc
	inTemplate // a bare template: a heredoc that does not end
)

type hclFrame struct {
	state  int
	marker []byte // heredoc
	sol    bool   // heredoc: at the start of a line
}

// HCLTemplateTokens returns an upper bound on the tokens of src as a
// template (hclsyntax.LexTemplate's, what hclsyntax.ParseTemplate parses),
// counted as HCLTokens counts a heredoc's text.
func HCLTemplateTokens(src []byte) int { return hclTokens(src, inTemplate) }

// hclTokens bounds hclsyntax.LexConfig's count (see HCLTokens), or with
// state inTemplate LexTemplate's.
func hclTokens(src []byte, state int) int {
	stack := []hclFrame{{state: state}}
	var braces int
	var ret []int // brace levels at which a template interpolation ends
	n := 1        // EOF
	i := 0
	unclosed := false // no "*/" follows
	for i < len(src) {
		if len(stack) > MaxHCLNesting+1 {
			// Deeper than checkHCLNesting lets through: counted as a
			// token per byte rather than kept on a stack that grows
			// with the file.
			return n + len(src) - i
		}
		top := &stack[len(stack)-1]
		c := src[i]
		switch top.state {
		case inExpr:
			switch {
			case c == ' ' || c == '\t':
				i++
			case isWord(c):
				j := i
				for j < len(src) && isWord(src[j]) {
					j++
				}
				n++
				if isDigit(c) && bytes.ContainsFunc(src[i:j], func(r rune) bool { return !unicode.IsDigit(r) }) {
					n++ // a number, then a name
				}
				i = j
			case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
				n++
				if k := bytes.IndexByte(src[i:], '\n'); k >= 0 {
					i += k + 1
				} else {
					i = len(src)
				}
			case c == '/' && i+1 < len(src) && src[i+1] == '*':
				k := -1
				if !unclosed {
					k = bytes.Index(src[i+2:], []byte("*/"))
				}
				if k >= 0 {
					n++
					i += 2 + k + 2
				} else { // unterminated: '/' and '*' are tokens of their own
					n += 2
					i += 2
					unclosed = true // and so is every later "/*" (else each would search to the end)
				}
			case c == '"':
				n++
				i++
				stack = append(stack, hclFrame{state: inQuoted})
			case c == '<' && i+1 < len(src) && src[i+1] == '<':
				marker, end, ok := heredocIntro(src, i)
				if !ok {
					return n + len(src) - i
				}
				n++
				if marker == nil { // not a heredoc: '<' '<'
					n += 1
					i += 2
					break
				}
				i = end
				stack = append(stack, hclFrame{state: inHeredoc, marker: marker, sol: true})
			case c == '{':
				n++
				braces++
				i++
			case c == '}' || c == '~' && i+1 < len(src) && src[i+1] == '}':
				n++
				if c == '~' {
					i++
				}
				i++
				if len(ret) > 0 && ret[len(ret)-1] == braces {
					ret = ret[:len(ret)-1]
					stack = stack[:len(stack)-1]
				}
				braces--
			case c < utf8.RuneSelf:
				n++
				i++
			case i == 0 && bytes.HasPrefix(src, []byte("\xef\xbb\xbf")):
				n += 3 // a byte order mark
				i += 3
			default:
				// Beyond ASCII, the scanner's tables of letters take a
				// lead byte and any bytes after it (0xD4 then '{' is a
				// letter to it), so its state is not followed further.
				return n + len(src) - i
			}
		case inQuoted, inHeredoc, inTemplate:
			if top.state == inHeredoc && top.sol {
				// At the start of a line: is it the closing marker?
				line := src[i:]
				if k := bytes.IndexByte(line, '\n'); k >= 0 {
					line = line[:k+1]
				}
				if bytes.IndexByte(line, '\r') >= 0 && (line[len(line)-1] != '\n' || bytes.IndexByte(line[:len(line)-1], '\r') != len(line)-2) {
					return n + len(src) - i // a lone carriage return
				}
				if line[len(line)-1] == '\n' && !bytes.ContainsAny(line, "$%") && bytes.Equal(bytes.TrimSpace(line), top.marker) {
					n += 2 // the marker, the newline
					i += len(line)
					stack = stack[:len(stack)-1]
					break
				}
			}
			switch {
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				n++
				i += 2
				if i < len(src) && src[i] == '~' {
					i++
				}
				braces++
				ret = append(ret, braces)
				top.sol = false
				stack = append(stack, hclFrame{state: inExpr})
			case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
				n += 2 // an escape ($${, %%{), and the literal text after it
				i += 3
				top.sol = false
			case c == '$' || c == '%':
				n += 2 // '$' or '%' alone, and the literal text after it
				i++
				top.sol = false
			case c == '"' && top.state == inQuoted:
				n++
				i++
				stack = stack[:len(stack)-1]
			case c == '\n' || c == '\r':
				n++
				i++
				if top.state == inHeredoc && c == '\n' {
					top.sol = true
				}
				if top.state != inQuoted && c == '\r' {
					// \r\n: one end of line (a lone \r was refused above
					// at the start of the line; mid-line, see below)
					if i >= len(src) || src[i] != '\n' {
						return n + len(src) - i
					}
					i++
					top.sol = true
				}
			default:
				// A run of literal text: valid UTF-8 other than the bytes
				// above, and in a quoted template escapes (\ and a
				// character). A byte that is not UTF-8 is a token of its
				// own and breaks the run.
				n++
				top.sol = false
				for i < len(src) {
					c := src[i]
					if c == '$' || c == '%' || c == '\n' || c == '\r' || c == '"' && top.state == inQuoted {
						break
					}
					if c == '\\' && top.state == inQuoted {
						if i+1 >= len(src) || src[i+1] == '\n' || src[i+1] == '\r' {
							n++ // a lone '\'
							i++
							break
						}
						if r, size := utf8.DecodeRune(src[i+1:]); r == utf8.RuneError && size == 1 {
							n++ // a lone '\' before a byte that is not UTF-8
							i++
							continue
						}
						i++
						c = src[i]
					}
					if c < utf8.RuneSelf {
						i++
						continue
					}
					r, size := utf8.DecodeRune(src[i:])
					if r == utf8.RuneError && size == 1 {
						n += 2 // the byte, and the literal text after it
						i++
						continue
					}
					i += size
				}
			}
		}
	}
	return n
}

// heredocIntro reads "<<" at src[i]: a heredoc's introduction ("<<",
// optional '-', a name, a newline) gives its marker and where its text
// starts; anything else gives a nil marker. ok is false when the name has
// characters beyond ASCII (the scanner's idea of a name there is Unicode's,
// not followed here).
func heredocIntro(src []byte, i int) (marker []byte, end int, ok bool) {
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) && (isWord(src[j]) || j > start && src[j] == '-') {
		if j == start && isDigit(src[j]) {
			return nil, 0, true
		}
		j++
	}
	if j < len(src) && src[j] >= utf8.RuneSelf {
		return nil, 0, false
	}
	if j == start {
		return nil, 0, true
	}
	m := src[start:j]
	if j < len(src) && src[j] == '\r' {
		j++
	}
	if j >= len(src) || src[j] != '\n' {
		return nil, 0, true
	}
	return m, j + 1, true
}
