package dist

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxHCLNesting bounds how deeply the HCL parser may descend into a
// configuration file of untrusted origin (a module's .tf or .tf.json, a
// project's lock file): real configurations nest a few levels; each level
// costs the parser's recursion some hundreds of bytes of stack.
const MaxHCLNesting = 512

// ErrHCLTooDeep: a configuration nested deeper than MaxHCLNesting.
var ErrHCLTooDeep = errors.New("configuration nested over the depth limit")

// checkHCLNesting refuses native-syntax HCL (or, for a name ending in
// .json, JSON) that would make HCL's parser descend more than
// MaxHCLNesting levels. hashicorp/hcl parses recursively with no bound of
// its own: 4 MiB of '[', of '!', of 'a?a:' or of '"${' in one .tf
// overflowed the Go stack, a fatal error that no recover catches, killing
// export. It counts on the lexer's tokens (a state machine: constant stack)
// what the parser recurses on: brackets, braces, parentheses, quoted and
// heredoc templates and their interpolations, template if/for blocks,
// conditionals chained in one expression, and runs of unary operators.
//
// The lexer allocates every token (about as much as the parse that
// follows, which lexes again), so the depth is first bounded on the bytes
// (HCLNestingBound, in the allocation-free pass that counts the tokens:
// it follows the same scanner states and errs only upwards); only a file
// it cannot follow, or whose bound passes half the limit (no real
// configuration comes near), is lexed and measured exactly.
func checkHCLNesting(src []byte, filename string) error {
	if len(filename) > 5 && filename[len(filename)-5:] == ".json" {
		if err := checkJSONDepth(src, MaxHCLNesting); err != nil {
			return fmt.Errorf("%w of %d", ErrHCLTooDeep, MaxHCLNesting)
		}
		return nil
	}
	if d, ok := HCLNestingBound(src); ok && d <= MaxHCLNesting/2 {
		return nil
	}
	if line, over := lexNesting(src, filename); over {
		return fmt.Errorf("%w of %d (at %s:%d)", ErrHCLTooDeep, MaxHCLNesting, Printable(filename), line)
	}
	return nil
}

// lexNesting measures on the lexer's tokens what checkHCLNesting bounds:
// over, and the line, once the depth passes MaxHCLNesting; else the most
// it reached (maxDepth, for tests).
func lexNesting(src []byte, filename string) (line int, over bool) {
	_, line, over = lexNestingDepth(src, filename)
	return line, over
}

func lexNestingDepth(src []byte, filename string) (maxDepth, line int, over bool) {
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	type level struct {
		open       hclsyntax.TokenType
		conditions int // '?' in the current expression at this level
	}
	stack := []level{{open: hclsyntax.TokenNil}}
	depth, unary, blocks := 0, 0, 0 // levels plus conditions, the current run of unary operators, template if/for blocks
	for i, t := range toks {
		top := &stack[len(stack)-1]
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			stack = append(stack, level{open: t.Type})
			depth++
			if t.Type == hclsyntax.TokenTemplateControl && i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenIdent {
				switch string(toks[i+1].Bytes) {
				case "if", "for":
					blocks++
				case "endif", "endfor":
					blocks--
				}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc,
			hclsyntax.TokenTemplateSeqEnd:
			if len(stack) > 1 {
				depth -= 1 + top.conditions
				stack = stack[:len(stack)-1]
			}
		case hclsyntax.TokenQuestion:
			top.conditions++
			depth++
		case hclsyntax.TokenNewline, hclsyntax.TokenComma:
			// A new item: in a block body or an object, after a newline; in
			// any collection or call, after a comma (in parentheses and
			// brackets newlines do not end an expression).
			if t.Type == hclsyntax.TokenComma || top.open == hclsyntax.TokenNil || top.open == hclsyntax.TokenOBrace {
				depth -= top.conditions
				top.conditions = 0
			}
		}
		if t.Type == hclsyntax.TokenMinus || t.Type == hclsyntax.TokenBang {
			unary++
		} else {
			unary = 0
		}
		v := depth + unary + max(blocks, 0)
		maxDepth = max(maxDepth, v)
		if v > MaxHCLNesting {
			return maxDepth, t.Range.Start.Line, true
		}
	}
	return maxDepth, 0, false
}
