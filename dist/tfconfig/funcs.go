package tfconfig

// The functions const evaluation offers: the pure string, collection,
// number and type-conversion functions of Terraform's language that a
// module source or version could reasonably use, as go-cty implements
// them (Terraform and OpenTofu use the same implementations). Functions
// that read files, ask the clock or make up identifiers are not among
// them. Each call is bounded: its arguments together and its result at
// most MaxValueBytes, its result counted against MaxEvalBytes, and the
// functions whose result can outgrow their arguments (format, indent,
// join, replace) are checked before they run.

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/airgap/airgap/dist"
)

// funcEntry is one function and, for those whose result can be larger
// than their arguments, a check of that size before the call.
type funcEntry struct {
	f   function.Function
	pre func(args []cty.Value) error
	raw bool // try and can: called as they are (their arguments are expressions)
}

const hintFuncs = "airgap evaluates Terraform's string, collection, number and type-conversion functions in module sources (format, join, lower, replace, lookup, try, …); put other values in a variable instead"

// constFuncs are the functions by their names in Terraform's language.
var constFuncs = map[string]funcEntry{
	"abs": {f: stdlib.AbsoluteFunc}, "ceil": {f: stdlib.CeilFunc}, "floor": {f: stdlib.FloorFunc},
	"max": {f: stdlib.MaxFunc}, "min": {f: stdlib.MinFunc}, "signum": {f: stdlib.SignumFunc}, "parseint": {f: stdlib.ParseIntFunc},

	"chomp": {f: stdlib.ChompFunc}, "format": {f: stdlib.FormatFunc, pre: checkFormat},
	"indent": {f: stdlib.IndentFunc, pre: checkIndent}, "join": {f: stdlib.JoinFunc, pre: checkJoin},
	"lower": {f: stdlib.LowerFunc}, "upper": {f: stdlib.UpperFunc}, "title": {f: stdlib.TitleFunc},
	"regex": {f: stdlib.RegexFunc}, "regexall": {f: stdlib.RegexAllFunc},
	"replace": {f: replaceFunc, pre: checkReplace}, "split": {f: stdlib.SplitFunc}, "strrev": {f: stdlib.ReverseFunc},
	"substr": {f: stdlib.SubstrFunc}, "trim": {f: stdlib.TrimFunc}, "trimprefix": {f: stdlib.TrimPrefixFunc},
	"trimsuffix": {f: stdlib.TrimSuffixFunc}, "trimspace": {f: stdlib.TrimSpaceFunc},

	"coalesce": {f: stdlib.CoalesceFunc}, "coalescelist": {f: stdlib.CoalesceListFunc}, "compact": {f: stdlib.CompactFunc},
	"concat": {f: stdlib.ConcatFunc}, "contains": {f: stdlib.ContainsFunc}, "distinct": {f: stdlib.DistinctFunc},
	"element": {f: stdlib.ElementFunc}, "flatten": {f: stdlib.FlattenFunc}, "keys": {f: stdlib.KeysFunc},
	"length": {f: lengthFunc}, "lookup": {f: stdlib.LookupFunc}, "merge": {f: stdlib.MergeFunc},
	"reverse": {f: stdlib.ReverseListFunc}, "slice": {f: stdlib.SliceFunc}, "sort": {f: stdlib.SortFunc},
	"values": {f: stdlib.ValuesFunc}, "zipmap": {f: stdlib.ZipmapFunc},

	"tostring": {f: stdlib.MakeToFunc(cty.String)}, "tonumber": {f: stdlib.MakeToFunc(cty.Number)},
	"tobool": {f: stdlib.MakeToFunc(cty.Bool)}, "tolist": {f: stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType))},
	"toset": {f: stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType))}, "tomap": {f: stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType))},

	"try": {f: tryfunc.TryFunc, raw: true}, "can": {f: tryfunc.CanFunc, raw: true},
}

// laterFuncs have no value until Terraform plans (or ever repeats one).
var laterFuncs = map[string]bool{"timestamp": true, "plantimestamp": true, "uuid": true, "bcrypt": true}

// unknownFunc says why a function is not evaluated.
func unknownFunc(name string, r hcl.Range) string {
	switch {
	case laterFuncs[name]:
		return fmt.Sprintf("%s() is not known until Terraform plans (%s)", dist.Printable(name), posOf(r))
	case strings.Contains(name, "::"):
		return fmt.Sprintf("provider function %s() is not known at init (%s)", dist.Printable(name), posOf(r))
	}
	return fmt.Sprintf("%s() is not one of the functions airgap evaluates in module sources (%s)", dist.Printable(name), posOf(r))
}

// functions are constFuncs bound to ev's budget.
func (ev *evaluator) functions() map[string]function.Function {
	out := make(map[string]function.Function, len(constFuncs))
	for name, e := range constFuncs {
		if e.raw {
			out[name] = e.f
			continue
		}
		out[name] = ev.bounded(e)
	}
	return out
}

// bounded wraps a function in the limits: no call after MaxEvalTime,
// arguments together and result at most MaxValueBytes, the result counted
// against MaxEvalBytes, and e.pre before the call.
func (ev *evaluator) bounded(e funcEntry) function.Function {
	f := e.f
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        func(args []cty.Value) (cty.Type, error) { return f.ReturnTypeForValues(args) },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if err := ev.inTime(); err != nil {
				return cty.NilVal, err
			}
			var in int64
			for _, a := range args {
				in += valueSize(a, 0)
			}
			if in > MaxValueBytes {
				return cty.NilVal, fmt.Errorf("its arguments are larger than %d bytes together", MaxValueBytes)
			}
			if e.pre != nil {
				if err := e.pre(args); err != nil {
					return cty.NilVal, err
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return cty.NilVal, err
			}
			return v, ev.spend(v)
		},
	})
}

// tooLarge is the error of a call whose result would exceed MaxValueBytes.
func tooLarge(n int64) error {
	return fmt.Errorf("its result would be %d bytes, more than %d", n, MaxValueBytes)
}

// checkFormat bounds format's padding: widths and precisions given in the
// format string add up to at most MaxValueBytes, and none comes from an
// argument ("*").
func checkFormat(args []cty.Value) error {
	if len(args) == 0 || !args[0].IsKnown() || args[0].IsNull() || args[0].Type() != cty.String {
		return nil
	}
	f := args[0].AsString()
	var total int64
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		for i < len(f) && strings.IndexByte("-+# 0", f[i]) >= 0 {
			i++
		}
		if i < len(f) && f[i] == '[' {
			for i < len(f) && f[i] != ']' {
				i++
			}
			i++
		}
		for part := 0; part < 2 && i < len(f); part++ {
			if f[i] == '*' {
				return fmt.Errorf("a width or precision from an argument (*) is not evaluated")
			}
			n := int64(0)
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				if n = n*10 + int64(f[i]-'0'); n > MaxValueBytes {
					return tooLarge(n)
				}
				i++
			}
			if total += n; total > MaxValueBytes {
				return tooLarge(total)
			}
			if part == 0 && i < len(f) && f[i] == '.' {
				i++
				continue
			}
			break
		}
	}
	return nil
}

// checkIndent bounds indent(spaces, str): one line of spaces per line.
func checkIndent(args []cty.Value) error {
	if len(args) != 2 || !args[0].IsKnown() || args[0].IsNull() || !args[1].IsKnown() || args[1].IsNull() {
		return nil
	}
	n, _ := args[0].AsBigFloat().Int64()
	if n < 0 || n > MaxValueBytes {
		return tooLarge(n)
	}
	str := args[1].AsString()
	if total := int64(len(str)) + int64(strings.Count(str, "\n"))*n; total > MaxValueBytes {
		return tooLarge(total)
	}
	return nil
}

// checkJoin bounds join(sep, lists...): the elements and a separator
// between each two.
func checkJoin(args []cty.Value) error {
	if len(args) < 1 || !args[0].IsKnown() || args[0].IsNull() {
		return nil
	}
	sep := int64(len(args[0].AsString()))
	var total int64
	for _, l := range args[1:] {
		if !l.IsKnown() || l.IsNull() || !l.CanIterateElements() {
			continue
		}
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if total += sep + valueSize(e, 0); total > MaxValueBytes {
				return tooLarge(total)
			}
		}
	}
	return nil
}

// replaceFunc is Terraform's replace: a search string between slashes is
// a regular expression (funcs.ReplaceFunc), otherwise plain text.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if pattern, ok := replaceRegexp(args[1].AsString()); ok {
			return stdlib.RegexReplace(args[0], cty.StringVal(pattern), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})

func replaceRegexp(sub string) (string, bool) {
	if len(sub) > 1 && sub[0] == '/' && sub[len(sub)-1] == '/' {
		return sub[1 : len(sub)-1], true
	}
	return "", false
}

// checkReplace bounds replace(str, substr, replace): the text plus one
// replacement per match (an empty search string matches between every two
// characters; a regular expression's replacement may copy up to the whole
// text into each match with $1…).
func checkReplace(args []cty.Value) error {
	for _, a := range args {
		if !a.IsKnown() || a.IsNull() {
			return nil
		}
	}
	str, sub, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
	var matches int64
	if pattern, ok := replaceRegexp(sub); ok {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil // replace reports it
		}
		matches = int64(len(re.FindAllStringIndex(str, -1)))
		if strings.Contains(repl, "$") {
			if total := int64(len(str)) + matches*int64(len(repl))*int64(len(str)+1); total > MaxValueBytes {
				return tooLarge(total)
			}
		}
	} else if sub == "" {
		matches = int64(utf8.RuneCountInString(str)) + 1
	} else {
		matches = int64(strings.Count(str, sub))
	}
	if total := int64(len(str)) + matches*int64(len(repl)); total > MaxValueBytes {
		return tooLarge(total)
	}
	return nil
}

// lengthFunc is Terraform's length: characters of a string, elements of a
// collection.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.Strlen(args[0])
		}
		return stdlib.Length(args[0])
	},
})
