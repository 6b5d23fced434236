package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sync/errgroup"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/verify"
)

// Gates run after every package and module is fetched and checked, before
// the bundle is written. For each gate, its version command runs once
// (bounded: VersionTimeout, maxVersionOutput); then its command runs once
// per entry of its kind — every module version, or every provider package
// (one per platform) — at most Options.GateJobs at a time:
//
//   - Never through a shell: the command is an argument list; command[0]
//     was found on PATH when the manifest was read. Placeholders are
//     replaced inside each argument: {dir} the module's directory (its
//     subdirectory in the source tree when it has one), {binary} the
//     provider's plugin binary, {address} and {version} of the entry,
//     {platform} (os_arch) of a provider package, {report} a file the tool
//     may write its report to.
//   - What it scans is unpacked for the run through the same safe
//     extraction as any module archive (dist/getter: os.Root, names and
//     sizes checked): a module from its normalized archive (1 GiB, 100,000
//     entries), a provider package from its zip (check.MaxZipEntries
//     entries, check.MaxZipUnpacked bytes, no links).
//   - A clean environment: exactly PATH (airgap's), HOME and TMPDIR (empty
//     directories of the run's own), and the variables the gate's env
//     lists, when airgap's environment has them. The working directory is
//     the run's own, empty.
//   - Bounds: the gate's timeout (default 10 minutes) for each run; its
//     max_output (default and most bundle.MaxReportSize, 64 MiB) for the
//     report and for standard output and error (each), checked while it
//     runs (the report's size every 100 ms). A run over a bound is killed
//     with its process group (its children too) and fails the export:
//     that is the tool failing, not a finding, so no waiver covers it; so
//     does a tool that exits non-zero without writing the {report} it was
//     given, or exits 0 without it, or is killed by a signal.
//   - Where: the run's tree, HOME and TMPDIR are under
//     <cache>/gates/<gate>/<entry>/ — a path fixed by gate and entry, so
//     that a tool that writes its input's path into its report (trivy's
//     SARIF does) writes the same report for the same input, and the
//     bundle stays reproducible — taken under a lock (two exports sharing
//     a cache wait for each other there) and removed after the run.
//     Disk in use at once: at most GateJobs trees (each within the limits
//     above) plus what the tools write.
//
// The result of each run is its exit status, its report (the {report}
// file, or its standard output when the command has no {report}) and,
// when the report is SARIF, its findings by level (dist.CountSARIF). It
// passes with exit status 0 and, if the gate has a fail_level, no finding
// at that level or above. Reports and the tools' output (.log) are kept
// in Options.GateReports, <gate>/<kind>_<address>_<version>[_<platform>];
// every report also goes into the bundle as a blob (RoleGateReport), every
// result into the signed manifest. An entry that fails a gate fails the
// export, naming the entry, the gate and its report, unless a waive block
// names that gate and entry: the result is then recorded as waived, with
// the reason.

// gateTarget is one entry a gate runs over.
type gateTarget struct {
	kind, addr, version, platform string
	archive, subdir               string // a module's archive and subdirectory
	zip                           string // a provider package's zip
	res                           *[]dist.GateResult
}

func (t gateTarget) String() string {
	if t.kind == dist.GateProviders {
		return "provider " + t.addr + " " + t.version + " " + t.platform
	}
	return "module " + t.addr + " " + t.version
}

// slug names a target's files: <kind>_<address>_<version>[_<platform>],
// with / and : as _ (addresses and versions are checked names).
func (t gateTarget) slug() string {
	s := strings.TrimSuffix(t.kind, "s") + "_" + t.addr + "_" + t.version
	if t.platform != "" {
		s += "_" + t.platform
	}
	return strings.NewReplacer("/", "_", ":", "_").Replace(s)
}

// gateOutcome is one run: its result, or why it failed.
type gateOutcome struct {
	g      *GateSpec
	t      gateTarget
	res    dist.GateResult
	failed bool  // failed the gate, not waived
	err    error // the tool could not be run to an answer
	report string
	log    string
}

// GateFailure is a gate an entry failed; the export error lists them.
type GateFailure struct {
	Gate, Entry, Summary, Report, Log string
}

// runGates runs every gate of the request over cat's entries and records
// the results on them, or fails naming every entry that failed.
func (e *exporter) runGates(ctx context.Context, cat *dist.Catalog) ([]dist.Gate, error) {
	gs := e.req.Gates
	if len(gs) == 0 {
		return nil, nil
	}
	if e.opt.GateReports == "" {
		return nil, errors.New("gates need a directory for their reports (--gate-reports)")
	}
	abs, err := filepath.Abs(e.opt.GateReports) // the tools run elsewhere
	if err != nil {
		return nil, err
	}
	e.opt.GateReports, e.res.GateReports = abs, abs
	if err := prepareReports(abs); err != nil {
		return nil, err
	}
	defs := make([]dist.Gate, len(gs))
	for i := range gs {
		tool, err := e.toolVersion(ctx, &gs[i])
		if err != nil {
			return nil, err
		}
		gs[i].Tool = tool
		defs[i] = gs[i].Gate
		e.opt.Log("gate %s: %s", gs[i].Name, dist.Printable(tool))
	}
	var runs []*gateOutcome
	for i := range gs {
		for _, t := range gateTargets(cat, gs[i].For, e.res.Files) {
			runs = append(runs, &gateOutcome{g: &gs[i], t: t})
		}
	}
	jobs := e.opt.GateJobs
	if jobs <= 0 {
		jobs = 2
	}
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(jobs)
	for _, r := range runs {
		eg.Go(func() error {
			e.runGate(gctx, r)
			switch {
			case r.err != nil:
				e.opt.Log("gate %s on %s: could not finish", r.g.Name, r.t)
			case r.failed:
				e.opt.Log("gate %s on %s: FAILED (exit %d, %s)", r.g.Name, r.t, r.res.ExitCode, r.res.Findings.String())
			default:
				e.opt.Log("gate %s on %s: %s", r.g.Name, r.t, r.res.Status)
			}
			return ctx.Err() // only an interrupt stops the other runs
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return defs, e.gateVerdict(runs)
}

// gateTargets lists the entries a gate over kind runs on, in catalog order.
func gateTargets(cat *dist.Catalog, kind string, files map[verify.Digest]string) []gateTarget {
	var out []gateTarget
	if kind == dist.GateModules {
		for i := range cat.Modules {
			m := &cat.Modules[i]
			out = append(out, gateTarget{kind: kind, addr: m.Addr(), version: m.Version, archive: files[m.Archive], subdir: m.Subdir, res: &m.Gates})
		}
		return out
	}
	for i := range cat.Providers {
		p := &cat.Providers[i]
		for j := range p.Packages {
			pk := &p.Packages[j]
			out = append(out, gateTarget{kind: kind, addr: p.Addr(), version: p.Version, platform: pk.Platform(), zip: files[pk.Digest], res: &pk.Gates})
		}
	}
	return out
}

// gateVerdict records every result on its entry and fails the export if
// an entry failed a gate without a waiver, or a gate could not run.
func (e *exporter) gateVerdict(runs []*gateOutcome) error {
	var broken, failed, waive []string
	used, hinted := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		switch {
		case r.err != nil:
			broken = append(broken, fmt.Sprintf("gate %s on %s: %v", r.g.Name, r.t, r.err))
			continue
		case r.failed:
			e.res.GateFailures = append(e.res.GateFailures, GateFailure{Gate: r.g.Name, Entry: r.t.String(), Summary: r.res.Summary(), Report: r.report, Log: r.log})
			failed = append(failed, fmt.Sprintf("gate %s failed on %s: exit status %d, %s\n  report: %s\n  output: %s",
				r.g.Name, r.t, r.res.ExitCode, r.res.Findings.String(), r.report, r.log))
			if k := r.g.Name + " " + r.t.addr + "@" + r.t.version; !hinted[k] { // one waiver covers every platform
				hinted[k] = true
				waive = append(waive, dist.HCLHint("waive", []string{r.g.Name},
					dist.HCLAttr{Name: "for", Value: cty.StringVal(r.t.addr + "@" + r.t.version)},
					dist.HCLAttr{Name: "reason", Value: cty.StringVal("why the site accepts these findings")}))
			}
			continue
		}
		if w, ok := waiver(e.req.Waivers, r.g.Name, r.t.addr, r.t.version); ok {
			used[w.Where] = true
			if r.res.Status == dist.GatePassed {
				e.warn(fmt.Sprintf("waive %q for %s@%s (%s) is not needed: the gate passed on %s", w.Gate, w.Addr, w.Version, w.Where, r.t))
			}
		}
		*r.t.res = append(*r.t.res, r.res)
		sort.Slice(*r.t.res, func(i, j int) bool { return (*r.t.res)[i].Gate < (*r.t.res)[j].Gate })
	}
	for _, w := range e.req.Waivers {
		if !used[w.Where] {
			e.warn(fmt.Sprintf("waive %q for %s@%s (%s) matches nothing this export carries; remove it if it is stale", w.Gate, w.Addr, w.Version, w.Where))
		}
	}
	switch {
	case len(broken) > 0:
		return fmt.Errorf("%d gate run(s) could not finish (this is the tool failing, not a finding: no waiver covers it):\n%s\nhint: fix the gate's command, timeout or max_output in the manifest, or the tool; reports and output are in %s; nothing was written",
			len(broken), dist.PrintableLines(strings.Join(broken, "\n")), e.opt.GateReports)
	case len(failed) > 0:
		return fmt.Errorf("%d entr%s failed a gate:\n%s\nhint: read the reports; export another version, or fix the source, or, if the site accepts the findings, "+
			"waive the gate for the entry in the manifest with the reason (nothing was written):\n%s",
			len(failed), plural(len(failed), "y", "ies"), dist.PrintableLines(strings.Join(failed, "\n")), strings.Join(waive, "\n"))
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// reportsMarker marks a reports directory as airgap's: only such a
// directory is emptied by the next export.
const reportsMarker = ".airgap-gate-reports"

// prepareReports makes dir an empty reports directory: created if absent,
// emptied if an earlier export made it, refused otherwise.
func prepareReports(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return fmt.Errorf("--gate-reports %s: %w", dir, err)
	case len(ents) > 0:
		if _, err := os.Stat(filepath.Join(dir, reportsMarker)); err != nil {
			return fmt.Errorf("--gate-reports %s: the directory is not empty and was not made by airgap\nhint: give another directory (or remove it); nothing was downloaded", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("--gate-reports %s: removing the reports of an earlier export: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--gate-reports %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, reportsMarker), []byte("reports of airgap export's gates; the next export with these reports replaces this directory\n"), 0o644)
}

// gateEnv is the environment of a gate's runs (see the doc above).
func gateEnv(g *GateSpec, home, tmp string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp}
	for _, name := range g.Env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// toolVersion runs the gate's version command once and returns what it
// printed as one line: non-empty lines trimmed, joined with "; ", escaped,
// at most dist.MaxGateText bytes.
func (e *exporter) toolVersion(ctx context.Context, g *GateSpec) (string, error) {
	work, err := os.MkdirTemp(filepath.Join(e.opt.CacheDir, "tmp"), fmt.Sprintf("gate-%d-", os.Getpid()))
	if err != nil {
		return "", err
	}
	defer removeTree(work)
	home, tmp := filepath.Join(work, "home"), filepath.Join(work, "tmp")
	os.Mkdir(home, 0o700)
	os.Mkdir(tmp, 0o700)
	var kill atomic.Value // func(), once the command started
	out := &limitedBuffer{max: maxVersionOutput, onOver: func() {
		if k, ok := kill.Load().(func()); ok {
			k()
		}
	}}
	args := append([]string{}, g.Version...)
	path := g.Path
	if args[0] != g.Command[0] {
		if path, err = exec.LookPath(args[0]); err != nil {
			return "", fmt.Errorf("gate %s (%s): its version command %q is not found: %v", g.Name, g.Where, args[0], err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	st, err := runTool(ctx, path, args, work, gateEnv(g, home, tmp), out, out, func(k func()) { kill.Store(k) })
	switch {
	case err != nil:
		return "", fmt.Errorf("gate %s (%s): running its version command %q: %w", g.Name, g.Where, strings.Join(args, " "), err)
	case st.timedOut:
		return "", fmt.Errorf("gate %s (%s): its version command %q did not finish within %s", g.Name, g.Where, strings.Join(args, " "), VersionTimeout)
	case out.over.Load():
		return "", fmt.Errorf("gate %s (%s): its version command printed more than %s", g.Name, g.Where, dist.HumanSize(maxVersionOutput))
	case st.code != 0:
		return "", fmt.Errorf("gate %s (%s): its version command %q exited with status %d: %s\nhint: set version = [...] in the gate to a command that prints the tool's version",
			g.Name, g.Where, strings.Join(args, " "), st.code, dist.Printable(strings.TrimSpace(out.String())))
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, dist.Printable(l))
		}
	}
	tool := strings.Join(lines, "; ")
	if tool == "" {
		return "", fmt.Errorf("gate %s (%s): its version command %q printed nothing\nhint: set version = [...] in the gate", g.Name, g.Where, strings.Join(args, " "))
	}
	if len(tool) > dist.MaxGateText {
		tool = strings.ToValidUTF8(tool[:dist.MaxGateText-3], "") + "..."
	}
	return tool, nil
}

// runGate runs gate r.g over r.t and fills r.
func (e *exporter) runGate(ctx context.Context, r *gateOutcome) {
	g, t := r.g, r.t
	r.report = filepath.Join(e.opt.GateReports, g.Name, t.slug()+".report")
	r.log = filepath.Join(e.opt.GateReports, g.Name, t.slug()+".log")
	if err := os.MkdirAll(filepath.Dir(r.report), 0o755); err != nil {
		r.err = err
		return
	}
	work := filepath.Join(e.opt.CacheDir, "gates", g.Name, runKey(g.Name, t.slug()))
	if err := os.MkdirAll(filepath.Dir(work), 0o755); err != nil {
		r.err = err
		return
	}
	unlock, err := osfile.LockPath(work + ".lock")
	if err != nil {
		r.err = err
		return
	}
	defer unlock()
	removeTree(work) // what a killed export left
	defer removeTree(work)
	if err := os.Mkdir(work, 0o700); err != nil {
		r.err = err
		return
	}
	target, err := unpackTarget(ctx, t, work)
	if err != nil {
		r.err = fmt.Errorf("unpacking it for the scanner: %w", err)
		return
	}
	home, tmp := filepath.Join(work, "home"), filepath.Join(work, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			r.err = err
			return
		}
	}
	args, usesReport := gateArgs(g.Command, t, target, r.report)
	r.err = e.execGate(ctx, r, args, usesReport, gateEnv(g, home, tmp), work)
}

// runKey is a short fixed directory name for a gate's run on an entry.
func runKey(gate, slug string) string {
	h := sha256.Sum256([]byte(gate + "\x00" + slug))
	return hex.EncodeToString(h[:8])
}

// unpackTarget unpacks what the gate scans under work/tree and returns
// the path {dir} or {binary} names.
func unpackTarget(ctx context.Context, t gateTarget, work string) (string, error) {
	tree := filepath.Join(work, "tree")
	if t.kind == dist.GateModules {
		if err := getter.Unpack(ctx, t.archive, tree, getter.NewBudget()); err != nil {
			return "", err
		}
		return filepath.Join(tree, filepath.FromSlash(t.subdir)), nil
	}
	if err := getter.UnpackPackage(ctx, t.zip, tree, check.MaxZipEntries, check.MaxZipUnpacked); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(tree)
	if err != nil {
		return "", err
	}
	for _, ent := range ents { // sorted by name
		if ent.Type().IsRegular() && goinfo.IsPlugin(ent.Name()) {
			return filepath.Join(tree, ent.Name()), nil
		}
	}
	return "", errors.New("the package holds no plugin binary (terraform-provider-*)")
}

// gateArgs replaces the placeholders in the command's arguments.
func gateArgs(cmd []string, t gateTarget, target, report string) (args []string, usesReport bool) {
	r := strings.NewReplacer("{dir}", target, "{binary}", target, "{address}", t.addr, "{version}", t.version, "{platform}", t.platform, "{report}", report)
	for _, a := range cmd {
		usesReport = usesReport || strings.Contains(a, "{report}")
		args = append(args, r.Replace(a))
	}
	return args, usesReport
}

// execGate runs the tool and turns what it did into r.res (or an error:
// cut off, no report).
func (e *exporter) execGate(ctx context.Context, r *gateOutcome, args []string, usesReport bool, env []string, work string) error {
	g := r.g
	logf, err := os.Create(r.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	var kill atomic.Value // func(), set once the tool started
	killNow := func() {
		if k, ok := kill.Load().(func()); ok {
			k()
		}
	}
	logw := &cappedFile{f: logf, max: g.MaxOutput, onOver: killNow}
	stdout := io.Writer(logw)
	var outw *cappedFile
	if !usesReport {
		rf, err := os.Create(r.report)
		if err != nil {
			return err
		}
		defer rf.Close()
		outw = &cappedFile{f: rf, max: g.MaxOutput, onOver: killNow}
		stdout = outw
	} else {
		os.Remove(r.report)
	}
	rctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	var reportOver atomic.Bool
	stopWatch := make(chan struct{})
	var wg sync.WaitGroup
	if usesReport {
		wg.Add(1)
		go func() { // the report's size, while the tool runs
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopWatch:
					return
				case <-tick.C:
					if fi, err := os.Stat(r.report); err == nil && fi.Size() > g.MaxOutput {
						reportOver.Store(true)
						killNow()
						return
					}
				}
			}
		}()
	}
	st, err := runTool(rctx, g.Path, args, work, env, stdout, logw, func(k func()) { kill.Store(k) })
	close(stopWatch)
	wg.Wait()
	what := fmt.Sprintf("its output: %s%s", r.log, tail(r.log))
	switch {
	case err != nil:
		return fmt.Errorf("starting %s: %w", g.Command[0], err)
	case ctx.Err() != nil:
		return ctx.Err()
	case st.timedOut:
		return fmt.Errorf("cut off after %s (the gate's timeout); %s", g.Timeout, what)
	case logw.over.Load() || outw != nil && outw.over.Load():
		return fmt.Errorf("cut off: it printed more than %s (the gate's max_output); %s", dist.HumanSize(g.MaxOutput), what)
	case reportOver.Load():
		return fmt.Errorf("cut off: its report grew past %s (the gate's max_output); %s", dist.HumanSize(g.MaxOutput), what)
	case st.signal != "":
		return fmt.Errorf("killed by %s; %s", st.signal, what)
	}
	fi, err := os.Stat(r.report)
	switch {
	case usesReport && err != nil && st.code != 0:
		return fmt.Errorf("exited with status %d without writing its report ({report}); %s", st.code, what)
	case usesReport && err != nil:
		return fmt.Errorf("exited with status 0 without writing its report ({report}); %s", what)
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("its report (%s) is not a regular file", r.report)
	case fi.Size() > g.MaxOutput:
		return fmt.Errorf("its report is %s, over the gate's max_output (%s)", dist.HumanSize(fi.Size()), dist.HumanSize(g.MaxOutput))
	}
	d, path, size, findings, err := e.admitReport(r.report)
	if err != nil {
		return err
	}
	e.addBlob(d, size, dist.RoleGateReport, path)
	res := dist.GateResult{Gate: g.Name, Tool: g.Tool, Status: dist.GatePassed, ExitCode: st.code, Findings: findings, Report: d, ReportBytes: size}
	if !dist.Passes(st.code, findings, g.FailLevel) {
		w, ok := waiver(e.req.Waivers, g.Name, r.t.addr, r.t.version)
		r.failed = !ok
		res.Status, res.Waiver = dist.GateWaived, w.Reason
	}
	r.res = res
	return nil
}

// tail is the last lines of a tool's output (at most 4 lines, 600 bytes),
// escaped and indented, for an error message.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 600
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	out := ""
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out += "\n    | " + dist.Printable(l)
		}
	}
	return out
}

// admitReport copies a report into the cache under its digest and counts
// its SARIF findings (nil when it is not SARIF).
func (e *exporter) admitReport(report string) (d verify.Digest, path string, size int64, f *dist.GateFindings, err error) {
	in, err := os.Open(report)
	if err != nil {
		return "", "", 0, nil, err
	}
	defer in.Close()
	tmp := e.tmpPath()
	out, err := os.Create(tmp)
	if err != nil {
		return "", "", 0, nil, err
	}
	d, size, err = verify.CopyDigest(out, io.LimitReader(in, bundle.MaxReportSize+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && size > bundle.MaxReportSize {
		err = fmt.Errorf("the report is over %s", dist.HumanSize(bundle.MaxReportSize))
	}
	if err != nil {
		os.Remove(tmp)
		return "", "", 0, nil, err
	}
	rf, err := os.Open(tmp)
	if err != nil {
		return "", "", 0, nil, err
	}
	f, ok := dist.CountSARIF(rf)
	rf.Close()
	if !ok {
		f = nil
	}
	if p, _, cached := e.cached(d); cached {
		os.Remove(tmp)
		return d, p, size, f, nil
	}
	path, err = e.admit(tmp, d)
	return d, path, size, f, err
}

// toolStatus is how a tool's run ended.
type toolStatus struct {
	code     int
	timedOut bool
	signal   string
}

// runTool runs path with args (args[0] as its name) in dir with env, its
// output to stdout and stderr, in a process group of its own that the end
// of ctx kills whole. started receives the function that kills the group,
// once the tool runs (for the output limits).
func runTool(ctx context.Context, path string, args []string, dir string, env []string, stdout, stderr io.Writer, started func(kill func())) (toolStatus, error) {
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stdout, stderr
	cmd.SysProcAttr = gateProcAttr()
	cmd.WaitDelay = 5 * time.Second // output pipes held by a stray child do not hold the export
	if err := cmd.Start(); err != nil {
		return toolStatus{}, err
	}
	var once sync.Once
	killGroupOnce := func() { once.Do(func() { killGroup(cmd.Process.Pid) }) }
	started(killGroupOnce)
	done := make(chan struct{})
	var timedOut atomic.Bool
	go func() {
		select {
		case <-ctx.Done():
			timedOut.Store(errors.Is(ctx.Err(), context.DeadlineExceeded))
			killGroupOnce()
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	killGroupOnce() // children it left behind
	st := toolStatus{code: cmd.ProcessState.ExitCode(), timedOut: timedOut.Load()}
	if st.code < 0 {
		st.signal = cmd.ProcessState.String()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return st, err
	}
	return st, nil
}

// cappedFile writes to f up to max bytes; past that it calls onOver
// (which kills the tool) and drops the rest.
type cappedFile struct {
	f      *os.File
	n, max int64
	over   atomic.Bool
	onOver func()
}

func (c *cappedFile) Write(p []byte) (int, error) {
	if room := c.max - c.n; int64(len(p)) > room {
		if room > 0 {
			c.f.Write(p[:room])
			c.n += room
		}
		if !c.over.Swap(true) {
			c.onOver()
		}
		return len(p), nil
	}
	n, err := c.f.Write(p)
	c.n += int64(n)
	return len(p), err
}

// limitedBuffer keeps up to max bytes of a version command's output; past
// that it calls onOver (which kills the command) and drops the rest.
type limitedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	max    int
	over   atomic.Bool
	onOver func()
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.b.Len(); len(p) > room {
		l.b.Write(p[:max(room, 0)])
		if !l.over.Swap(true) {
			l.onOver()
		}
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// removeTree removes a run's directory even where the tool left
// directories without write permission.
func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
