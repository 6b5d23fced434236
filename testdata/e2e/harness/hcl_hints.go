package harness

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
)

// HCLBlocks extracts the HCL a message prints after a "hint: …:" line: the
// lines indented by two spaces that follow it, unindented.
func HCLBlocks(t *testing.T, msg string) []string {
	t.Helper()
	var blocks []string
	lines := strings.Split(msg, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "hint:") || !strings.HasSuffix(lines[i], ":") {
			continue
		}
		var b []string
		for i++; i < len(lines) && (strings.HasPrefix(lines[i], "  ") || lines[i] == ""); i++ {
			b = append(b, strings.TrimPrefix(lines[i], "  "))
		}
		i--
		for len(b) > 0 && b[len(b)-1] == "" {
			b = b[:len(b)-1]
		}
		if len(b) > 0 {
			blocks = append(blocks, strings.Join(b, "\n")+"\n")
		}
	}
	return blocks
}

// ParseHCL fails the test unless src is valid HCL.
func ParseHCL(t *testing.T, what, src string) {
	t.Helper()
	if _, diags := hclparse.NewParser().ParseHCL([]byte(src), what+".hcl"); diags.HasErrors() {
		t.Errorf("the HCL in the %s hint does not parse: %v\n%s", what, diags, src)
	}
}
