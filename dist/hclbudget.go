package dist

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Bounds on the memory HCL's parsers take for configuration files airgap
// did not write (a module's .tf and .tf.json, a lock file, tfvars, and the
// site's own manifests and access files). The parsers hold far more than
// the file per token: measured on 4 MiB files of one-byte tokens ("a\n",
// "a=1\n", "[1,1,…]", ",,,,"), hclsyntax.ParseConfig allocated 1.1-1.4 KB
// per token and export peaked at 1.6-1.75 GB of resident memory for one
// file, which then failed to parse; terraform-config-inspect and
// hcl/json, 0.6-0.9 KB. A byte limit alone cannot tell such a file from a
// real one of the same size (real configuration has a token per five
// bytes or more), so every reader counts the tokens first (HCLTokens: no
// allocation) and refuses a file over MaxHCLTokens, then holds the count
// on one process-wide semaphore of MaxHCLTokensParsing while it parses.
//
// Worst case: MaxHCLTokens tokens being parsed at once in the whole
// process (one file at the limit, admitted alone: it holds all of
// MaxHCLTokensParsing), else MaxHCLTokensParsing tokens of smaller files,
// whatever the number of modules, workers or files in flight (readers
// that parse a file's strings as templates too hold all of it:
// AdmitHCLWithTemplates). One file at the limit, in the costliest shapes
// measured ("a=\"${a}\"" lines, "a\n", "[1,1,…]" in .tf.json), took
// export to 150-230 MiB of peak resident memory, the binary's 35 MiB
// included (the token slice, the syntax tree and the garbage of the
// slice's growth, 0.6-1.4 KB a token allocated); an export of six modules
// of such files, --jobs 8, at GOMAXPROCS 2 and 4, to 250-272 MiB
// (TestHostileDenseModule holds it under 448 MiB). What stays after a
// parse is the reader's (tfconfig keeps no syntax tree of a module).
const (
	// MaxHCLTokens: tokens in one configuration file. Generated Terraform
	// of the densest real kind (an IAM policy document of statements of
	// actions and ARNs) has one per five bytes, .tf.json one per ten: the
	// limit lets through about 1.9 MiB of such .tf and 3.7 MiB of such
	// .tf.json (TestCheckHCLTokens), against 0.4 MiB of one-byte tokens.
	MaxHCLTokens = 384 << 10
	// MaxHCLTokensParsing: tokens of all files being parsed at once (a
	// file over it waits for all of it and is parsed alone). It bounds the
	// bytes in flight, not a count of files: hclsyntax holds a token in 96
	// bytes (its type, bytes and range) in a slice that grows by doubling,
	// so a file of n tokens takes up to 96*1.5n while it is lexed, then its
	// syntax tree about as much again (ParseHCL lexes a file that parses
	// in pieces of a few thousand tokens: then only the tree grows with
	// n, and the bound below is the worst case still, for a file that
	// does not, parsed whole); measured on the bench's real site
	// (files of 20-45 thousand tokens), 250-350 bytes of live heap a token.
	// At a sixth of MaxHCLTokens (65536 tokens, one big real module file
	// and a small one at a time) that is 16-23 MB in flight: a warm
	// re-export of that site peaked at 78-88 MiB resident, against 90-96
	// at a third (two big files at a time, both at GOGC=50; 81-83 with
	// export's soft memory limit), in the same CPU time: the parses are
	// CPU-bound and the machine's two cores stay busy with the module
	// jobs' other work (unpacking, hashing, zipping).
	MaxHCLTokensParsing = MaxHCLTokens / 6
)

// ErrHCLTooManyTokens: a configuration file over MaxHCLTokens.
var ErrHCLTooManyTokens = errors.New("configuration file over the token limit")

// hclParsing is the process-wide semaphore of tokens being parsed.
var hclParsing = semaphore.NewWeighted(MaxHCLTokensParsing)

// AdmitHCL is the step every reader of an HCL or HCL JSON file takes
// before it parses one: the file must have at most MaxHCLTokens tokens
// (CheckHCLTokens) and nest at most MaxHCLNesting levels
// (checkHCLNesting); its tokens are held on the process-wide semaphore
// until the caller calls release, after it is done with the parsed file.
// A caller must not hold anything else of the semaphore while it waits
// here (one file at a time per goroutine).
func AdmitHCL(src []byte, filename string) (release func(), err error) {
	release, _, err = admitHCL(src, filename, false)
	return release, err
}

// AdmitHCLWithTemplates is AdmitHCL for a reader that will also parse
// strings of the file as templates (HCL's JSON syntax makes every string
// one; tfconfig's const evaluation of a .tf.json): the file's tokens and
// the templates' (HCLTemplateTokens) together must be at most
// MaxHCLTokens, so it holds all of MaxHCLTokensParsing and returns spare,
// how many the templates may have.
func AdmitHCLWithTemplates(src []byte, filename string) (release func(), spare int, err error) {
	return admitHCL(src, filename, true)
}

// admitHCL is AdmitHCL, holding all of MaxHCLTokensParsing if whole.
func admitHCL(src []byte, filename string, whole bool) (release func(), spare int, err error) {
	if h := admitted.Load(); h != nil {
		(*h)(filename)
	}
	n, err := CheckHCLTokens(src, filename)
	if err != nil {
		return nil, 0, err
	}
	if whole {
		release = HoldHCLTokens(MaxHCLTokensParsing)
	} else {
		release = HoldHCLTokens(n)
	}
	if err := checkHCLNesting(src, filename); err != nil {
		release()
		return nil, 0, err
	}
	return release, MaxHCLTokens - n, nil
}

// admitted, when set (CountHCLAdmissions), is told the name of every file
// asked to be admitted for parsing.
var admitted atomic.Pointer[func(filename string)]

// CountHCLAdmissions counts the files asked to be admitted for parsing
// (AdmitHCL: every parse of an HCL or HCL JSON file asks first), by name,
// until stop is called: for tests that show each file is parsed once. One
// count at a time in the process.
func CountHCLAdmissions() (counts func() map[string]int, stop func()) {
	var mu sync.Mutex
	m := map[string]int{}
	f := func(name string) {
		mu.Lock()
		m[name]++
		mu.Unlock()
	}
	admitted.Store(&f)
	return func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(m)
		}, func() {
			admitted.Store(nil)
		}
}

// CheckHCLTokens returns the bound HCLTokens puts on src's tokens, or an
// error naming the file if it is over MaxHCLTokens.
func CheckHCLTokens(src []byte, filename string) (int, error) {
	n := HCLTokens(src, filename)
	if n > MaxHCLTokens {
		return n, fmt.Errorf("%w: %s has up to %d tokens, over the limit of %d (real configuration has one per five bytes or more; this file has one per %.1f)\n"+
			"hint: a file this dense is not written by people nor by generators of Terraform; if it truly is meant to be read, split it into files of fewer tokens, or have the module's publisher do so",
			ErrHCLTooManyTokens, Printable(filename), n, MaxHCLTokens, float64(len(src))/float64(n))
	}
	return n, nil
}

// HoldHCLTokens waits until n tokens (at most MaxHCLTokensParsing) can be
// parsed within MaxHCLTokensParsing, holds them and returns the function
// that gives them back (once; later calls do nothing).
func HoldHCLTokens(n int) (release func()) {
	w := int64(min(max(n, 0), MaxHCLTokensParsing))
	hclParsing.Acquire(context.Background(), w) // only a context's end fails it
	var once sync.Once
	return func() { once.Do(func() { hclParsing.Release(w) }) }
}
