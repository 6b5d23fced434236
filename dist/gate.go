package dist

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/airgap/airgap/verify"
)

// Gates: scanners the connected side runs over every module tree or every
// provider plugin binary before it exports them (dist/export runs them). A
// bundle records each gate (Gate, in the manifest) and, on every entry it
// covers, the result (GateResult): what the tool said of that entry, the
// tool's own version, and its report, carried as a blob (RoleGateReport).
// The offline side can insist on gates ('airgap import --require-gate').

// What a gate runs over (Gate.For).
const (
	GateModules   = "modules"
	GateProviders = "providers"
)

// Results of a gate on one entry (GateResult.Status). A bundle holds only
// these two: an entry that failed a gate without a waiver fails the export.
const (
	GatePassed = "passed" // exit status 0, and no SARIF finding at or above the fail level
	GateWaived = "waived" // failed, but the export manifest waives this gate for this entry
)

// SARIF result levels, most severe first (GateFindings, Gate.FailLevel).
var SARIFLevels = []string{"error", "warning", "note", "none"}

// Limits on gate records (they come from signed but still untrusted
// bundles).
const (
	MaxGates       = 32   // gates in one bundle
	MaxGateCommand = 64   // arguments of a gate's command
	MaxGateText    = 1024 // bytes of a tool version, an argument, a waiver reason
)

var reGateName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidGateName reports whether s can name a gate: lowercase letters,
// digits, '-' and '_', at most 64 bytes, starting with a letter or digit.
func ValidGateName(s string) bool { return reGateName.MatchString(s) }

// Gate is one gate as the export ran it (the manifest's "gates" list).
type Gate struct {
	Name string `json:"name"`
	For  string `json:"for"` // GateModules or GateProviders
	// Command is the argument list as written in the export manifest, with
	// its placeholders ({dir}, {binary}, {address}, {version}, {platform},
	// {report}).
	Command []string `json:"command"`
	// Tool is the tool's own version string (what its version command
	// printed, one line).
	Tool string `json:"tool"`
	// FailLevel, if set, fails the gate on a SARIF finding at this level
	// or a more severe one, whatever the exit status.
	FailLevel string `json:"fail_level,omitempty"`
}

// GateResult is one gate's result on one entry (a module version, or a
// provider package: gates over providers run on each platform's plugin).
type GateResult struct {
	Gate     string `json:"gate"`
	Tool     string `json:"tool"`
	Status   string `json:"status"` // GatePassed or GateWaived
	ExitCode int    `json:"exit_code"`
	// Findings are counted from the report when it is SARIF (absent
	// otherwise); CountSARIF is the one definition.
	Findings *GateFindings `json:"findings,omitempty"`
	// Report is the tool's report: the file it wrote to {report}, or its
	// standard output when the command has no {report}.
	Report      verify.Digest `json:"report"`
	ReportBytes int64         `json:"report_bytes"`
	// Waiver is the export manifest's reason for letting a failed entry
	// through (Status GateWaived only).
	Waiver string `json:"waiver,omitempty"`
}

// GateFindings counts a SARIF report's results by level.
type GateFindings struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Note    int `json:"note"`
	None    int `json:"none"`
}

// Total is every finding.
func (f *GateFindings) Total() int { return f.Error + f.Warning + f.Note + f.None }

// AtOrAbove counts the findings at level or a more severe one.
func (f *GateFindings) AtOrAbove(level string) int {
	n := 0
	for _, l := range SARIFLevels {
		n += f.count(l)
		if l == level {
			return n
		}
	}
	return n
}

func (f *GateFindings) count(level string) int {
	switch level {
	case "error":
		return f.Error
	case "warning":
		return f.Warning
	case "note":
		return f.Note
	}
	return f.None
}

// String is "2 error, 1 warning" (levels with findings), "no findings", or
// for nil (a report that is not SARIF) "report not SARIF".
func (f *GateFindings) String() string {
	if f == nil {
		return "report not SARIF"
	}
	var parts []string
	for _, l := range SARIFLevels {
		if n := f.count(l); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, l))
		}
	}
	if len(parts) == 0 {
		return "no findings"
	}
	return strings.Join(parts, ", ")
}

// ValidSARIFLevel reports whether s is a SARIF result level.
func ValidSARIFLevel(s string) bool {
	for _, l := range SARIFLevels {
		if s == l {
			return true
		}
	}
	return false
}

// Passes reports whether a tool's exit status and findings pass a gate
// with fail level failLevel ("" for the exit status alone).
func Passes(exitCode int, f *GateFindings, failLevel string) bool {
	if exitCode != 0 {
		return false
	}
	return failLevel == "" || f == nil || f.AtOrAbove(failLevel) == 0
}

// Summary is one result for people: "trivy: passed (no findings)" or
// "trivy: waived (exit 1, 3 error): reason". Strings are escaped.
func (r GateResult) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (exit %d", Printable(r.Gate), Printable(r.Status), r.ExitCode)
	if r.Findings != nil {
		fmt.Fprintf(&b, ", %s", r.Findings)
	}
	b.WriteString(")")
	if r.Waiver != "" {
		fmt.Fprintf(&b, ", waived: %s", Printable(r.Waiver))
	}
	return b.String()
}

// validText reports whether s is non-empty (unless may be empty), at most
// MaxGateText bytes and printable.
func validText(s string, mayBeEmpty bool) bool {
	return (mayBeEmpty || s != "") && len(s) <= MaxGateText && Printable(s) == s
}

// Validate checks a gate definition.
func (g Gate) Validate() error {
	switch {
	case !ValidGateName(g.Name):
		return fmt.Errorf("gate %q: invalid name (lowercase letters, digits, - and _)", Printable(g.Name))
	case g.For != GateModules && g.For != GateProviders:
		return fmt.Errorf("gate %s: for is %q, want %q or %q", g.Name, Printable(g.For), GateModules, GateProviders)
	case len(g.Command) == 0 || len(g.Command) > MaxGateCommand:
		return fmt.Errorf("gate %s: a command of 1 to %d arguments is needed", g.Name, MaxGateCommand)
	case !validText(g.Tool, false):
		return fmt.Errorf("gate %s: invalid tool version string", g.Name)
	case g.FailLevel != "" && !ValidSARIFLevel(g.FailLevel):
		return fmt.Errorf("gate %s: fail_level %q is not a SARIF level (%s)", g.Name, Printable(g.FailLevel), strings.Join(SARIFLevels, ", "))
	}
	for _, a := range g.Command {
		if !validText(a, true) {
			return fmt.Errorf("gate %s: a command argument is over %d bytes or unprintable", g.Name, MaxGateText)
		}
	}
	return nil
}

// validateGateResults checks the results recorded on one entry: names,
// statuses, texts, and each report blob (through ref).
func validateGateResults(what string, rs []GateResult, ref func(string, verify.Digest, string) error) error {
	seen := map[string]bool{}
	for _, r := range rs {
		switch {
		case !ValidGateName(r.Gate):
			return fmt.Errorf("%s: invalid gate name %q", what, Printable(r.Gate))
		case seen[r.Gate]:
			return fmt.Errorf("%s: gate %s has two results", what, r.Gate)
		case !validText(r.Tool, false):
			return fmt.Errorf("%s: gate %s: invalid tool version string", what, r.Gate)
		case r.Status == GatePassed && (r.ExitCode != 0 || r.Waiver != ""):
			return fmt.Errorf("%s: gate %s: passed with exit status %d or a waiver", what, r.Gate, r.ExitCode)
		case r.Status == GateWaived && !validText(r.Waiver, false):
			return fmt.Errorf("%s: gate %s: waived without a printable reason of at most %d bytes", what, r.Gate, MaxGateText)
		case r.Status != GatePassed && r.Status != GateWaived:
			return fmt.Errorf("%s: gate %s: status %q (a bundle holds only %q and %q results)", what, r.Gate, Printable(r.Status), GatePassed, GateWaived)
		case r.ReportBytes < 0 || r.Findings != nil && (r.Findings.Error < 0 || r.Findings.Warning < 0 || r.Findings.Note < 0 || r.Findings.None < 0):
			return fmt.Errorf("%s: gate %s: negative counts", what, r.Gate)
		}
		seen[r.Gate] = true
		if err := ref(what+" gate "+r.Gate+" report", r.Report, RoleGateReport); err != nil {
			return err
		}
	}
	return nil
}

// CountSARIF reads a report and, if it is a SARIF 2.1 log (one JSON object
// with a "version" of 2.1.x and a "runs" array, nothing after it), counts
// the results of every run by level. A result without a level counts as
// "warning", SARIF's default (a rule's own default level is not looked up).
// Anything else — not JSON, another shape, a level that is not a string or
// not a SARIF level, a value nested deeper than MaxSARIFDepth — is not
// SARIF: ok is false. It streams the tokens (sarifJSON), so memory does not
// grow with the report beyond its longest string and MaxSARIFDepth open
// values; the caller bounds the report's size (bundle.MaxReportSize, the
// export's bound on a gate's output).
func CountSARIF(r io.Reader) (f *GateFindings, ok bool) {
	js := sarifJSON.Stream(r)
	f = &GateFindings{}
	version, runs := "", false
	err := js.Object(func(key string) error {
		switch key {
		case "version":
			t, err := js.Token()
			s, isStr := t.(string)
			if err != nil || !isStr {
				return errNotSARIF
			}
			version = s
			return nil
		case "runs":
			runs = true
			return js.Array(func() error {
				return js.Object(func(key string) error {
					if key != "results" {
						return js.Skip()
					}
					return js.Array(func() error { return countResult(js, f) })
				})
			})
		}
		return js.Skip()
	})
	if err != nil || !runs || !strings.HasPrefix(version, "2.1.") || js.End() != nil {
		return nil, false
	}
	return f, true
}

var errNotSARIF = fmt.Errorf("not SARIF")

func countResult(js *JSONStream, f *GateFindings) error {
	level := "warning"
	err := js.Object(func(key string) error {
		if key != "level" {
			return js.Skip()
		}
		t, err := js.Token()
		s, isStr := t.(string)
		if err != nil || !isStr || !ValidSARIFLevel(s) {
			return errNotSARIF
		}
		level = s
		return nil
	})
	if err != nil {
		return err
	}
	switch level {
	case "error":
		f.Error++
	case "warning":
		f.Warning++
	case "note":
		f.Note++
	default:
		f.None++
	}
	return nil
}

// MaxSARIFDepth bounds how deeply a report's values (a run's tool or
// property bag, a result's message...) may nest: json.Decoder keeps a word
// per open array or object, so a report of 64 MiB of '[' would otherwise
// cost about 1 GiB to read. Real SARIF nests a few levels (property bags,
// code flows: under 20).
const MaxSARIFDepth = 256

// sarifJSON is CountSARIF's bound: MaxSARIFDepth below a run (the log, its
// runs and a run are the three levels above); the size is the caller's.
var sarifJSON = JSONLimit{MaxBytes: math.MaxInt64 - 1, MaxDepth: 3 + MaxSARIFDepth}

// sarifResult is what WriteSARIFTable shows of a result.
type sarifResult struct {
	RuleID  string `json:"ruleId"`
	Level   string `json:"level"`
	Message struct {
		Text string `json:"text"`
	} `json:"message"`
	Locations []struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine int `json:"startLine"`
			} `json:"region"`
		} `json:"physicalLocation"`
	} `json:"locations"`
}

// MaxSARIFCell bounds what WriteSARIFTable prints of one cell (a rule, a
// location, a message): longer ones end in "…".
const MaxSARIFCell = 400

// WriteSARIFTable writes the results of a SARIF log (one CountSARIF
// counts as SARIF) as a table for a terminal, one result a line: rule,
// level (SARIF's default, warning, when it has none), file:line of its
// first location, message. Every cell is escaped (Printable) and cut at
// MaxSARIFCell. It streams the log within sarifJSON, holding one result at
// a time; the caller bounds the size.
func WriteSARIFTable(w io.Writer, r io.Reader) error {
	js := sarifJSON.Stream(r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tLEVEL\tFILE:LINE\tMESSAGE")
	n := 0
	err := js.Object(func(key string) error {
		if key != "runs" {
			return js.Skip()
		}
		return js.Array(func() error {
			return js.Object(func(key string) error {
				if key != "results" {
					return js.Skip()
				}
				return js.Array(func() error {
					var res sarifResult
					if err := js.Decode(&res); err != nil {
						return err
					}
					n++
					level, where := res.Level, ""
					if level == "" {
						level = "warning"
					}
					if len(res.Locations) > 0 {
						pl := res.Locations[0].PhysicalLocation
						where = pl.ArtifactLocation.URI
						if pl.Region.StartLine > 0 {
							where += fmt.Sprintf(":%d", pl.Region.StartLine)
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(res.RuleID), cell(level), cell(where), cell(res.Message.Text))
					return nil
				})
			})
		})
	})
	if err != nil {
		return fmt.Errorf("not a SARIF log: %w", err)
	}
	if n == 0 {
		fmt.Fprintln(tw, "(no results)\t\t\t")
	}
	return tw.Flush()
}

// cell is s for one cell of a table: escaped, no tabs, at most
// MaxSARIFCell bytes.
func cell(s string) string {
	s = strings.ReplaceAll(Printable(s), "\t", " ")
	if len(s) > MaxSARIFCell {
		s = strings.ToValidUTF8(s[:MaxSARIFCell], "") + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}
