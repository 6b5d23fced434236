package dist

// RealTokens is the count of tokens HCL's own scanner makes (what the token-count tests compare with).
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
