package dist

// RealTokens is the count of tokens HCL's own scanner makes (hcltokens_test.go).
var RealTokens = realTokens

// HCLParsingFree reports whether n tokens could be parsed now, without
// waiting (and holds nothing).
func HCLParsingFree(n int64) bool {
	if !hclParsing.TryAcquire(n) {
		return false
	}
	hclParsing.Release(n)
	return true
}
