package dist

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
)

// knownPlatforms are the os_arch pairs Go can build for (the output of
// `go tool dist list` of Go 1.26, with "/" as "_"). Terraform providers are
// Go programs, so a platform outside this list cannot have a package: it is
// a typo, and an export must refuse it rather than skip it.
var knownPlatforms = []string{
	"aix_ppc64", "android_386", "android_amd64", "android_arm", "android_arm64",
	"darwin_amd64", "darwin_arm64", "dragonfly_amd64", "freebsd_386", "freebsd_amd64",
	"freebsd_arm", "freebsd_arm64", "illumos_amd64", "ios_amd64", "ios_arm64",
	"js_wasm", "linux_386", "linux_amd64", "linux_arm", "linux_arm64", "linux_loong64",
	"linux_mips", "linux_mips64", "linux_mips64le", "linux_mipsle", "linux_ppc64",
	"linux_ppc64le", "linux_riscv64", "linux_s390x", "netbsd_386", "netbsd_amd64",
	"netbsd_arm", "netbsd_arm64", "openbsd_386", "openbsd_amd64", "openbsd_arm",
	"openbsd_arm64", "openbsd_ppc64", "openbsd_riscv64", "plan9_386", "plan9_amd64",
	"plan9_arm", "solaris_amd64", "wasip1_wasm", "windows_386", "windows_amd64",
	"windows_arm", "windows_arm64",
}

// CheckPlatform returns an error naming the nearest known spelling when p is
// not a known os_arch pair. windows_arm (dropped in Go 1.24) is in the list
// because older providers publish packages for it.
func CheckPlatform(p string) error {
	for _, k := range knownPlatforms {
		if p == k {
			return nil
		}
	}
	msg := fmt.Sprintf("unknown platform %q: not an os_arch pair Go builds for", p)
	if s := Suggest(strings.ToLower(strings.ReplaceAll(p, "/", "_")), knownPlatforms); s != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, s)
	}
	return fmt.Errorf("%s (e.g. linux_amd64, darwin_arm64, windows_amd64)", msg)
}

// Suggest returns the candidate nearest to word if it is close enough to be a
// likely typo (edit distance at most 2, or at most a third of the word),
// else "". It is used for did-you-mean hints on platforms and verbs.
func Suggest(word string, candidates []string) string {
	if len(word) > 256 {
		return "" // bounded work on hostile input
	}
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if c == word {
			return c
		}
		if d := levenshtein.Distance(word, c, nil); d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(2, len(word)/3)
	if bestD > limit {
		return ""
	}
	return best
}
