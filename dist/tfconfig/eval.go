package tfconfig

// Const evaluation of module sources and versions, as 'terraform init'
// (1.15+: literals and variables declared const = true, and locals built
// from them) and 'tofu init' (1.8+, "early evaluation": variables and
// locals) do it. It uses HCL's own evaluation (hcl.EvalContext with cty
// values and a fixed set of cty functions); what it adds is the scope —
// which variables, locals and path values exist for one module instance
// and where their values come from — and bounds, because the expressions
// come from the project and the local modules in it.

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/airgap/airgap/dist"
)

// Limits on const evaluation. A module source or version is a short
// string; these bound what a hostile or broken configuration can make
// airgap compute on the way there. Worst case for one LoadProject: every
// value at most MaxValueBytes, all function results and evaluated values
// together at most MaxEvalBytes, references nested at most MaxEvalDepth,
// and MaxEvalTime of evaluation plus the one function call under way
// (about 2 s at worst: a regular expression of a few hundred states over
// 64 KiB).
const (
	// MaxValueBytes: the size of any one value evaluated — a variable's, a
	// local's, a function's arguments together or its result — counting
	// string bytes plus 8 for each number, bool, element and key.
	MaxValueBytes = 64 << 10
	// MaxEvalBytes: everything one LoadProject evaluates, together.
	MaxEvalBytes = 4 << 20
	// MaxEvalDepth: references nested in references (a local using a
	// local using a variable a caller passes in…).
	MaxEvalDepth = 64
	// maxNumber: the largest magnitude of a number (literal, input or
	// result); arithmetic is not evaluated at all, so nothing grows past it.
	maxNumber = 1 << 53
	// MaxEvalTime: the time one LoadProject may spend evaluating. The byte
	// limits do not bound time: a function whose result is small can cost
	// much (length(regexall("(?:[ab]*a){1000}c", local.s)) takes 0.6 s
	// over 30 KB and returns one number), and a project can have as many
	// locals calling it as its files hold. Real projects take
	// milliseconds.
	MaxEvalTime = 10 * time.Second
)

// evalTime is MaxEvalTime (tests shorten it).
var evalTime = MaxEvalTime

// evaluator is the state one LoadProject shares across module instances.
type evaluator struct {
	t      *tree
	in     Inputs
	inputs map[string]rawValue // the root module's, once loaded
	inErr  error
	loaded bool
	spent  int64
	depth  int
	notes  []string
	noted  map[string]bool
	funcs  map[string]funcEntry         // what checkSyntax allows: constFuncs
	fns    map[string]function.Function // constFuncs bound to this evaluator's budget
	// deadline ends evaluation (evalTime after the first expression).
	deadline time.Time
}

// inTime returns an error once the evaluation has taken more than
// evalTime.
func (ev *evaluator) inTime() error {
	now := time.Now()
	if ev.deadline.IsZero() {
		ev.deadline = now.Add(evalTime)
	}
	if now.After(ev.deadline) {
		return notKnown("", "evaluating the module sources and versions took more than %s (a project's take milliseconds)", evalTime)
	}
	return nil
}

// scope is one module instance: its declarations, where its variables'
// values come from, and what has been evaluated in it.
type scope struct {
	ev     *evaluator
	cfg    *Config
	dir    string      // path.module: the module's directory relative to the root ("." for it)
	call   *ModuleCall // the call that made this instance (nil for the root)
	parent *scope      // the caller's scope
	vars   map[string]cty.Value
	locals map[string]cty.Value
	busy   map[string]bool
}

func (ev *evaluator) newScope(cfg *Config, dir string, call *ModuleCall, parent *scope) *scope {
	return &scope{ev: ev, cfg: cfg, dir: dir, call: call, parent: parent,
		vars: map[string]cty.Value{}, locals: map[string]cty.Value{}, busy: map[string]bool{}}
}

// localError is an error in evaluating a local: where, and why.
type localError struct {
	where string
	err   error
}

func (e *localError) Error() string { return e.where + ": " + e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// evalError is why an expression is not known at init; msg names the
// reference or function at fault, hint what to do.
type evalError struct {
	msg, hint string
}

func (e *evalError) Error() string { return e.msg }

func notKnown(hint, format string, a ...any) error {
	return &evalError{msg: fmt.Sprintf(format, a...), hint: hint}
}

const (
	hintRefs   = "a module source or version may use literals, variables (declared const = true for Terraform ≥ 1.15), locals, path.module and path.root: what 'terraform init' knows before anything is planned"
	hintValues = "give the variable a value as for terraform init: --var NAME=VALUE, --var-file FILE, TF_VAR_NAME, terraform.tfvars or *.auto.tfvars, or a default"
)

// posOf is a position for messages: file:line.
func posOf(r hcl.Range) string {
	return fmt.Sprintf("%s:%d", dist.Printable(r.Filename), r.Start.Line)
}

// resolve evaluates the source and version of m (when they are not
// literals) in s, setting m.Source and m.Version. Errors name the module
// call, the argument as written and why it is not known at init.
func (s *scope) resolve(m *ModuleCall) error {
	for _, a := range []struct {
		what string
		expr hcl.Expression
		text string
		out  *string
	}{{"source", m.source, m.SourceExpr, &m.Source}, {"version", m.version, m.VersionExpr, &m.Version}} {
		if a.expr == nil {
			continue
		}
		v, err := s.evalString(a.expr)
		if err != nil {
			r := a.expr.Range()
			hint := hintRefs
			var ee *evalError
			if errors.As(err, &ee) && ee.hint != "" {
				hint = ee.hint
			}
			return fmt.Errorf("%s:%d:%d: module %q: %s = %s: %w: %s\nhint: %s", dist.Printable(r.Filename), r.Start.Line, r.Start.Column,
				dist.Printable(m.Name), a.what, a.text, ErrNotConst, dist.Printable(err.Error()), hint)
		}
		*a.out = v
	}
	return nil
}

// evalString evaluates expr to a known, non-null string.
func (s *scope) evalString(expr hcl.Expression) (string, error) {
	v, err := s.eval(expr)
	if err != nil {
		return "", err
	}
	switch {
	case !v.IsWhollyKnown():
		return "", notKnown("", "its value is not known until Terraform plans")
	case v.IsNull():
		return "", notKnown("", "it is null")
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", notKnown("", "it is %s, not a string", v.Type().FriendlyName())
	}
	return sv.AsString(), nil
}

// eval evaluates expr in s with HCL: only the variables, locals and path
// values it refers to are in its context, each evaluated first.
func (s *scope) eval(expr hcl.Expression) (cty.Value, error) {
	ev := s.ev
	if ev.depth++; ev.depth > MaxEvalDepth {
		ev.depth--
		return cty.NilVal, notKnown("", "references nest more than %d deep", MaxEvalDepth)
	}
	defer func() { ev.depth-- }()
	if err := ev.inTime(); err != nil {
		return cty.NilVal, err
	}
	if err := checkSyntax(expr, ev.funcs); err != nil {
		return cty.NilVal, err
	}
	ctx, refBytes, err := s.context(expr)
	if err != nil {
		return cty.NilVal, err
	}
	if refBytes > MaxValueBytes {
		return cty.NilVal, notKnown("", "the values it refers to are larger than %d bytes together", MaxValueBytes)
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, notKnown("", "%s", diagText(diags))
	}
	return v, ev.spend(v)
}

// spend counts v against MaxValueBytes and MaxEvalBytes.
func (ev *evaluator) spend(v cty.Value) error {
	n := valueSize(v, 0)
	if n > MaxValueBytes {
		return notKnown("", "a value is larger than %d bytes", MaxValueBytes)
	}
	if ev.spent += n; ev.spent > MaxEvalBytes {
		return notKnown("", "evaluating the module sources and versions took more than %d bytes", MaxEvalBytes)
	}
	return nil
}

// diagText is the first error of diags, "file:line:col: summary: detail".
func diagText(diags hcl.Diagnostics) string {
	if lines := dist.DiagLines(diags); len(lines) > 0 {
		return lines[0]
	}
	return "invalid expression"
}

// context is the evaluation context of expr: var, local and path objects
// holding what it refers to. refBytes is the size of every reference's
// value, counted once per occurrence (what a template that repeats it
// would copy).
func (s *scope) context(expr hcl.Expression) (*hcl.EvalContext, int64, error) {
	vars, locals, paths := map[string]cty.Value{}, map[string]cty.Value{}, map[string]cty.Value{}
	var refBytes int64
	for _, tr := range expr.Variables() {
		root, rng := tr.RootName(), tr.SourceRange()
		name := ""
		if len(tr) > 1 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				name = a.Name
			}
		}
		var v cty.Value
		var err error
		switch {
		case root == "var" && name != "":
			v, err = s.variable(name, rng)
			vars[name] = v
		case root == "local" && name != "":
			v, err = s.local(name, rng)
			locals[name] = v
		case root == "path" && (name == "module" || name == "root"):
			v = cty.StringVal(".")
			if name == "module" {
				v = cty.StringVal(s.dir)
			}
			paths[name] = v
		case root == "path":
			err = notKnown("", "path.%s depends on where the client runs (%s)", dist.Printable(name), posOf(rng))
		case root == "terraform":
			err = notKnown("", "terraform.%s is not evaluated in module sources (Terraform ≥ 1.15 refuses it) (%s)", dist.Printable(name), posOf(rng))
		default:
			err = notKnown("", "%s is known only when Terraform plans (%s)", dist.Printable(traversalText(tr)), posOf(rng))
		}
		if err != nil {
			return nil, 0, err
		}
		refBytes += valueSize(v, 0)
	}
	if s.ev.fns == nil {
		s.ev.fns = s.ev.functions()
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: s.ev.fns}
	for k, m := range map[string]map[string]cty.Value{"var": vars, "local": locals, "path": paths} {
		if len(m) > 0 {
			ctx.Variables[k] = cty.ObjectVal(m)
		}
	}
	return ctx, refBytes, nil
}

// traversalText is a reference as written (root and attributes).
func traversalText(tr hcl.Traversal) string {
	var b strings.Builder
	b.WriteString(tr.RootName())
	for _, step := range tr[1:] {
		a, ok := step.(hcl.TraverseAttr)
		if !ok {
			break
		}
		b.WriteString("." + a.Name)
	}
	return b.String()
}

// local evaluates local.name in s (once; a cycle is an error).
func (s *scope) local(name string, rng hcl.Range) (cty.Value, error) {
	if v, ok := s.locals[name]; ok {
		return v, nil
	}
	l, ok := s.cfg.locals[name]
	switch {
	case !ok:
		return cty.NilVal, notKnown("", "local.%s is not declared (%s)", dist.Printable(name), posOf(rng))
	case l.twice:
		return cty.NilVal, notKnown("", "local.%s is declared twice (%s)", dist.Printable(name), posOf(l.rng))
	case s.busy["local."+name]:
		return cty.NilVal, notKnown("", "local.%s refers to itself (%s)", dist.Printable(name), posOf(l.rng))
	}
	s.busy["local."+name] = true
	defer delete(s.busy, "local."+name)
	v, err := s.eval(l.expr)
	if err != nil {
		var le *localError
		if errors.As(err, &le) {
			return cty.NilVal, err // the innermost local says it best
		}
		return cty.NilVal, &localError{fmt.Sprintf("local.%s (%s)", dist.Printable(name), posOf(l.rng)), err}
	}
	s.locals[name] = v
	return v, nil
}

// variable evaluates var.name in s: its value from the caller (the root's
// from --var, --var-file, tfvars files and TF_VAR_), else its default,
// converted to its type.
func (s *scope) variable(name string, rng hcl.Range) (cty.Value, error) {
	if v, ok := s.vars[name]; ok {
		return v, nil
	}
	d, ok := s.cfg.vars[name]
	switch {
	case !ok:
		return cty.NilVal, notKnown("", "var.%s is not declared in this module (%s)", dist.Printable(name), posOf(rng))
	case d.twice:
		return cty.NilVal, notKnown("", "variable %q is declared twice (%s)", dist.Printable(name), posOf(d.rng))
	case d.constBad:
		return cty.NilVal, notKnown("", "variable %q: const must be true or false (%s)", dist.Printable(name), posOf(d.rng))
	case d.constSet && !d.constTrue:
		return cty.NilVal, notKnown("", "var.%s is declared const = false (%s)", dist.Printable(name), posOf(d.rng))
	case d.sensitive:
		return cty.NilVal, notKnown("", "var.%s is sensitive, and a module source cannot come from a sensitive value (%s)", dist.Printable(name), posOf(d.rng))
	case !d.constTrue:
		s.ev.note(fmt.Sprintf("%s: var.%s is used in a module source or version but not declared const = true: OpenTofu evaluates it, Terraform ≥ 1.15 refuses it (\"Only literal values and const variables can be evaluated during init\")", posOf(d.rng), dist.Printable(name)))
	}
	ty, hclMode, err := d.typeConstraint()
	if err != nil {
		return cty.NilVal, err
	}
	v, found, err := s.input(name, hclMode)
	if err != nil {
		return cty.NilVal, fmt.Errorf("var.%s: %w", dist.Printable(name), err)
	}
	if !found || v.IsNull() && d.def != nil {
		if d.def == nil && s.call != nil {
			return cty.NilVal, notKnown(fmt.Sprintf("pass %s = … in the module block that calls this module (%s)", dist.Printable(name), posOf(s.call.rng)),
				"var.%s has no value: module %q does not pass it and it has no default (%s)", dist.Printable(name), dist.Printable(s.call.Name), posOf(d.rng))
		}
		if d.def == nil {
			return cty.NilVal, notKnown(hintValues, "var.%s has no value: it is not set and has no default (%s)", dist.Printable(name), posOf(d.rng))
		}
		var diags hcl.Diagnostics
		if v, diags = dist.LiteralValue(d.def); diags.HasErrors() {
			return cty.NilVal, notKnown("", "variable %q: its default is not a literal value: %s", dist.Printable(name), diagText(diags))
		}
	}
	tooBig := func(v cty.Value) error {
		if valueSize(v, 0) > MaxValueBytes {
			return notKnown("", "var.%s is larger than %d bytes (or holds a number past ±2^53)", dist.Printable(name), MaxValueBytes)
		}
		return nil
	}
	if err := tooBig(v); err != nil {
		return cty.NilVal, err
	}
	if v, err = convert.Convert(v, ty); err != nil {
		return cty.NilVal, notKnown("", "var.%s: the value does not fit its type %s: %v", dist.Printable(name), ty.FriendlyName(), err)
	}
	if err := tooBig(v); err != nil { // "1e99999" becomes a number only now
		return cty.NilVal, err
	}
	s.vars[name] = v
	return v, nil
}

// typeConstraint is the variable's type (any when it has none) and whether
// text values (--var, TF_VAR_) parse as HCL (complex types) or are taken
// literally (primitive types and no type), as Terraform does.
func (d *variable) typeConstraint() (cty.Type, bool, error) {
	if d.typ == nil {
		return cty.DynamicPseudoType, false, nil
	}
	switch hcl.ExprAsKeyword(d.typ) {
	case "list":
		return cty.List(cty.DynamicPseudoType), true, nil
	case "map":
		return cty.Map(cty.DynamicPseudoType), true, nil
	}
	ty, diags := typeexpr.TypeConstraint(d.typ)
	if diags.HasErrors() {
		return cty.NilType, false, notKnown("", "variable %q: its type cannot be read: %s", dist.Printable(d.name), diagText(diags))
	}
	return ty, !ty.IsPrimitiveType(), nil
}

// input is the value the caller gives variable name: for the root, from
// the command line, tfvars files and the environment; for a module, the
// argument of its module block, evaluated in the caller's scope.
func (s *scope) input(name string, hclMode bool) (cty.Value, bool, error) {
	if s.call == nil {
		raw, ok, err := s.ev.rootInput(name)
		if err != nil || !ok {
			return cty.NilVal, false, err
		}
		v, err := raw.value(name, hclMode)
		return v, true, err
	}
	e, ok := s.call.args[name]
	if !ok {
		return cty.NilVal, false, nil
	}
	v, err := s.parent.eval(e)
	if err != nil {
		return cty.NilVal, false, fmt.Errorf("the argument module %q passes (%s): %w", dist.Printable(s.call.Name), posOf(e.Range()), err)
	}
	return v, true, nil
}

// note records a message once.
func (ev *evaluator) note(msg string) {
	if ev.noted == nil {
		ev.noted = map[string]bool{}
	}
	if !ev.noted[msg] {
		ev.noted[msg] = true
		ev.notes = append(ev.notes, msg)
	}
}

// arithmetic are the operators const evaluation refuses: nothing a module
// source needs, and the way numbers (and their text) could grow without
// bound.
var arithmetic = map[*hclsyntax.Operation]bool{hclsyntax.OpAdd: true, hclsyntax.OpSubtract: true,
	hclsyntax.OpMultiply: true, hclsyntax.OpDivide: true, hclsyntax.OpModulo: true}

// checkSyntax refuses what const evaluation does not do, before anything
// is evaluated: for expressions and splats (the ways a short expression
// makes a long value), arithmetic, numbers past ±2^53, functions outside
// the set, and JSON expressions that are not strings and refer to
// anything (see jsonTemplate).
func checkSyntax(expr hcl.Expression, funcs map[string]funcEntry) error {
	node, ok := expr.(hclsyntax.Node)
	if !ok {
		if len(expr.Variables()) > 0 {
			return notKnown("", "in .tf.json only strings are evaluated in module sources and the values they use (%s)", posOf(expr.Range()))
		}
		return nil
	}
	var err error
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if err != nil {
			return nil
		}
		switch e := n.(type) {
		case *hclsyntax.ForExpr, *hclsyntax.SplatExpr:
			err = notKnown("", "for expressions and splats are not evaluated in module sources (%s)", posOf(e.Range()))
		case *hclsyntax.BinaryOpExpr:
			if arithmetic[e.Op] {
				err = notKnown("", "arithmetic is not evaluated in module sources (%s)", posOf(e.Range()))
			}
		case *hclsyntax.LiteralValueExpr:
			if e.Val.Type() == cty.Number && valueSize(e.Val, 0) > MaxValueBytes {
				err = notKnown("", "a number past ±2^53 (%s)", posOf(e.Range()))
			}
		case *hclsyntax.FunctionCallExpr:
			if _, ok := funcs[e.Name]; !ok {
				err = notKnown(hintFuncs, "%s", unknownFunc(e.Name, e.NameRange))
			}
		}
		return nil
	})
	return err
}

// valueSize is v's size for the limits: string bytes plus 8 for each
// number, bool, element and key; a number past ±2^53, or nesting deeper
// than 32, counts as larger than MaxValueBytes.
func valueSize(v cty.Value, depth int) int64 {
	if depth > 32 {
		return MaxValueBytes + 1
	}
	if !v.IsKnown() || v.IsNull() {
		return 8
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return int64(len(v.AsString())) + 8
	case ty == cty.Number:
		if f := v.AsBigFloat(); f.IsInf() || new(big.Float).Abs(f).Cmp(big.NewFloat(maxNumber)) > 0 {
			return MaxValueBytes + 1
		}
		return 8
	case ty.IsListType(), ty.IsSetType(), ty.IsTupleType(), ty.IsMapType(), ty.IsObjectType():
		n := int64(8)
		for it := v.ElementIterator(); it.Next() && n <= MaxValueBytes; {
			k, e := it.Element()
			n += valueSize(k, depth+1) + valueSize(e, depth+1)
		}
		return n
	}
	return 8
}

// rawValue is a root variable's value as given: a value (tfvars files)
// or text (--var, TF_VAR_) parsed according to the variable's type.
type rawValue struct {
	val   cty.Value
	text  string
	isStr bool
	from  string // where it was given, for messages
	// refused: why a variables file's value was not evaluated (a for
	// expression: see dist.LiteralValue).
	refused error
}

// value is the cty value of r for variable name: text is taken literally
// for primitive types and parsed as an HCL literal for the others, as
// Terraform does (VariableParsingMode).
func (r rawValue) value(name string, hclMode bool) (cty.Value, error) {
	if r.refused != nil {
		return cty.NilVal, r.refused
	}
	if !r.isStr {
		return r.val, nil
	}
	if !hclMode {
		return cty.StringVal(r.text), nil
	}
	release, err := dist.AdmitHCL([]byte(r.text), "<value for var."+name+">")
	if err != nil {
		return cty.NilVal, fmt.Errorf("the value from %s: %w", r.from, err)
	}
	defer release()
	e, diags := hclsyntax.ParseExpression([]byte(r.text), "<value for var."+name+">", hcl.InitialPos)
	if !diags.HasErrors() {
		if err := checkSyntax(e, nil); err != nil {
			return cty.NilVal, err
		}
		var v cty.Value
		if v, diags = e.Value(nil); !diags.HasErrors() {
			return v, nil
		}
	}
	return cty.NilVal, notKnown("", "the value from %s is not an HCL literal: %s", r.from, diagText(diags))
}

// canonical is a value's JSON text with its type (for the keys of module
// instances).
func canonical(v cty.Value) string {
	b, err := ctyjson.Marshal(v, cty.DynamicPseudoType)
	if err != nil {
		return v.GoString()
	}
	return string(b)
}

// instanceKey is what tells two instances of one module directory apart:
// the values of the variables its module sources and versions use
// (through its locals), in name order. Instances with the same key
// resolve every call the same way, so each is walked once.
func (s *scope) instanceKey() (string, error) {
	names := map[string]bool{}
	seen := map[string]bool{}
	var refs func(e hcl.Expression, depth int)
	refs = func(e hcl.Expression, depth int) {
		if e == nil || depth > MaxEvalDepth {
			return
		}
		for _, tr := range e.Variables() {
			if len(tr) < 2 {
				continue
			}
			a, ok := tr[1].(hcl.TraverseAttr)
			if !ok {
				continue
			}
			switch tr.RootName() {
			case "var":
				names[a.Name] = true
			case "local":
				if l := s.cfg.locals[a.Name]; l != nil && !seen[a.Name] {
					seen[a.Name] = true
					refs(l.expr, depth+1)
				}
			}
		}
	}
	for _, m := range s.cfg.Modules {
		refs(m.source, 0)
		refs(m.version, 0)
	}
	if len(names) == 0 {
		return "", nil
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for _, n := range sorted {
		if _, declared := s.cfg.vars[n]; !declared {
			continue // resolve reports it
		}
		v, err := s.variable(n, s.cfg.vars[n].rng)
		if err != nil {
			// resolve reports it, at the module call that needs it: this
			// instance must not pass for another one.
			return fmt.Sprintf("unresolved %p", s), nil
		}
		b.WriteString(n + "=" + canonical(v) + "\n")
	}
	return b.String(), nil
}
