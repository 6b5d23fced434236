package dist

import (
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// HCLAttr is one attribute of an HCLHint block.
type HCLAttr struct {
	Name  string
	Value cty.Value
}

// HCLHint renders one HCL block for a "hint:" to paste into a manifest or
// CLI configuration: written by hclwrite, so every label and value is quoted
// and escaped as HCL requires (an address from a bundle cannot break out of
// it), one attribute per line (HCL refuses a one-line block with more than
// one), each line indented two spaces so the block stands apart from the
// message. Every HCL block a message prints goes through here or is a
// constant tested to parse (see the root package's TestHCLHintsParse).
func HCLHint(blockType string, labels []string, attrs ...HCLAttr) string {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock(blockType, labels).Body()
	for _, a := range attrs {
		b.SetAttributeValue(a.Name, a.Value)
	}
	return Indent(string(hclwrite.Format(f.Bytes())), "  ")
}

// Indent prefixes every non-empty line of s with prefix and drops the
// final newline.
func Indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
