package dist

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// LiteralValue evaluates an expression of a file airgap reads but did not
// write (a module's .tf files, tfvars files, a lock file, a manifest)
// where only a literal value belongs: without variables or functions. A
// for expression anywhere in it is refused first, with a diagnostic at its
// position: HCL evaluates one over a literal collection even without
// variables, and nested ones multiply, so that a few hundred bytes of
// "[for a in [0,…] : [for b in [0,…] : …]]" stand for a value of
// gigabytes (20 elements six deep: 64 million). Without for expressions a
// literal's value grows linearly with its text, which the readers bound
// (tfconfig.MaxFileSize and the like). Splats only map what is there, and
// templates without a %{for} directive only join it. JSON expressions
// evaluate literally without a context and are passed through.
func LiteralValue(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	if diags := NoForExpr(expr); diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return expr.Value(nil)
}

// NoForExpr returns an error diagnostic at the first for expression (or
// %{for} template directive) in expr, a native-syntax expression or body
// node; other nodes pass. See LiteralValue.
func NoForExpr(expr any) hcl.Diagnostics {
	node, ok := expr.(hclsyntax.Node)
	if !ok {
		return nil
	}
	var found *hcl.Range
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if fe, ok := n.(*hclsyntax.ForExpr); ok && found == nil {
			r := fe.Range()
			found = &r
		}
		return nil
	})
	if found == nil {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "for expression not evaluated",
		Detail:   "airgap reads a literal value here, and a for expression can make a few bytes of text into gigabytes; write the value out",
		Subject:  found,
	}}
}
