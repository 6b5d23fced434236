package tfconfig

import (
	"errors"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// calls is "name source version" of each module call, sorted.
func calls(cfg *Config) []string {
	var out []string
	for _, m := range cfg.Modules {
		out = append(out, strings.TrimSpace(m.Name+" "+m.Source+" "+m.Version))
	}
	sort.Strings(out)
	return out
}

func loadProject(t *testing.T, files map[string]string, in Inputs) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, files)
	return LoadProject(dir, in)
}

// What terraform 1.15.9 does with const variables and locals in module
// sources and versions (checked against the binary), and what OpenTofu's
// early evaluation adds (variables not declared const).
func TestConstModuleSources(t *testing.T) {
	const vars = `variable "env" {
  type    = string
  const   = true
  default = "dev"
}
variable "vpc_version" {
  const   = true
  default = "~> 5.8"
}
locals {
  tag  = format("v%s", "1.2.0")
  base = "git::https://example.com/${lower("NET")}.git"
  pick = { dev = "./modules/dev", prod = "./modules/prod" }[var.env]
}
`
	files := map[string]string{
		"variables.tf": vars,
		"main.tf": `module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = var.vpc_version
}
module "net" {
  source = "${local.base}?ref=${local.tag}"
}
module "app" {
  source = local.pick
}
`,
		"modules/dev/main.tf":  "module \"leaf\" {\n  source = \"example/dev/aws\"\n}\n",
		"modules/prod/main.tf": "module \"leaf\" {\n  source = \"example/prod/aws\"\n}\n",
	}
	cfg, err := loadProject(t, files, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	want := "leaf example/dev/aws|net git::https://example.com/net.git?ref=v1.2.0|vpc terraform-aws-modules/vpc/aws ~> 5.8"
	if got := strings.Join(calls(cfg), "|"); got != want {
		t.Errorf("defaults:\n got %s\nwant %s", got, want)
	}
	for _, m := range cfg.Modules {
		if m.Name == "vpc" && m.VersionExpr != "var.vpc_version" {
			t.Errorf("VersionExpr %q", m.VersionExpr)
		}
	}
	if len(cfg.Notes) != 0 {
		t.Errorf("notes for const variables: %v", cfg.Notes)
	}

	// Terraform's precedence: TF_VAR_ < terraform.tfvars < terraform.tfvars.json
	// < *.auto.tfvars (lexical) < --var / --var-file in command-line order.
	for name, tc := range map[string]struct {
		files map[string]string
		in    Inputs
		want  string
	}{
		"TF_VAR_":           {in: Inputs{Env: []string{"TF_VAR_env=prod"}}, want: "prod"},
		"terraform.tfvars":  {files: map[string]string{"terraform.tfvars": "env = \"prod\"\n"}, in: Inputs{Env: []string{"TF_VAR_env=dev"}}, want: "prod"},
		"tfvars.json wins":  {files: map[string]string{"terraform.tfvars": "env = \"dev\"\n", "terraform.tfvars.json": `{"env": "prod"}`}, want: "prod"},
		"auto after fixed":  {files: map[string]string{"terraform.tfvars.json": `{"env": "dev"}`, "a.auto.tfvars": "env = \"prod\"\n"}, want: "prod"},
		"auto lexical":      {files: map[string]string{"a.auto.tfvars": "env = \"dev\"\n", "b.auto.tfvars.json": `{"env": "prod"}`}, want: "prod"},
		"--var over files":  {files: map[string]string{"z.auto.tfvars": "env = \"dev\"\n"}, in: Inputs{Vars: []VarArg{{Name: "env", Value: "prod"}}}, want: "prod"},
		"last flag wins":    {files: map[string]string{"f.tfvars": "env = \"dev\"\n"}, in: Inputs{Vars: []VarArg{{Name: "env", Value: "prod"}, {File: "f.tfvars"}}}, want: "dev"},
		"var-file then var": {files: map[string]string{"f.tfvars": "env = \"dev\"\n"}, in: Inputs{Vars: []VarArg{{File: "f.tfvars"}, {Name: "env", Value: "prod"}}}, want: "prod"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, files)
			write(t, dir, tc.files)
			for i, a := range tc.in.Vars {
				if a.File != "" {
					tc.in.Vars[i].File = filepath.Join(dir, a.File)
				}
			}
			cfg, err := LoadProject(dir, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(calls(cfg), "|"); !strings.Contains(got, "leaf example/"+tc.want+"/aws") {
				t.Errorf("got %s, want env=%s", got, tc.want)
			}
		})
	}
}

// A local module's const variables take the values its caller passes (in
// the caller's scope); one directory called with two values gives two
// sources, called twice with the same values it is read once.
func TestConstModuleArguments(t *testing.T) {
	cfg, err := loadProject(t, map[string]string{
		"main.tf": `variable "region" {
  const   = true
  default = "eu"
}
module "a" {
  source = "./wrap"
  flavour = "small"
  region  = var.region
}
module "b" {
  source  = "./wrap"
  flavour = upper("large")
  region  = "us"
}
module "c" {
  source  = "./wrap"
  flavour = "small"
  region  = "eu"
}
`,
		"wrap/main.tf": `variable "flavour" {
  type  = string
  const = true
}
variable "region" {
  const = true
}
variable "unused" {}
module "inner" {
  source  = "example/${var.flavour}/aws"
  version = "${var.region == "eu" ? "1" : "2"}.0.0"
}
`,
	}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	want := "inner example/LARGE/aws 2.0.0|inner example/small/aws 1.0.0"
	if got := strings.Join(calls(cfg), "|"); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

// OpenTofu evaluates variables that are not declared const; Terraform ≥
// 1.15 refuses them. LoadProject reads them (export serves both) and says
// so in a note; const = false is refused by both.
func TestNonConstVariableNote(t *testing.T) {
	cfg, err := loadProject(t, map[string]string{"main.tf": "variable \"v\" {\n  default = \"1.0.0\"\n}\nmodule \"m\" {\n  source  = \"example/m/aws\"\n  version = var.v\n}\n"}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Notes) != 1 || !strings.Contains(cfg.Notes[0], "main.tf:1: var.v is used in a module source or version but not declared const = true") || !strings.Contains(cfg.Notes[0], "Terraform ≥ 1.15 refuses it") {
		t.Errorf("notes: %q", cfg.Notes)
	}
	if got := strings.Join(calls(cfg), "|"); got != "m example/m/aws 1.0.0" {
		t.Errorf("calls: %s", got)
	}
}

// Everything that is not known at init fails at file:line:col naming the
// module, the expression as written and why, and says what to do.
func TestConstModuleSourceErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		in   Inputs
		want []string
	}{
		"resource": {src: "resource \"terraform_data\" \"x\" {}\nmodule \"c\" {\n  source = \"./${terraform_data.x.output}\"\n}\n",
			want: []string{`main.tf:3:12: module "c": source = "./${terraform_data.x.output}": not known at init: terraform_data.x.output is known only when Terraform plans (`, "hint: a module source or version may use literals"}},
		"module output": {src: "module \"c\" {\n  source = module.d.path\n}\n", want: []string{"module.d.path is known only when Terraform plans"}},
		"workspace":     {src: "module \"c\" {\n  source = \"./${terraform.workspace}\"\n}\n", want: []string{"terraform.workspace is not evaluated in module sources"}},
		"path.cwd":      {src: "module \"c\" {\n  source = path.cwd\n}\n", want: []string{"path.cwd depends on where the client runs"}},
		"timestamp":     {src: "locals {\n  t = timestamp()\n}\nmodule \"c\" {\n  source = local.t\n}\n", want: []string{`source = local.t: not known at init: local.t (`, "timestamp() is not known until Terraform plans"}},
		"file":          {src: "module \"c\" {\n  source = file(\"x\")\n}\n", want: []string{"file() is not one of the functions airgap evaluates", "hint: airgap evaluates Terraform's string"}},
		"undeclared":    {src: "module \"c\" {\n  source = var.nope\n}\n", want: []string{"var.nope is not declared in this module"}},
		"required": {src: "variable \"where\" {\n  const = true\n}\nmodule \"c\" {\n  source = \"./${var.where}\"\n}\n",
			want: []string{`main.tf:5:12: module "c": source = "./${var.where}": not known at init: var.where has no value: it is not set and has no default (`, "hint: give the variable a value as for terraform init: --var NAME=VALUE"}},
		"const false":  {src: "variable \"v\" {\n  const   = false\n  default = \"./x\"\n}\nmodule \"c\" {\n  source = var.v\n}\n", want: []string{"var.v is declared const = false"}},
		"sensitive":    {src: "variable \"v\" {\n  const     = true\n  sensitive = true\n  default   = \"./x\"\n}\nmodule \"c\" {\n  source = var.v\n}\n", want: []string{"var.v is sensitive"}},
		"cycle":        {src: "locals {\n  a = local.b\n  b = local.a\n}\nmodule \"c\" {\n  source = local.a\n}\n", want: []string{"refers to itself"}},
		"for":          {src: "locals {\n  l = [for x in [\"a\"] : x]\n}\nmodule \"c\" {\n  source = local.l[0]\n}\n", want: []string{"for expressions and splats are not evaluated"}},
		"splat":        {src: "locals {\n  l = [{a = \"./x\"}]\n}\nmodule \"c\" {\n  source = local.l[*].a[0]\n}\n", want: []string{"for expressions and splats are not evaluated"}},
		"arithmetic":   {src: "variable \"n\" {\n  const   = true\n  default = 1\n}\nmodule \"c\" {\n  source = \"./${var.n + 1}\"\n}\n", want: []string{"arithmetic is not evaluated"}},
		"list":         {src: "locals {\n  l = [\"a\"]\n}\nmodule \"c\" {\n  source = local.l\n}\n", want: []string{"it is tuple, not a string"}},
		"null":         {src: "module \"c\" {\n  source = null\n}\n", want: []string{"it is null"}},
		"bad type":     {src: "variable \"v\" {\n  type    = list(string)\n  const   = true\n  default = [\"a\"]\n}\nmodule \"c\" {\n  source = var.v[0]\n}\n", in: Inputs{Vars: []VarArg{{Name: "v", Value: "nope"}}}, want: []string{"the value from --var v is not an HCL literal"}},
		"twice":        {src: "variable \"v\" {\n  const = true\n}\nvariable \"v\" {\n  const = true\n}\nmodule \"c\" {\n  source = var.v\n}\n", want: []string{`variable "v" is declared twice`}},
		"big number":   {src: "variable \"n\" {\n  const   = true\n  default = 1\n}\nmodule \"c\" {\n  source = \"./${var.n}${99999999999999999999}\"\n}\n", want: []string{"a number past ±2^53"}},
		"big input":    {src: "variable \"n\" {\n  type  = number\n  const = true\n}\nmodule \"c\" {\n  source = \"./${var.n}\"\n}\n", in: Inputs{Env: []string{"TF_VAR_n=1e99999"}}, want: []string{"or holds a number past ±2^53"}},
		"format width": {src: "module \"c\" {\n  source = format(\"%99999999d\", 1)\n}\n", want: []string{"its result would be"}},
		"replace":      {src: "locals {\n  s = \"" + strings.Repeat("a", 2000) + "\"\n}\nmodule \"c\" {\n  source = replace(local.s, \"\", local.s)\n}\n", want: []string{"its result would be"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadProject(t, map[string]string{"main.tf": tc.src}, tc.in)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrNotConst) || !positioned.MatchString(err.Error()) {
				t.Errorf("error %q: want %v at file:line:col", err, ErrNotConst)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%s", w, err)
				}
			}
		})
	}
	// A local module's const variable its caller does not pass.
	_, err := loadProject(t, map[string]string{"main.tf": "module \"a\" {\n  source = \"./a\"\n}\n",
		"a/main.tf": "variable \"v\" {\n  const = true\n}\nmodule \"b\" {\n  source = \"./${var.v}\"\n}\n"}, Inputs{})
	if err == nil || !strings.Contains(err.Error(), `var.v has no value: module "a" does not pass it`) || !strings.Contains(err.Error(), "hint: pass v = … in the module block that calls this module") {
		t.Errorf("an argument not passed: %v", err)
	}
	// --var for a variable the project does not declare, as terraform -var.
	_, err = loadProject(t, map[string]string{"main.tf": "module \"c\" {\n  source = \"./x\"\n}\n"}, Inputs{Vars: []VarArg{{Name: "nope", Value: "1"}}})
	if err == nil || !strings.Contains(err.Error(), `--var nope: the project declares no variable "nope"`) {
		t.Errorf("undeclared --var: %v", err)
	}
	// A variables file holds literals.
	_, err = loadProject(t, map[string]string{"main.tf": "variable \"v\" {\n  const = true\n}\nmodule \"c\" {\n  source = var.v\n}\n", "terraform.tfvars": "v = upper(\"x\")\n"}, Inputs{})
	if err == nil || !strings.Contains(err.Error(), "terraform.tfvars:1:5") || !strings.Contains(err.Error(), "a variables file holds literal values only") {
		t.Errorf("a function in terraform.tfvars: %v", err)
	}
	if _, err := ParseVarArg("no-equals"); err == nil {
		t.Error("--var without =")
	}
	if a, err := ParseVarArg("env=a=b"); err != nil || a.Name != "env" || a.Value != "a=b" {
		t.Errorf("ParseVarArg: %+v %v", a, err)
	}
}

// .tf.json sources are templates to Terraform ≥ 1.15 and OpenTofu; a
// downloaded module's expressions are left to its callers; override files
// replace what they set.
func TestConstSourcesJSONOverridesModules(t *testing.T) {
	cfg, err := loadProject(t, map[string]string{
		"main.tf.json":     `{"variable": {"d": {"default": "one", "const": true}}, "locals": {"l": "./${var.d}"}, "module": {"a": {"source": "${local.l}"}}}`,
		"override.tf":      "variable \"d\" {\n  default = \"two\"\n}\n",
		"two/main.tf":      "module \"x\" {\n  source  = \"example/two/aws\"\n  version = \"1.0.0\"\n}\n",
		"one/main.tf":      "module \"x\" {\n  source = \"example/one/aws\"\n}\n",
		"ignored/a.tf":     "module \"y\" {\n  source = var.nope\n}\n",
		"unrelated.tf":     "locals {\n  other = timestamp()\n}\n",
		"terraform.tfvars": "# nothing\n",
	}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls(cfg), "|"); got != "x example/two/aws 1.0.0" {
		t.Errorf("calls: %s", got)
	}
	// LoadTreeIn (a downloaded module) evaluates nothing: its callers set
	// its variables.
	dir := t.TempDir()
	write(t, dir, map[string]string{"main.tf": "variable \"v\" {}\nmodule \"m\" {\n  source  = \"git::https://example.com/${var.v}.git\"\n  version = var.v\n}\n"})
	cfg, err = LoadTreeIn(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Modules[0]; m.Source != "" || m.SourceExpr != `"git::https://example.com/${var.v}.git"` || m.VersionExpr != "var.v" {
		t.Errorf("%+v", m)
	}
}

// Limits: hostile expressions are refused within bounds of time and
// memory (measured here on the whole load).
func TestConstEvalLimits(t *testing.T) {
	var locals strings.Builder
	locals.WriteString("locals {\n  l0 = \"" + strings.Repeat("x", 1000) + "\"\n")
	for i := 1; i < 20; i++ {
		locals.WriteString("  l" + strconv.Itoa(i) + " = \"${local.l" + strconv.Itoa(i-1) + "}${local.l" + strconv.Itoa(i-1) + "}\"\n")
	}
	locals.WriteString("}\nmodule \"c\" {\n  source = local.l19\n}\n")
	var chain strings.Builder
	chain.WriteString("locals {\n  c0 = \"./x\"\n")
	for i := 1; i < 500; i++ {
		chain.WriteString("  c" + strconv.Itoa(i) + " = local.c" + strconv.Itoa(i-1) + "\n")
	}
	chain.WriteString("}\nmodule \"c\" {\n  source = local.c499\n}\n")
	var repeat strings.Builder
	repeat.WriteString("locals {\n  big = \"" + strings.Repeat("y", 60000) + "\"\n}\nmodule \"c\" {\n  source = \"")
	for i := 0; i < 10000; i++ {
		repeat.WriteString("${local.big}")
	}
	repeat.WriteString("\"\n}\n")
	for name, tc := range map[string]struct{ src, want string }{
		"doubling":       {locals.String(), "refers to are larger than 65536 bytes together"},
		"deep chain":     {chain.String(), "references nest more than 64 deep"},
		"repeated value": {repeat.String(), "the values it refers to are larger than 65536 bytes together"},
		"join":           {"locals {\n  l = split(\"\", \"" + strings.Repeat("z", 30000) + "\")\n}\nmodule \"c\" {\n  source = join(\"" + strings.Repeat("-", 100) + "\", local.l)\n}\n", "bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := loadProject(t, map[string]string{"main.tf": tc.src}, Inputs{})
			if err == nil || !errors.Is(err, ErrNotConst) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// FuzzConstEval: a hostile root module (main.tf), terraform.tfvars and one
// --var never make const evaluation panic or hang, and every error names a
// position. It evaluates in memory, as LoadProject does for the root
// module, without the file system.
func FuzzConstEval(f *testing.F) {
	f.Add([]byte("variable \"v\" {\n  const = true\n  default = \"a\"\n}\nlocals {\n  l = format(\"./%s\", lower(var.v))\n}\nmodule \"m\" {\n  source = local.l\n  version = try(var.v, \"1\")\n}\n"), []byte("v = \"b\"\n"), "v=c")
	f.Add([]byte("variable \"v\" {\n  type = list(string)\n  const = true\n}\nmodule \"m\" {\n  source = join(\"/\", var.v)\n}\n"), []byte("v = [\"a\", \"b\"]\n"), "v=[\"x\"]")
	f.Add([]byte("locals {\n  a = replace(\"aaa\", \"/a/\", \"$0$0\")\n}\nmodule \"m\" {\n  source = \"${local.a}\"\n  x = indent(2, \"a\\nb\")\n}\n"), []byte(""), "")
	f.Add([]byte("module \"m\" {\n  source = \"./c\"\n  v = var.nope\n}\n"), []byte("{"), "v=1")
	f.Fuzz(func(t *testing.T, src, tfvars []byte, varArg string) {
		if len(src) > 16<<10 || len(tfvars) > 4<<10 || len(varArg) > 1<<10 {
			return
		}
		cfg, err := ParseConfig(src, "main.tf")
		if err != nil {
			return // FuzzConfig's ground
		}
		ev := &evaluator{funcs: constFuncs, loaded: true, inputs: map[string]rawValue{}}
		if err := parseVarFile(tfvars, "terraform.tfvars", ev.inputs); err != nil && !strings.HasPrefix(err.Error(), "terraform.tfvars") {
			t.Fatalf("tfvars error without a position: %v", err)
		}
		if a, err := ParseVarArg(varArg); err == nil {
			ev.inputs[a.Name] = rawValue{text: a.Value, isStr: true, from: "--var " + a.Name}
		}
		s := ev.newScope(cfg, ".", nil, nil)
		start := time.Now()
		for _, m := range cfg.Modules {
			if err := s.resolve(&m); err != nil && (!errors.Is(err, ErrNotConst) || !strings.HasPrefix(err.Error(), "main.tf:")) {
				t.Fatalf("error without a position: %v", err)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("evaluation took %v", d)
		}
		if ev.spent > MaxEvalBytes+MaxValueBytes {
			t.Fatalf("evaluated %d bytes", ev.spent)
		}
	})
}

// Byte limits do not bound time: a function whose result is one number can
// take seconds (a regular expression of 3,000 states over 30 KB), and a
// project can call it from as many locals as it likes. Evaluation stops at
// MaxEvalTime (here shortened to a second) with an error at the module
// call; before, 20 such locals took 12 s and 2,000 would take hours.
func TestConstEvalTime(t *testing.T) {
	defer func(d time.Duration) { evalTime = d }(evalTime)
	evalTime = time.Second
	var b strings.Builder
	b.WriteString("locals {\n  s = \"" + strings.Repeat("ab", 15000) + "\"\n  p = \"(?:[ab]*a){1000}c\"\n")
	const n = 20
	for i := 0; i < n; i++ {
		b.WriteString("  l" + strconv.Itoa(i) + " = length(regexall(local.p, local.s))\n")
	}
	b.WriteString("  all = \"")
	for i := 0; i < n; i++ {
		b.WriteString("${local.l" + strconv.Itoa(i) + "}")
	}
	b.WriteString("\"\n}\nmodule \"m\" {\n  source = \"./x${local.all}\"\n}\n")
	start := time.Now()
	_, err := loadProject(t, map[string]string{"main.tf": b.String()}, Inputs{})
	d := time.Since(start)
	if !errors.Is(err, ErrNotConst) || !strings.Contains(err.Error(), "took more than 1s") || !strings.Contains(err.Error(), "main.tf:") {
		t.Errorf("error %v, want evaluation stopped at its time limit, at the module call", err)
	}
	if d > 6*time.Second {
		t.Errorf("evaluation took %v with a limit of 1 s", d)
	}
}

// In .tf.json every string of a value is a template when HCL evaluates it
// with a context, so a list holding "%{for a in [...]}%{for b in [...]}…"
// was built whole (20^5 × 8 bytes: 25 MB and 2.6 s before the size limit
// refused it; 20^7: 10 GB). The for directive is now refused first.
func TestConstEvalJSONForTemplate(t *testing.T) {
	l := "[" + strings.Repeat("0,", 19) + "0]"
	tpl := "xxxxxxxx"
	for i := 0; i < 5; i++ {
		tpl = "%{for a in " + l + "}" + tpl + "%{endfor}"
	}
	src := `{"locals": {"x": [{"k": ["` + tpl + `"]}]}, "module": {"m": {"source": "./m${local.x[0].k[0]}"}}}`
	start := time.Now()
	_, err := loadProject(t, map[string]string{"main.tf.json": src}, Inputs{})
	if !errors.Is(err, ErrNotConst) || !strings.Contains(err.Error(), "for expressions and splats are not evaluated") {
		t.Errorf("error %v, want the for directive refused", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
}
