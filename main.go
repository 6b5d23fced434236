// Command airgap carries Terraform and OpenTofu providers and modules into
// networks with no internet, and serves them there. See README.md.
//
// This file is the verb table and the run loop. Each verb's struct, flag
// set and calls into the packages are in a cmd_*.go file, what the verbs
// share in cmd_common.go, and each verb's help text in help.go.
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
	synopsis() string
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
		"keys":          &keysCmd{},    // cmd_keys.go
		"approve":       &approveCmd{}, // cmd_approve.go
		"verify":        &verifyCmd{},
		"show":          &showCmd{}, // cmd_show.go
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
		"prune":         &pruneCmd{},     // cmd_maintain.go
		"gc":            &gcCmd{},        // cmd_maintain.go
		"mirror-dir":    &mirrorDirCmd{}, // cmd_mirror.go
		"token":         &tokenCmd{},     // cmd_access.go
		"audit":         &auditCmd{},     // cmd_access.go
		"docs":          &docsCmd{},      // cmd_docs.go
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
			printVerbHelp(os.Stdout, args[0], fs)
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
	if err := v.run(fs.Args()); err != nil {
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
