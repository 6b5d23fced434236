package main

// What the verbs share: the command line's spelling (two dashes, and
// terraform's one for export's -var), stopping on Ctrl-C (interrupt),
// usage errors (checkUsage), the --log-format flag, the one JSON printer
// of every --json, and the few readers two verbs share (time flags,
// publisher keys to accept, approval files).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/approval"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
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
	return usageError{strings.Join(problems, "; ") + "\nusage: airgap " + verb + " " + verbs()[verb].help().usage}
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

// singleDash annotates the flags that also take terraform's single-dash
// spelling (export's -var and -var-file), so that a terraform command line
// carries over.
const singleDash = "airgap-single-dash"

// terraformDashes rewrites -NAME and -NAME=VALUE to --NAME… for the flags
// annotated singleDash; everything else is left to checkDashes.
func terraformDashes(args []string, fs *pflag.FlagSet) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if f := fs.Lookup(name); f != nil && len(f.Annotations[singleDash]) > 0 {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// checkDashes catches Terraform-style single-dash long flags (-json), which
// pflag would read as a bundle of one-letter flags.
func checkDashes(args []string, fs *pflag.FlagSet) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if fs.Lookup(name) != nil {
			return usageError{fmt.Sprintf("%s: long flags take two dashes\nhint: use -%s", a, a)}
		}
		return usageError{fmt.Sprintf("unknown flag %s (airgap's flags take two dashes, e.g. --%s)", a, name)}
	}
	return nil
}

// suggestFlag adds the nearest flag name to pflag's "unknown flag: --x".
func suggestFlag(err error, fs *pflag.FlagSet) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := dist.Suggest(name, names); s != "" {
		return fmt.Errorf("%w; did you mean --%s?", err, s)
	}
	return err
}

// parseTime reads a time flag: an RFC 3339 time, a date (2027-01-31,
// midnight UTC) or a duration (90d, 720h) from now, ahead (dir 1) or ago
// (dir -1); "" is the zero time.
func parseTime(flag, s string, now time.Time, dir time.Duration) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	d, err := store.ParseAge(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%s %q: want a duration (90d, 720h), a date (2027-01-31) or an RFC 3339 time", flag, s)
	}
	return now.Add(dir * d).Truncate(time.Second), nil
}

// readApprovals reads the approval files beside the bundle
// (approval.Beside) and those given with --approval.
func readApprovals(bundlePath string, given []string) ([]approval.File, error) {
	fs, err := approval.Beside(bundlePath)
	if err != nil {
		return nil, err
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	seen := map[string]bool{}
	for _, f := range fs {
		seen[abs(f.Name)] = true
	}
	for _, g := range given {
		if seen[abs(g)] {
			continue
		}
		seen[abs(g)] = true
		f, err := approval.ReadFile(g)
		if err != nil {
			return nil, fmt.Errorf("--approval: %w", err)
		}
		fs = append(fs, f)
	}
	if len(fs) > approval.MaxBeside*2 {
		return nil, fmt.Errorf("%d approval files: at most %d are read", len(fs), approval.MaxBeside*2)
	}
	return fs, nil
}

// parseAccept reads --accept-publisher-key fingerprints (any spacing).
func parseAccept(flag string, accept []string) ([]string, error) {
	var out []string
	for _, a := range accept {
		fp, err := verify.ParseFingerprint(a)
		if err != nil {
			return nil, usageError{flag + ": " + err.Error()}
		}
		out = append(out, fp)
	}
	return out, nil
}
