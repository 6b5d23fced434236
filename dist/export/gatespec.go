package export

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
)

// Gate blocks of the export manifest:
//
//	gate "trivy" {
//	  for        = "modules"            # or "providers"
//	  command    = ["trivy", "config", "--format", "sarif", "--output", "{report}", "--exit-code", "1", "{dir}"]
//	  version    = ["trivy", "--version"] # optional; default [command[0], "--version"]
//	  fail_level = "error"              # optional: fail on a SARIF finding at this level or above
//	  timeout    = "10m"                # optional, per run (default 10m, 1s to 24h)
//	  max_output = "64MiB"              # optional: report, and stdout+stderr, each (1MiB to 64MiB, the default)
//	  env        = ["TRIVY_CACHE_DIR"]  # optional: variables passed through from airgap's environment
//	}
//	waive "trivy" {
//	  for    = "terraform-aws-modules/vpc/aws@5.1.0"   # ADDRESS@VERSION of the gate's kind
//	  reason = "AVD-AWS-0178 accepted by the network team"
//	}
//
// runGates runs them.

type specGate struct {
	Name      string    `hcl:"name,label"`
	For       string    `hcl:"for"`
	Command   []string  `hcl:"command"`
	Version   []string  `hcl:"version,optional"`
	FailLevel *string   `hcl:"fail_level,optional"`
	Timeout   *string   `hcl:"timeout,optional"`
	MaxOutput *string   `hcl:"max_output,optional"`
	Env       []string  `hcl:"env,optional"`
	DefRange  hcl.Range `hcl:",def_range"`
}

type specWaive struct {
	Gate     string    `hcl:"gate,label"`
	For      string    `hcl:"for"`
	Reason   string    `hcl:"reason"`
	DefRange hcl.Range `hcl:",def_range"`
}

// Bounds and defaults of a gate's runs.
const (
	DefaultGateTimeout = 10 * time.Minute
	MaxGateTimeout     = 24 * time.Hour
	// DefaultGateOutput is also the most a gate may set: the offline side
	// reads reports up to bundle.MaxReportSize.
	DefaultGateOutput = bundle.MaxReportSize
	minGateOutput     = 1 << 20
	// VersionTimeout and maxVersionOutput bound a gate's version command.
	VersionTimeout   = 30 * time.Second
	maxVersionOutput = 64 << 10
)

// GateSpec is one gate block, checked.
type GateSpec struct {
	dist.Gate          // Name, For, Command, FailLevel (Tool is filled in when it runs)
	Version   []string // the version command
	Path      string   // Command[0] as found on PATH when the manifest was read
	Timeout   time.Duration
	MaxOutput int64
	Env       []string // names passed through
	Where     string   // file:line, for messages
}

// Waiver is one waive block: Gate may fail on Addr (canonical) at Version.
type Waiver struct {
	Gate, Addr, Version, Reason string
	Where                       string
}

// Placeholders a gate's arguments may hold, and the kind of entry each
// applies to ("" both).
var placeholders = map[string]string{
	"{dir}": dist.GateModules, "{binary}": dist.GateProviders, "{platform}": dist.GateProviders,
	"{address}": "", "{version}": "", "{report}": "",
}

var (
	rePlaceholder = regexp.MustCompile(`\{[a-z]+\}`)
	reEnvName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// parseGates checks the gate and waive blocks (errors at file:line:col).
func parseGates(path string, gs []specGate, ws []specWaive) ([]GateSpec, []Waiver, error) {
	var out []GateSpec
	byName := map[string]*GateSpec{}
	if len(gs) > dist.MaxGates {
		return nil, nil, fmt.Errorf("%w: %s: %d gates, at most %d", ErrManifest, path, len(gs), dist.MaxGates)
	}
	for _, g := range gs {
		spec, err := g.check(path)
		if err != nil {
			return nil, nil, rangeErr(g.DefRange, "gate %q: %v", g.Name, err)
		}
		if byName[spec.Name] != nil {
			return nil, nil, rangeErr(g.DefRange, "gate %q is defined twice (also at %s)", g.Name, byName[spec.Name].Where)
		}
		out = append(out, *spec)
		byName[spec.Name] = &out[len(out)-1]
	}
	var waivers []Waiver
	seen := map[string]string{}
	for _, w := range ws {
		g := byName[w.Gate]
		if g == nil {
			names := make([]string, 0, len(out))
			for _, s := range out {
				names = append(names, s.Name)
			}
			return nil, nil, rangeErr(w.DefRange, "waive %q: no gate of that name in this manifest (gates: %s)", w.Gate, strings.Join(names, ", "))
		}
		wv, err := w.check(path, g.For)
		if err != nil {
			return nil, nil, rangeErr(w.DefRange, "waive %q: %v", w.Gate, err)
		}
		key := wv.Gate + " " + dist.VersionKey(wv.Addr, wv.Version)
		if prev, dup := seen[key]; dup {
			return nil, nil, rangeErr(w.DefRange, "waive %q for %s@%s is written twice (also at %s)", w.Gate, wv.Addr, wv.Version, prev)
		}
		seen[key] = wv.Where
		waivers = append(waivers, wv)
	}
	return out, waivers, nil
}

func (g specGate) check(path string) (*GateSpec, error) {
	spec := &GateSpec{Gate: dist.Gate{Name: g.Name, For: g.For, Command: g.Command}, Version: g.Version,
		Timeout: DefaultGateTimeout, MaxOutput: DefaultGateOutput, Env: g.Env, Where: fmt.Sprintf("%s:%d", path, g.DefRange.Start.Line)}
	switch {
	case !dist.ValidGateName(g.Name):
		return nil, fmt.Errorf("a gate name has lowercase letters, digits, - and _ (at most 64)")
	case g.For != dist.GateModules && g.For != dist.GateProviders:
		return nil, fmt.Errorf("for = %q: want %q (each module tree) or %q (each provider plugin binary)", g.For, dist.GateModules, dist.GateProviders)
	case len(g.Command) == 0 || g.Command[0] == "":
		return nil, fmt.Errorf("command is empty: give the scanner and its arguments, e.g. [\"trivy\", \"config\", \"{dir}\"]")
	case len(g.Command) > dist.MaxGateCommand || len(g.Version) > dist.MaxGateCommand:
		return nil, fmt.Errorf("a command has at most %d arguments", dist.MaxGateCommand)
	}
	if g.FailLevel != nil {
		if !dist.ValidSARIFLevel(*g.FailLevel) {
			return nil, fmt.Errorf("fail_level = %q: want one of %s", *g.FailLevel, strings.Join(dist.SARIFLevels, ", "))
		}
		spec.FailLevel = *g.FailLevel
	}
	if g.Timeout != nil {
		d, err := time.ParseDuration(*g.Timeout)
		if err != nil || d < time.Second || d > MaxGateTimeout {
			return nil, fmt.Errorf("timeout = %q: give a duration from 1s to 24h, e.g. \"10m\"", *g.Timeout)
		}
		spec.Timeout = d
	}
	if g.MaxOutput != nil {
		n, err := bundle.ParseSize(*g.MaxOutput)
		if err != nil || n < minGateOutput || n > DefaultGateOutput {
			return nil, fmt.Errorf("max_output = %q: give a size from 1MiB to %s", *g.MaxOutput, dist.HumanSize(DefaultGateOutput))
		}
		spec.MaxOutput = n
	}
	for _, e := range g.Env {
		if !reEnvName.MatchString(e) || e == "PATH" || e == "HOME" || e == "TMPDIR" {
			return nil, fmt.Errorf("env: %q is not a variable name airgap passes through (PATH, HOME and TMPDIR are set for every run)", e)
		}
	}
	used := map[string]bool{}
	for _, a := range append(append([]string{}, g.Command...), g.Version...) {
		if len(a) > dist.MaxGateText || dist.Printable(a) != a {
			return nil, fmt.Errorf("an argument is over %d bytes or has control characters", dist.MaxGateText)
		}
	}
	for _, a := range g.Command {
		for _, p := range rePlaceholder.FindAllString(a, -1) {
			kind, ok := placeholders[p]
			switch {
			case !ok:
				return nil, fmt.Errorf("unknown placeholder %s in %q (there are {dir}, {binary}, {address}, {version}, {platform}, {report})", p, a)
			case kind != "" && kind != g.For:
				return nil, fmt.Errorf("placeholder %s is for gates over %s, this gate is for %s", p, kind, g.For)
			}
			used[p] = true
		}
	}
	if want := map[string]string{dist.GateModules: "{dir}", dist.GateProviders: "{binary}"}[g.For]; !used[want] {
		return nil, fmt.Errorf("the command never names what to scan: a gate for %s passes %s", g.For, want)
	}
	if len(spec.Version) == 0 {
		spec.Version = []string{g.Command[0], "--version"}
	}
	if rePlaceholder.MatchString(strings.Join(spec.Version, " ")) {
		return nil, fmt.Errorf("version: placeholders are for the command, not the version command")
	}
	p, err := exec.LookPath(g.Command[0])
	if err != nil {
		return nil, fmt.Errorf("the scanner %q is not found (PATH): %v\nhint: install it, or give its full path in command", g.Command[0], err)
	}
	spec.Path = p
	return spec, nil
}

// check reads a waive block for a gate over kind.
func (w specWaive) check(path, kind string) (Waiver, error) {
	wv := Waiver{Gate: w.Gate, Reason: strings.TrimSpace(w.Reason), Where: fmt.Sprintf("%s:%d", path, w.DefRange.Start.Line)}
	at := strings.LastIndex(w.For, "@")
	if at < 0 {
		return wv, fmt.Errorf("for = %q: write ADDRESS@VERSION, e.g. \"terraform-aws-modules/vpc/aws@5.1.0\"", w.For)
	}
	addr, version := w.For[:at], strings.TrimPrefix(w.For[at+1:], "=")
	if kind == dist.GateModules {
		m, sub, ok, err := dist.ParseModuleSource(addr)
		if err != nil || !ok || sub != "" {
			return wv, fmt.Errorf("for = %q: gate %s is for modules, and %q is not a registry module address ([HOST/]NAMESPACE/NAME/SYSTEM)", w.For, w.Gate, addr)
		}
		wv.Addr = m.String()
	} else {
		p, err := dist.ParseProviderSource(addr)
		if err != nil {
			return wv, fmt.Errorf("for = %q: gate %s is for providers: %v", w.For, w.Gate, err)
		}
		wv.Addr = p.String()
	}
	if !dist.ValidVersion(version) {
		return wv, fmt.Errorf("for = %q: %q is not an exact version", w.For, version)
	}
	wv.Version = version
	switch {
	case wv.Reason == "":
		return wv, fmt.Errorf("a reason is required: it goes into the signed bundle and is shown wherever the result is")
	case len(wv.Reason) > dist.MaxGateText || dist.Printable(wv.Reason) != wv.Reason:
		return wv, fmt.Errorf("the reason is one line of at most %d bytes without control characters", dist.MaxGateText)
	}
	return wv, nil
}

// waiver returns the waiver of gate on addr at version, if any.
func waiver(ws []Waiver, gate, addr, version string) (Waiver, bool) {
	i := slices.IndexFunc(ws, func(w Waiver) bool {
		return w.Gate == gate && dist.VersionKey(w.Addr, w.Version) == dist.VersionKey(addr, version)
	})
	if i < 0 {
		return Waiver{}, false
	}
	return ws[i], true
}
