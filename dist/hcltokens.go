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
// strings and comments, a carriage return alone or a byte that is not
// UTF-8 in a heredoc) it counts the
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
	return hclScan(src, state, nil)
}

// nestBound follows, on the bytes hclScan classifies, what checkHCLNesting
// counts on the lexer's tokens: the levels opened (brackets, braces,
// parentheses, quoted and heredoc templates, interpolations and template
// directives) with the conditions ('?') of each, the current run of unary
// operators, and the template if/for blocks open; max is the most their sum
// reached. It errs only upwards: where a byte may or may not be such a
// token it counts one ('-' in "1e-5", '!' in "!="; a directive keyword
// followed by '-'), and nothing it misses can lower the sum (a missed
// token only breaks a run of unary operators). lost is set where hclScan
// stops following the scanner's state (then the bound says nothing), and
// over once the sum passes MaxHCLNesting (then no more levels are kept:
// memory stays bounded).
type nestBound struct {
	levels             []nestLevel
	depth, unary, runs int // as checkHCLNesting's depth, unary, blocks
	max                int
	lost, over         bool
	// cut, if set, is shown each offset at the start of a line where the
	// scan is outside every level (hclPieces).
	cut func(i int)
}

type nestLevel struct {
	brace bool // the file itself or '{': a newline ends an item there
	conds int
}

func newNestBound() *nestBound { return &nestBound{levels: []nestLevel{{brace: true}}} }

// token notes a token that is none of the kinds below (it breaks a run of
// unary operators).
func (b *nestBound) token() { b.unary = 0 }

func (b *nestBound) note() {
	if v := b.depth + b.unary + max(b.runs, 0); v > b.max {
		b.max = v
		if v > MaxHCLNesting {
			b.over = true
		}
	}
}

func (b *nestBound) open(brace bool) {
	b.unary = 0
	b.depth++
	if !b.over {
		b.levels = append(b.levels, nestLevel{brace: brace})
	}
	b.note()
}

func (b *nestBound) close() {
	b.unary = 0
	if b.over || len(b.levels) <= 1 {
		return
	}
	top := b.levels[len(b.levels)-1]
	b.depth -= 1 + top.conds
	b.levels = b.levels[:len(b.levels)-1]
}

// item notes a newline (ends an item at a brace level) or a comma (ends
// one at any level): the conditions of the item end with it.
func (b *nestBound) item(comma bool) {
	b.unary = 0
	if b.over {
		return
	}
	top := &b.levels[len(b.levels)-1]
	if comma || top.brace {
		b.depth -= top.conds
		top.conds = 0
	}
}

func (b *nestBound) question() {
	b.unary = 0
	b.depth++
	if !b.over {
		b.levels[len(b.levels)-1].conds++
	}
	b.note()
}

func (b *nestBound) unaryOp() {
	b.unary++
	b.note()
}

// HCLNestingBound returns an upper bound on the depth checkHCLNesting
// measures in native-syntax src, from the same allocation-free pass as
// HCLTokens; ok is false where that pass cannot follow the scanner (a
// byte beyond ASCII outside strings and comments, a lone carriage return
// in a heredoc, nesting over the limit), and the depth must then be
// measured on the lexer's tokens.
func HCLNestingBound(src []byte) (depth int, ok bool) {
	b := newNestBound()
	hclScan(src, inExpr, b)
	return b.max, !b.lost && !b.over
}

// hclScan is hclTokens, also following the nesting into nb (may be nil).
func hclScan(src []byte, state int, nb *nestBound) int {
	if nb == nil {
		nb = &nestBound{over: true} // nothing kept
	}
	stack := []hclFrame{{state: state}}
	var braces int
	var ret []int // brace levels at which a template interpolation ends
	n := 1        // EOF
	i := 0
	unclosed := false // no "*/" follows
	for i < len(src) {
		if nb.cut != nil && i > 0 && src[i-1] == '\n' && len(stack) == 1 && stack[0].state == inExpr && len(nb.levels) == 1 && !nb.over {
			nb.cut(i)
		}
		if len(stack) > MaxHCLNesting+1 {
			// Deeper than checkHCLNesting lets through: counted as a
			// token per byte rather than kept on a stack that grows
			// with the file.
			nb.lost = true
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
				nb.token()
				n++
				if isDigit(c) && bytes.ContainsFunc(src[i:j], func(r rune) bool { return !unicode.IsDigit(r) }) {
					n++ // a number, then a name
				}
				i = j
			case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
				n++
				nb.token()
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
				nb.token()
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
				nb.open(false)
			case c == '<' && i+1 < len(src) && src[i+1] == '<':
				marker, end, ok := heredocIntro(src, i)
				if !ok {
					nb.lost = true
					return n + len(src) - i
				}
				n++
				if marker == nil {
					// Not a heredoc here: '<' alone, and the next '<' is
					// looked at again ("<<<A" is '<' and a heredoc).
					i++
					nb.token()
					break
				}
				i = end
				stack = append(stack, hclFrame{state: inHeredoc, marker: marker, sol: true})
				nb.open(false)
			case c == '{':
				n++
				braces++
				i++
				nb.open(true)
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
				nb.close()
			case c < utf8.RuneSelf:
				n++
				i++
				switch c {
				case '(', '[':
					nb.open(false)
				case ')', ']':
					nb.close()
				case '?':
					nb.question()
				case '\n', ',':
					nb.item(c == ',')
				case '-', '!':
					nb.unaryOp()
				default:
					nb.token()
				}
			case i == 0 && bytes.HasPrefix(src, []byte("\xef\xbb\xbf")):
				n += 3 // a byte order mark
				i += 3
			default:
				// Beyond ASCII, the scanner's tables of letters take a
				// lead byte and any bytes after it (0xD4 then '{' is a
				// letter to it), so its state is not followed further.
				nb.lost = true
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
					nb.lost = true
					return n + len(src) - i // a lone carriage return
				}
				if line[len(line)-1] == '\n' && !bytes.ContainsAny(line, "$%") && bytes.Equal(bytes.TrimSpace(line), top.marker) {
					n += 2 // the marker, the newline
					i += len(line)
					stack = stack[:len(stack)-1]
					nb.close()
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
				nb.open(false)
				if c == '%' {
					// A directive: checkHCLNesting counts the if and for
					// blocks it opens (the name right after it, past
					// spaces; a name runs on over '-', as the scanner's).
					j := i
					for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
						j++
					}
					k := j
					for k < len(src) && (isWord(src[k]) || src[k] == '-') {
						k++
					}
					switch string(src[j:k]) {
					case "if", "for":
						nb.runs++
						nb.note()
					case "endif", "endfor":
						nb.runs--
					}
				}
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
				nb.close()
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
					if r == utf8.RuneError && size == 1 && top.state == inHeredoc {
						// The scanner looks for the closing marker again
						// after such a byte ("\xcf EOT" ends a heredoc),
						// which is not followed here.
						nb.lost = true
						return n + len(src) - i
					}
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
