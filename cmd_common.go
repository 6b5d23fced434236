package main

// What every verb shares: stopping on Ctrl-C (interrupt), usage errors
// (checkUsage), the --log-format flag, and the one JSON printer of every
// --json.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/dist"
)

// interrupt is how a long verb (export, import, push) stops on Ctrl-C
// (SIGINT) or SIGTERM: the first signal cancels ctx, and the verb cleans
// up and returns; Err then turns its error into an *interruptedError,
// which run prints with its hint and exits 128+signal with (130 for
// Ctrl-C). A second signal ends the process at once (what that leaves, the
// next run cleans up).
type interrupt struct {
	ctx    context.Context
	cancel context.CancelFunc
	ch     chan os.Signal
	sig    atomic.Int32
}

func catchInterrupt() *interrupt {
	in := &interrupt{ch: make(chan os.Signal, 1)}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-in.ch
		if !ok {
			return
		}
		if n, isSys := s.(syscall.Signal); isSys {
			in.sig.Store(int32(n))
		}
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		in.cancel()
	}()
	return in
}

// Stop stops catching the signals.
func (in *interrupt) Stop() {
	signal.Stop(in.ch)
	close(in.ch) // no more sends after Stop: ends the goroutine
	in.cancel()
}

// Caught reports whether a signal arrived.
func (in *interrupt) Caught() bool { return in.sig.Load() != 0 }

// Err returns err as an *interruptedError with hint if a signal arrived,
// else err unchanged.
func (in *interrupt) Err(err error, hint string) error {
	if err == nil || !in.Caught() {
		return err
	}
	return &interruptedError{sig: syscall.Signal(in.sig.Load()), err: err, hint: hint}
}

type interruptedError struct {
	sig  syscall.Signal
	err  error
	hint string
}

func (e *interruptedError) Error() string {
	name := "SIGTERM"
	if e.sig == syscall.SIGINT {
		name = "SIGINT"
	}
	return fmt.Sprintf("interrupted (%s): %v\nhint: %s", name, e.err, e.hint)
}

func (e *interruptedError) Unwrap() error { return e.err }

// addLogFormat gives every verb --log-format (serve has its own, which
// also shapes its access log).
func addLogFormat(fs *pflag.FlagSet) {
	if fs.Lookup("log-format") == nil {
		fs.String("log-format", "text", "messages on stderr: text (for people) or json (one slog record per line, for log collectors)")
	}
}

// flagVal is a required flag's name and value, for checkUsage.
type flagVal struct{ name, value string }

// checkUsage names what is wrong with a verb's command line: each required
// flag left out, then missing or extra arguments (argNames are the
// arguments the verb takes), with the verb's usage line.
func checkUsage(verb string, args, argNames []string, required ...flagVal) error {
	var miss, problems []string
	for _, f := range required {
		if f.value == "" {
			miss = append(miss, "--"+f.name)
		}
	}
	if len(miss) > 0 {
		problems = append(problems, "missing "+strings.Join(miss, " and ")+" (required)")
	}
	switch {
	case len(args) < len(argNames):
		problems = append(problems, "missing the "+strings.Join(argNames[len(args):], " ")+" argument")
	case len(args) > len(argNames) && len(argNames) == 0:
		problems = append(problems, fmt.Sprintf("takes no arguments, but was given %q", args))
	case len(args) > len(argNames):
		problems = append(problems, fmt.Sprintf("takes one %s, but was given %d: %q", strings.Join(argNames, " "), len(args), args))
	}
	if len(problems) == 0 {
		return nil
	}
	return usageError{strings.Join(problems, "; ") + "\nusage: airgap " + verb + " " + helps[verb].usage}
}

func usageFail(name string, err error) int {
	fmt.Fprintf(os.Stderr, "airgap %s: %s\nhint: run 'airgap help %s'\n", name, dist.PrintableLines(err.Error()), name)
	return 2
}

// jsonPrinted is set once a verb has printed its JSON document.
var jsonPrinted bool

// printJSON writes one indented JSON document to stdout: every --json of
// every verb goes through here. A document (an object) that does not say
// "ok" itself gets "ok": true first, so that success and failure
// (failJSON) documents share it.
func printJSON(v any) error {
	b, err := renderJSON(v)
	if err != nil {
		return err
	}
	jsonPrinted = true
	_, err = os.Stdout.Write(b)
	return err
}

// renderJSON is the document printJSON prints, byte for byte (what
// 'airgap approve' digests as the review it printed).
func renderJSON(v any) ([]byte, error) {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false) // "<" and ">" as they are: nobody reads this as HTML
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimRight(enc.Bytes(), "\n")
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) == nil && keys["ok"] == nil {
		if len(keys) == 0 {
			b = []byte(`{"ok":true}`)
		} else {
			b = append([]byte(`{"ok":true,`), b[1:]...)
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// failJSON prints the failure document of a verb run with --json that
// failed before printing its own: {"ok": false, "error": "..."} (the same
// message as on stderr, where it is printed too).
func failJSON(fs *pflag.FlagSet, args []string, err error) {
	f := fs.Lookup("json")
	if jsonPrinted || f == nil || (f.Value.String() != "true" && !slices.Contains(args, "--json")) {
		return
	}
	printJSON(struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}{false, err.Error()})
}
