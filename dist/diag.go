package dist

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// DiagLines formats the errors among HCL diagnostics one per line, each
// "FILE:LINE:COL: summary: detail" where the diagnostic has a position
// (hcl's own suggestions, "Did you mean …?", are in the detail). The
// manifest reader and serve's configuration file report through it.
func DiagLines(diags hcl.Diagnostics) []string {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		l := d.Summary
		if d.Detail != "" {
			l += ": " + d.Detail
		}
		if d.Subject != nil {
			l = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, l)
		}
		lines = append(lines, l)
	}
	return lines
}
