package tfconfig

// The root module's variable values, from where 'terraform init' takes
// them.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/airgap/airgap/dist"
)

// Inputs are the values given for the root module's variables, as
// 'terraform init' takes them (the project's terraform.tfvars and
// *.auto.tfvars files are read too).
type Inputs struct {
	// Vars are --var NAME=VALUE and --var-file FILE arguments, in
	// command-line order: a later one wins.
	Vars []VarArg
	// Env is the environment (os.Environ()), for TF_VAR_NAME.
	Env []string
}

// VarArg is one --var (Name and Value) or --var-file (File).
type VarArg struct {
	Name, Value string
	File        string
}

// ParseVarArg reads the argument of --var: NAME=VALUE.
func ParseVarArg(s string) (VarArg, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !hclsyntax.ValidIdentifier(name) {
		return VarArg{}, fmt.Errorf("--var %q: want NAME=VALUE, NAME a variable name (as terraform's -var)", dist.Printable(s))
	}
	return VarArg{Name: name, Value: value}, nil
}

// rootInput is the value given for the root variable name, if any: of
// TF_VAR_ variables, terraform.tfvars, terraform.tfvars.json, the
// *.auto.tfvars and *.auto.tfvars.json files (in lexical order) and --var
// and --var-file (in command-line order), the last that sets it wins —
// Terraform's order of precedence.
func (ev *evaluator) rootInput(name string) (rawValue, bool, error) {
	if !ev.loaded {
		ev.loaded = true
		ev.inputs, ev.inErr = ev.loadInputs()
	}
	if ev.inErr != nil {
		return rawValue{}, false, ev.inErr
	}
	r, ok := ev.inputs[name]
	return r, ok, nil
}

func (ev *evaluator) loadInputs() (map[string]rawValue, error) {
	m := map[string]rawValue{}
	for _, kv := range ev.in.Env {
		k, v, _ := strings.Cut(kv, "=")
		if name, ok := strings.CutPrefix(k, "TF_VAR_"); ok && name != "" {
			m[name] = rawValue{text: v, isStr: true, from: "TF_VAR_" + dist.Printable(name)}
		}
	}
	files, err := ev.t.varFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		src, err := ev.t.readFile(f)
		if err != nil {
			return nil, err
		}
		if err := parseVarFile(src, ev.t.path(f), m); err != nil {
			return nil, err
		}
	}
	for _, a := range ev.in.Vars {
		if a.File == "" {
			m[a.Name] = rawValue{text: a.Value, isStr: true, from: "--var " + dist.Printable(a.Name)}
			continue
		}
		src, err := readVarFile(a.File)
		if err != nil {
			return nil, err
		}
		if err := parseVarFile(src, dist.Printable(a.File), m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// varFiles are the project's variable files 'terraform init' reads, in
// the order it applies them.
func (t *tree) varFiles() ([]string, error) {
	d, err := t.root.Open(".")
	if err != nil {
		return nil, t.fail(".", err)
	}
	defer d.Close()
	ents, err := d.ReadDir(MaxFilesPerDir + 1)
	if err != nil && err != io.EOF {
		return nil, t.fail(".", err)
	}
	var fixed, auto []string
	for _, e := range ents {
		n := e.Name()
		switch {
		case e.IsDir():
		case n == "terraform.tfvars", n == "terraform.tfvars.json":
			fixed = append(fixed, n)
		case strings.HasSuffix(n, ".auto.tfvars"), strings.HasSuffix(n, ".auto.tfvars.json"):
			auto = append(auto, n)
		}
	}
	sort.Strings(fixed) // terraform.tfvars before terraform.tfvars.json
	sort.Strings(auto)
	return append(fixed, auto...), nil
}

// readVarFile reads a --var-file (at most MaxFileSize bytes).
func readVarFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--var-file %s: no such file", dist.Printable(path))
		}
		return nil, fmt.Errorf("--var-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("--var-file %s: %w", dist.Printable(path), err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("--var-file %s: %w: larger than %d bytes", dist.Printable(path), ErrTooLarge, MaxFileSize)
	}
	return b, nil
}

// parseVarFile reads a .tfvars (HCL) or .tfvars.json file into m: each
// attribute a variable, each value a literal.
func parseVarFile(src []byte, filename string, m map[string]rawValue) error {
	f, release, _, err := parseFile(src, filename, false)
	if err != nil {
		return err
	}
	defer release()
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		return diagErr(diags, filename)
	}
	for name, a := range attrs {
		if diags := dist.NoForExpr(a.Expr); diags.HasErrors() {
			// Not evaluated (dist.LiteralValue); an error only if a module
			// source or version needs this variable.
			m[name] = rawValue{refused: at(a.Expr.Range(), "variable %q: %s", name, diagText(diags)), from: filename}
			continue
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return at(a.Expr.Range(), "variable %q: a variables file holds literal values only: %s", name, diagText(diags))
		}
		m[name] = rawValue{val: v, from: filename}
	}
	return nil
}
