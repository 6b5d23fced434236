package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

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

// The JSON convention every --json document and JSON log record keeps
// (see docs/architecture.md, "JSON output"): snake_case keys; no null (lists are
// [], optional things left out); a number that is a duration has its unit
// in its key; times are RFC 3339 UTC; one document on stdout, with "ok", and
// on failure "ok": false and "error".
var (
	snakeKey     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	durationWord = regexp.MustCompile(`(^|_)(dur|duration|elapsed|startup|took|timeout|latency|seconds|age|interval)(_|$)`)
	unitSuffix   = regexp.MustCompile(`_(ns|us|ms|s)$`)
	timeKey      = regexp.MustCompile(`(^|_)(time|at)$`)
)

// JSONViolations walks v and lists every place it breaks the convention.
func JSONViolations(path string, v any) []string {
	var out []string
	switch x := v.(type) {
	case nil:
		out = append(out, path+": null")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + k
			if !snakeKey.MatchString(k) {
				out = append(out, p+": key is not snake_case")
			}
			switch val := x[k].(type) {
			case float64:
				if durationWord.MatchString(k) && !unitSuffix.MatchString(k) {
					out = append(out, fmt.Sprintf("%s: the duration %v has no unit in its key", p, val))
				}
				if unitSuffix.MatchString(k) && durationWord.MatchString(k) && val != float64(int64(val)) {
					out = append(out, fmt.Sprintf("%s: the duration %v is not an integer", p, val))
				}
			case string:
				if timeKey.MatchString(k) {
					if ts, err := time.Parse(time.RFC3339Nano, val); err != nil || ts.Location() != time.UTC {
						out = append(out, fmt.Sprintf("%s: the time %q is not RFC 3339 UTC", p, val))
					}
				}
			}
			out = append(out, JSONViolations(p, x[k])...)
		}
	case []any:
		for i, e := range x {
			out = append(out, JSONViolations(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
	}
	return out
}

// CheckJSONDoc checks stdout is exactly one JSON object keeping the
// convention, with ok == wantOK (and an error when it is false).
func CheckJSONDoc(t *testing.T, name, stdout string, wantOK bool) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Errorf("%s: stdout is not one JSON object: %v\n%s", name, err, stdout)
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("%s: stdout holds more than one JSON document:\n%s", name, stdout)
	}
	if ok, isBool := doc["ok"].(bool); !isBool || ok != wantOK {
		t.Errorf("%s: \"ok\" is %v, want %v", name, doc["ok"], wantOK)
	}
	if e, _ := doc["error"].(string); !wantOK && e == "" {
		t.Errorf("%s: a failure document without \"error\"", name)
	}
	for _, v := range JSONViolations("$", doc) {
		t.Errorf("%s: %s", name, v)
	}
	return doc
}
