package export

import (
	"fmt"
	"strings"

	version "github.com/hashicorp/go-version"
)

// parseConstraints reads a version constraint list as Terraform writes it
// (">= 3.6, < 4.0"). go-version's own error for a bad part names only the
// part ("malformed constraint: " and nothing, for ",,"); this says what is
// wrong and what is expected.
func parseConstraints(s string) (version.Constraints, error) {
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("constraint %d is empty (two commas, or a comma at an end); write e.g. \">= 3.6, < 4.0\"", i+1)
		}
		if _, err := version.NewConstraint(part); err != nil {
			return nil, fmt.Errorf("%q is not a version constraint: want an operator (=, !=, >, >=, <, <=, ~>) and a version, e.g. \">= 3.6\" or \"~> 3.6.0\"", part)
		}
	}
	return version.NewConstraint(s)
}
