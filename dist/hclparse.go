package dist

import (
	"bytes"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// hclPieceBytes is about how much of a file ParseHCL gives the parser at
// a time.
const hclPieceBytes = 8 << 10

// utf8BOM is the byte order mark hclsyntax drops at the start of its input.
var utf8BOM = []byte("\xef\xbb\xbf")

// ParseHCL is hclsyntax.ParseConfig for a native-syntax configuration
// file its caller holds admitted (AdmitHCL), with the same result, in less
// time and memory for a big file: it parses the file in pieces of about
// hclPieceBytes, cut at the start of a line between two of its top-level
// items, and joins their bodies. The parser's time goes mostly into the
// slice of every token of what it is given, grown step by step (each
// step a copy) and scanned by the collector; in pieces that slice stays
// under a MB, where a 200 KB file's grew to 4 MB. On the bench's 1 GiB
// site a warm re-export took 2.14 s instead of 2.36 and peaked at 61 MiB
// resident instead of 79 (five alternating runs; the lexer's CPU 0.39 s
// instead of 0.61).
//
// The result cannot differ from ParseConfig's on the whole file, whatever
// the cuts: a cut is made only after a newline, and the lexer and parser
// read a file left to right, so the pieces read as the whole does up to a
// cut; a cut that is not between two items leaves something open at the
// end of its piece (a block, brackets, a string, a heredoc, a comment, an
// interpolation, an expression), which hclsyntax reports as an error.
// Two exceptions send the file whole: bytes that are not UTF-8 (a lead
// byte takes the bytes after it into its token, a newline too), and a
// piece starting with a byte order mark (the lexer drops one at the start
// of its input only).
// Any error in any piece, or an argument set in two pieces (the whole
// file's "Attribute redefined"), and the file is parsed whole again, so
// errors read as ParseConfig's. FuzzParseHCL compares the two on cuts
// made anywhere. Where the cuts fall is only a matter of speed: they come
// from the scan HCLTokens makes (hclScan), at lines it finds outside
// every bracket, string and heredoc. Worst case: a file whose pieces all
// parse but the last costs two parses of it, the memory of one (the
// pieces' results are dropped first): at MaxHCLTokens, 0.44 s of CPU
// a file against 0.20 and 523 MB allocated against 278, at the same peak
// resident size (193 MB; TestParseHCLWorstCase). The tokens in flight
// stay under what the caller holds admitted: a piece lexes fewer than
// the file. The file's Nav is nil for a file parsed in pieces
// (hclsyntax's type for it is not exported); only hcl's diagnostic text
// writer and hcled read it, for a file with errors, and such a file is
// always parsed whole.
func ParseHCL(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	cuts := hclPieces(src, hclPieceBytes)
	if len(cuts) == 0 {
		return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	if f, diags, ok := parseHCLPieces(src, filename, cuts); ok {
		return f, diags
	}
	return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
}

// hclPieces returns where ParseHCL cuts src: offsets at the start of a
// line outside every level hclScan follows, each at least size after the
// one before; none where hclScan loses the scanner's state from there on.
func hclPieces(src []byte, size int) []int {
	var cuts []int
	last := 0
	nb := newNestBound()
	nb.cut = func(i int) {
		if i-last >= size && len(src)-i >= size/4 {
			cuts, last = append(cuts, i), i
		}
	}
	hclScan(src, inExpr, nb)
	return cuts
}

// parseHCLPieces parses src in the pieces cuts make and joins their
// bodies; ok is false if a piece did not parse or an argument is set in
// two of them.
func parseHCLPieces(src []byte, filename string, cuts []int) (f *hcl.File, diags hcl.Diagnostics, ok bool) {
	if !utf8.Valid(src) {
		// The lexer can take a newline into a token ("\xe41\n" is one
		// name), and a cut after it would end an item the whole file
		// does not end.
		return nil, nil, false
	}
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, Blocks: hclsyntax.Blocks{}}
	pos := hcl.InitialPos
	start := 0
	for k := 0; k <= len(cuts); k++ {
		end := len(src)
		if k < len(cuts) {
			end = cuts[k]
		}
		if k > 0 && bytes.HasPrefix(src[start:end], utf8BOM) {
			// The lexer drops a byte order mark at the start of what
			// it is given: in the whole file it is invalid here.
			return nil, nil, false
		}
		pf, pdiags := hclsyntax.ParseConfig(src[start:end], filename, pos)
		if pdiags.HasErrors() {
			return nil, nil, false
		}
		diags = append(diags, pdiags...)
		pb := pf.Body.(*hclsyntax.Body)
		for name, a := range pb.Attributes {
			if _, twice := body.Attributes[name]; twice {
				return nil, nil, false
			}
			body.Attributes[name] = a
		}
		body.Blocks = append(body.Blocks, pb.Blocks...)
		if k == 0 {
			body.SrcRange = pb.SrcRange
		}
		body.SrcRange = hcl.RangeBetween(body.SrcRange, pb.SrcRange)
		body.EndRange = pb.EndRange
		// The next piece starts where the lexer stood at this one's end
		// (its end of file), not at a line counted here: the lexer counts
		// lines by grapheme clusters, and a newline inside bytes that are
		// not UTF-8 ("\xea\xea\n") is not one to it.
		pos = pb.EndRange.Start
		if pos.Byte != end {
			return nil, nil, false
		}
		start = end
	}
	return &hcl.File{Body: body, Bytes: src}, diags, true
}
