package main

// The help: 'airgap help' lists the verbs grouped by where they run (the
// connected side, the transfer station, the offline side, anywhere), and
// 'airgap help VERB' frames a verb's own help (its usage, what it does,
// its environment, examples and exit codes) around its flags.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// verbHelp is what 'airgap help VERB' prints besides the flags; each verb
// gives its own (its help method, beside its flags).
type verbHelp struct {
	usage    string   // arguments after the verb
	about    string   // what it does, two lines
	env      []string // environment variables it reads
	examples []string
	exits    string // exit codes besides exitCodes
	// envOf, if set, gives the environment variables from the verb's flags
	// instead of env (serve's AIRGAP_ variables mirror its flags).
	envOf func(fs *pflag.FlagSet) []string
}

const exitCodes = "Exit codes:\n  0    done\n  1    failed (the message says why and what to do; nothing was left half-written)\n  2    wrong command line (nothing was done)\n  130  interrupted by Ctrl-C (143: by SIGTERM); cleaned up, run it again\n"

// verbPlaces groups the verbs by where they run, in the order 'airgap
// help' lists the places; a verb in the verb table must be in one
// (TestHelpGroupsVerbsByPlace).
var verbPlaces = []struct {
	place string
	verbs []string
}{
	{"Connected side (reaches the registries)", []string{"keygen", "export", "split"}},
	{"Transfer station (checks and shows a bundle; only approve writes: its signed approval, beside the bundle)", []string{"verify", "show", "approve"}},
	{"Offline side (the store and the appliance)", []string{"import", "inventory", "serve", "ca", "docs", "token", "audit", "prune", "gc", "mirror-dir", "push", "store"}},
	{"Anywhere", []string{"keys", "client-config", "healthcheck", "join"}},
}

func usage(w io.Writer, vs map[string]verb) {
	fmt.Fprintf(w, "airgap %s: carry Terraform/OpenTofu providers and modules into air-gapped networks\n\nUsage: airgap COMMAND [flags]\n", Version)
	listed := map[string]bool{}
	for _, p := range verbPlaces {
		fmt.Fprintf(w, "\n%s:\n", p.place)
		for _, n := range p.verbs {
			if v, ok := vs[n]; ok {
				fmt.Fprintf(w, "  %-14s %s\n", n, v.synopsis())
				listed[n] = true
			}
		}
	}
	var rest []string
	for n := range vs {
		if !listed[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nOther:\n")
		for _, n := range rest {
			fmt.Fprintf(w, "  %-14s %s\n", n, vs[n].synopsis())
		}
	}
	fmt.Fprintf(w, "\nRun 'airgap help COMMAND' for a command's arguments, flags and examples. 'airgap --version' prints the version.\n\n%s", exitCodes)
}

// printVerbHelp prints 'airgap help VERB': the verb's help around its
// flags (fs, with --log-format added).
func printVerbHelp(w io.Writer, name string, v verb, fs *pflag.FlagSet) {
	h := v.help()
	fmt.Fprintf(w, "Usage: airgap %s %s\n\n%s\n\nFlags:\n%s", name, h.usage, h.about, fs.FlagUsages())
	env := h.env
	if h.envOf != nil {
		env = h.envOf(fs)
	}
	if len(env) > 0 {
		fmt.Fprintf(w, "\nEnvironment:\n  %s\n", strings.Join(env, "\n  "))
	}
	if len(h.examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n  %s\n", strings.Join(h.examples, "\n  "))
	}
	fmt.Fprintf(w, "\n%s%s", exitCodes, h.exits)
}
