// Command airgap carries Terraform and OpenTofu providers and modules into
// networks with no internet, and serves them there. See README.md.
//
// Here are the verb table and the run loop. Each verb (its struct, its
// flag set, its help text and its calls into the packages that do the
// work) has a file of its own named after it, cmd_ and the verb; beside
// them are what the verbs share and the grouping 'airgap help' prints.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/dist"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "0.1.0-dev"

// verb is one subcommand: its own flag set, its own Run.
type verb interface {
	flags() *pflag.FlagSet
	synopsis() string // its line in 'airgap help'
	help() verbHelp   // 'airgap help VERB' besides the flags
	run(args []string) error
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError ends a verb with its own exit status (documented in its help)
// and a line on stderr: for outcomes that are not failures, such as
// verify --strict's "verified, needs attention".
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func verbs() map[string]verb {
	return map[string]verb{
		"keygen":        &keygenCmd{},
		"keys":          &keysCmd{},
		"approve":       &approveCmd{},
		"verify":        &verifyCmd{},
		"show":          &showCmd{},
		"import":        &importCmd{},
		"inventory":     &inventoryCmd{},
		"export":        &exportCmd{},
		"serve":         &serveCmd{},
		"ca":            &caCmd{},
		"client-config": &clientConfigCmd{},
		"split":         &splitCmd{},
		"join":          &joinCmd{},
		"healthcheck":   &healthcheckCmd{},
		"push":          &pushCmd{},
		"prune":         &pruneCmd{},
		"gc":            &gcCmd{},
		"mirror-dir":    &mirrorDirCmd{},
		"token":         &tokenCmd{},
		"audit":         &auditCmd{},
		"docs":          &docsCmd{},
		"store":         &storeCmd{},
	}
}

func main() { os.Exit(run(os.Args[1:])) }

// run is the whole CLI. Exit codes: 0 done, 1 failed, 2 the command line
// itself is wrong (nothing was done).
func run(args []string) int {
	vs := verbs()
	if code, done := topLevel(args, vs); done {
		return code
	}
	v := vs[args[0]]
	fs := v.flags()
	fs.SetOutput(io.Discard)
	addLogFormat(fs)
	rest := terraformDashes(args[1:], fs)
	if err := checkDashes(rest, fs); err != nil {
		failJSON(fs, rest, err)
		return usageFail(args[0], err)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printVerbHelp(os.Stdout, args[0], v, fs)
			return 0
		}
		err = suggestFlag(err, fs)
		failJSON(fs, args[1:], err)
		return usageFail(args[0], err)
	}
	// serve's own --log-format shapes its failure message too.
	switch lf := fs.Lookup("log-format").Value.String(); lf {
	case "text":
	case "json":
		progress.UseJSON(os.Stderr)
	default:
		err := fmt.Errorf("--log-format %q: want text or json", lf)
		failJSON(fs, args[1:], err)
		return usageFail(args[0], err)
	}
	err := objectStoreGuard(args[0], fs)
	if err == nil {
		err = v.run(fs.Args())
	}
	if err != nil {
		failJSON(fs, args[1:], err)
		var ue usageError
		if errors.As(err, &ue) {
			return usageFail(args[0], err)
		}
		var ee exitError
		if errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "airgap %s: %s\n", args[0], ee.msg)
			return ee.code
		}
		code := 1
		var ie *interruptedError
		if errors.As(err, &ie) {
			code = 128 + int(ie.sig) // as a shell reports a process the signal ended: 130 for Ctrl-C
		}
		if j := progress.JSON(); j != nil {
			j.Error("airgap "+args[0]+" failed", "error", err.Error())
			return code
		}
		fmt.Fprintf(os.Stderr, "airgap %s: %s\n", args[0], dist.PrintableLines(err.Error()))
		return code
	}
	return 0
}

// topLevel handles what comes before a verb: no arguments, --help,
// --version, 'help [VERB]' and unknown verbs. done is false when args[0]
// is a verb to run.
func topLevel(args []string, vs map[string]verb) (code int, done bool) {
	switch {
	case len(args) == 0:
		// Nothing asked: the usage, as an error (a script that lost its
		// arguments must not carry on as if something was done).
		usage(os.Stderr, vs)
		return 2, true
	case args[0] == "-h" || args[0] == "--help":
		usage(os.Stdout, vs)
		return 0, true
	case args[0] == "--version" || args[0] == "version":
		fmt.Println("airgap", Version)
		return 0, true
	case args[0] == "help" && len(args) == 1:
		usage(os.Stdout, vs)
		return 0, true
	case args[0] == "help":
		if v, ok := vs[args[1]]; ok {
			fs := v.flags()
			addLogFormat(fs)
			printVerbHelp(os.Stdout, args[1], v, fs)
			return 0, true
		}
		fmt.Fprintf(os.Stderr, "airgap help: no command %q%s\nhint: run 'airgap help' for the list\n", args[1], didYouMean(args[1], vs))
		return 2, true
	}
	if _, ok := vs[args[0]]; !ok {
		fmt.Fprintf(os.Stderr, "airgap: unknown command %q%s\nhint: run 'airgap help' for the list\n", args[0], didYouMean(args[0], vs))
		return 2, true
	}
	return 0, false
}

func didYouMean(word string, vs map[string]verb) string {
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	if s := dist.Suggest(word, names); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}
