package getter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/portable"
)

// Limits on a git module source, on top of the archive limits, which the
// tree of the commit (and of each submodule's) is checked against before
// anything is checked out.
const (
	// GitTimeout bounds one module's whole git fetch (clones, checks,
	// checkouts, submodules); git also gives up on a transfer slower than
	// 1 KiB/s for 60 s.
	GitTimeout = 30 * time.Minute
	// MaxGitRepository: bytes the git objects of one fetch (the
	// repository's and every submodule's together) may take on disk, on top
	// of the checked-out files the tree checks allowed; the default of
	// Options.MaxGitSize. See sizeWatch.
	MaxGitRepository = MaxArchiveBytes
	// MaxSubmoduleDepth: nesting of submodules.
	MaxSubmoduleDepth = 4
	// MaxGitAllocation bounds each memory allocation of every git process
	// (GIT_ALLOC_LIMIT): git refuses, and exits, rather than allocate more.
	// A delta in a pack states the size of the object it makes, and
	// index-pack allocates that much to resolve it during the clone, long
	// before any tree check can see the object: a pack of a few KB can
	// describe a blob of many GiB (one copy instruction per 64 KiB of a
	// base of zeros), and three such deltas resolved at once would take
	// all the exporting machine's memory. With index-pack on one thread
	// (pack.threads=1), a git process holds at most a delta's base and its
	// result, each within this bound, plus its delta base cache (96 MiB):
	// about 1.1 GiB at worst. git holds an object whole only up to
	// core.bigFileThreshold (512 MiB; larger ones that are not deltas are
	// streamed), plus one byte; the bound is that and a MiB more.
	MaxGitAllocation = 513 << 20
)

// gitRepoLimit is the default of Options.MaxGitSize; tests lower it.
var gitRepoLimit int64 = MaxGitRepository

// noAttributes is written to $GIT_DIR/info/attributes of every clone
// before anything is checked out. Those lines take precedence over every
// .gitattributes of the repository, so checkout writes each blob's bytes
// as they are: no end-of-line conversion (text, eol, and the legacy crlf),
// no working-tree-encoding (UTF-8 blobs rewritten as UTF-16 or UTF-32), no
// filter drivers, no $Id$ expansion. The bytes written are then the blob
// sizes that checkTree counted, and the files are what the repository
// holds. (GIT_ATTR_NOSYSTEM and core.attributesFile=/dev/null leave out
// the system's and the user's attribute files.)
const noAttributes = "* -text -eol -crlf -filter -working-tree-encoding -ident\n"

// gitConfig is given to every git command: only https and ssh transports
// (file://, local paths, ext::, git:// and plain http:// are refused, for
// submodules too), no hooks, no fsmonitor, abort on stalled transfers.
// Command-line settings override the user's configuration files.
var gitConfig = []string{
	"-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c", "protocol.ssh.allow=always",
	"-c", "protocol.file.allow=never", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
	"-c", "submodule.recurse=false", "-c", "http.lowSpeedLimit=1024", "-c", "http.lowSpeedTime=60",
	"-c", "advice.detachedHead=false", "-c", "core.attributesFile=/dev/null", "-c", "core.autocrlf=false",
	"-c", "core.eol=lf", "-c", "core.protectNTFS=true", "-c", "core.protectHFS=true",
	"-c", "pack.threads=1", // index-pack resolves one delta at a time: see MaxGitAllocation
}

// keptGitEnv: the GIT_* variables of the user's environment passed to git
// (how to reach private hosts); every other GIT_* variable (GIT_DIR,
// GIT_CONFIG_PARAMETERS, GIT_ALLOW_PROTOCOL, …) is dropped.
var keptGitEnv = map[string]bool{"GIT_SSL_CAINFO": true, "GIT_SSL_CAPATH": true, "GIT_SSH": true,
	"GIT_SSH_COMMAND": true, "GIT_SSH_VARIANT": true, "GIT_CONFIG_GLOBAL": true}

// gitEnv: airgap's own secrets are left out (dist.ChildEnv); the system
// configuration is not read (GIT_CONFIG_NOSYSTEM); the
// user's global one is, because credentials, CA files and url.insteadOf
// rules for private git hosts live there, and it is not something a
// registry can write. What matters for safety is forced above it:
// GIT_ALLOW_PROTOCOL overrides any protocol.* setting in any file, and the
// -c settings override the rest. Git LFS smudging is off (it would download
// content the tree check cannot see).
func gitEnv() []string {
	var env []string
	for _, kv := range dist.ChildEnv() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") && !keptGitEnv[k] {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1",
		"GIT_ALLOW_PROTOCOL=https:ssh", "GIT_PROTOCOL_FROM_USER=0", "GIT_LFS_SKIP_SMUDGE=1",
		"GIT_ALLOC_LIMIT="+strconv.Itoa(MaxGitAllocation))
}

// checkGitURL accepts https://, ssh:// and scp-like git@host:path: never a
// local path or file:// (that would copy a repository of the exporting
// machine into the bundle), nor git://, http:// or ext::.
func checkGitURL(u string) error {
	if rest, ok := strings.CutPrefix(u, "git@"); ok {
		host, p, ok := strings.Cut(rest, ":")
		if !ok || !validHost(host) || p == "" || strings.HasPrefix(p, "-") {
			return errors.New("not a git address of the form git@host:path")
		}
		return nil
	}
	pu, err := url.Parse(u)
	if err != nil {
		return err
	}
	switch pu.Scheme {
	case "https", "ssh":
	case "", "file":
		return errors.New("a repository on the local disk; airgap clones git modules only over https:// or ssh://, never from the exporting machine")
	default:
		return fmt.Errorf("git over %s:// is not accepted; airgap clones git modules only over https:// or ssh://", pu.Scheme)
	}
	if !validHost(pu.Hostname()) || strings.HasPrefix(pu.User.Username(), "-") {
		return errors.New("no valid host in the git URL")
	}
	return nil
}

func validHost(h string) bool {
	if h == "" || strings.HasPrefix(h, "-") {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:[]", r)) {
			return false
		}
	}
	return true
}

type gitRunner struct {
	ctx   context.Context // ends at GitTimeout, or when watch stops the fetch
	env   []string
	watch *sizeWatch
	// used: what the trees checked so far (the repository's and its
	// submodules') hold, against the archive limits.
	entries, links int
	bytes          int64
	// names: every path of the trees checked (the repository's and its
	// submodules'), for portableName.
	names *portable.Set
}

// boundedBuffer keeps the first 64 KiB written to it.
type boundedBuffer struct{ bytes.Buffer }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (g *gitRunner) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, gitConfig...), args...)...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, g.env, 5*time.Second
	return cmd
}

func (g *gitRunner) runCtx(ctx context.Context, dir string, args ...string) (string, error) {
	var out boundedBuffer
	cmd := g.command(ctx, dir, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if werr := g.watch.err(args[0]); werr != nil {
			return "", werr
		}
		if cerr := g.ctx.Err(); cerr != nil {
			return "", fmt.Errorf("git %s: %w", args[0], cerr)
		}
		if strings.Contains(out.String(), "over limit "+strconv.Itoa(MaxGitAllocation)) {
			return "", fmt.Errorf("%w: git %s was stopped: an object of the repository takes more than %d bytes to unpack (a delta that describes a huge object in a few bytes, or a file far larger than any module's)",
				ErrArchiveLimit, args[0], MaxGitAllocation)
		}
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, dist.PrintableLines(strings.TrimSpace(out.String())))
	}
	return strings.TrimSpace(out.String()), nil
}

func (g *gitRunner) run(dir string, args ...string) (string, error) {
	return g.runCtx(g.ctx, dir, args...)
}

// write runs a git command that writes into the fetch's directory (clone,
// fetch, checkout) and checks the directory's size once more when it ends,
// so a command that finishes between two of the watcher's looks cannot
// leave more than the allowance behind.
func (g *gitRunner) write(dir string, args ...string) (string, error) {
	out, err := g.run(dir, args...)
	if err == nil && g.watch.exceeded() {
		err = g.watch.err(args[0])
	}
	return out, err
}

// gitFetch clones src into dir (with its submodules) and checks out the
// commit of its ref. Every git process it starts — clone, the fetch of a
// commit no ref advertises, checkout, and the same for each submodule —
// runs under one context that ends at GitTimeout and under one sizeWatch
// over dir, so no process can write more than the allowance or run longer
// than the timeout.
func gitFetch(ctx context.Context, src *Source, dir string, limit int64) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", errors.New("the git binary is needed to fetch git module sources; install git")
	}
	if limit <= 0 {
		limit = gitRepoLimit
	}
	ctx, cancel := context.WithTimeout(ctx, GitTimeout)
	defer cancel()
	ctx, watch := watchSize(ctx, dir, limit)
	defer watch.stop()
	g := &gitRunner{ctx: ctx, env: gitEnv(), watch: watch, names: portable.NewSet()}
	commit, err := g.fetch(src.URL, src.Ref, dir, "", 0)
	if err != nil {
		return "", fmt.Errorf("fetching %s: %w", dist.RedactSource(src.Raw), err)
	}
	// Drop every .git (the repository's and submodules').
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return commit, err
}

// fetch clones u into dir, checks the tree of ref against the limits, then
// checks it out, and does the same for each submodule. prefix is dir's path
// in the module (for names and depth).
func (g *gitRunner) fetch(u, ref, dir, prefix string, depth int) (string, error) {
	if err := g.clone(u, dir); err != nil {
		return "", err
	}
	commit, err := g.resolve(dir, ref)
	if err != nil {
		return "", err
	}
	subs, err := g.checkTree(dir, commit, prefix)
	if err != nil {
		return "", err
	}
	g.watch.allow(g.bytes)
	if _, err := g.write(dir, "checkout", "--quiet", "--detach", commit); err != nil {
		return "", fmt.Errorf("ref %q: %w", ref, err)
	}
	if len(subs) == 0 {
		return commit, nil
	}
	if depth >= MaxSubmoduleDepth {
		return "", fmt.Errorf("%w: submodules nested more than %d deep", ErrArchiveLimit, MaxSubmoduleDepth)
	}
	urls, err := g.submoduleURLs(dir, commit)
	if err != nil {
		return "", err
	}
	for _, s := range subs {
		raw, ok := urls[s[0]]
		if !ok {
			return "", fmt.Errorf("submodule %q has no URL in .gitmodules", prefix+s[0])
		}
		su, err := resolveSubmoduleURL(u, raw)
		if err == nil {
			err = checkGitURL(su)
		}
		if err != nil {
			return "", fmt.Errorf("%w: submodule %q (%q): %v", ErrUnsupported, prefix+s[0], raw, err)
		}
		sub := filepath.Join(dir, filepath.FromSlash(s[0]))
		if err := plainDir(dir, s[0]); err != nil {
			return "", err
		}
		if err := os.Remove(sub); err != nil {
			return "", fmt.Errorf("submodule %q: %v", prefix+s[0], errno(err))
		}
		if _, err := g.fetch(su, s[1], sub, prefix+s[0]+"/", depth+1); err != nil {
			return "", fmt.Errorf("submodule %q: %w", prefix+s[0], err)
		}
	}
	return commit, nil
}

// plainDir checks that rel (a gitlink path git checked out as an empty
// directory) is a directory under dir reached through no symlink.
func plainDir(dir, rel string) error {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return fmt.Errorf("%w: submodule path %q", ErrUnsafeArchive, rel)
	}
	p := dir
	for _, c := range strings.Split(rel, "/") {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: submodule path %q is not a plain directory", ErrUnsafeArchive, rel)
		}
	}
	return nil
}

// clone runs git clone --no-checkout (under the fetch's size watch) and
// writes noAttributes into the new repository before anything is checked
// out.
func (g *gitRunner) clone(u, dir string) error {
	if _, err := g.write("", "clone", "--quiet", "--no-checkout", "--", u, dir); err != nil {
		if errors.Is(err, ErrArchiveLimit) || g.ctx.Err() != nil {
			return err // stopped by a bound or by Ctrl-C, not refused
		}
		return cloneError{err}
	}
	info := filepath.Join(dir, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(info, "attributes"), []byte(noAttributes), 0o644)
}

// sizeWatch bounds what the git processes of one fetch write: the bytes
// under its directory (every clone's .git, the submodules' included, and
// the checked-out files) may not pass limit plus the bytes of the blobs
// the tree checks let through for checkout (allow). It looks every
// interval — 200 ms, or five times as long as its last walk of the
// directory took, so watching a large checkout costs at most a fifth of a
// core — and cancels the fetch's context when the sum is over. Worst case
// on disk: the allowance plus what git writes in one interval; a tree of
// more than maxWatchedFiles files counts as over (no checkout the tree
// checks allow holds that many).
type sizeWatch struct {
	dir     string
	limit   int64
	checked atomic.Int64
	over    atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{}
	exited  chan struct{}
}

// maxWatchedFiles: files a fetch's directory may hold (the checkout's
// entries at most, plus git's own).
const maxWatchedFiles = MaxArchiveEntries + 50_000

func watchSize(ctx context.Context, dir string, limit int64) (context.Context, *sizeWatch) {
	ctx, cancel := context.WithCancel(ctx)
	w := &sizeWatch{dir: dir, limit: limit, cancel: cancel, done: make(chan struct{}), exited: make(chan struct{})}
	go w.run()
	return ctx, w
}

func (w *sizeWatch) run() {
	defer close(w.exited)
	wait := 200 * time.Millisecond
	for {
		select {
		case <-w.done:
			return
		case <-time.After(wait):
		}
		start := time.Now()
		if w.exceeded() {
			return
		}
		wait = max(200*time.Millisecond, 5*time.Since(start))
	}
}

// allow raises the allowance to limit plus checked bytes of checkout.
func (w *sizeWatch) allow(checked int64) { w.checked.Store(checked) }

// exceeded measures the directory now; when it is over the allowance it
// stops the fetch (cancelling its context) and reports true from then on.
func (w *sizeWatch) exceeded() bool {
	if w.over.Load() {
		return true
	}
	if n, files := dirUsage(w.dir); n > w.limit+w.checked.Load() || files > maxWatchedFiles {
		w.over.Store(true)
		w.cancel()
	}
	return w.over.Load()
}

// err is the error of a git command that the watch stopped, or nil.
func (w *sizeWatch) err(command string) error {
	if w == nil || !w.over.Load() {
		return nil
	}
	return fmt.Errorf("%w: git %s was stopped: the repository (its submodules included) takes more than %d bytes beyond the %d bytes of files its tree checks out",
		ErrGitTooLarge, command, w.limit, w.checked.Load())
}

func (w *sizeWatch) stop() {
	close(w.done)
	<-w.exited
	w.cancel()
}

// dirUsage sums the sizes of the regular files under dir and counts them;
// it stops counting past maxWatchedFiles files.
func dirUsage(dir string) (n int64, files int) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if files++; files > maxWatchedFiles {
			return filepath.SkipAll
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n, files
}

// resolve finds the commit of ref (a tag, a branch, a commit; HEAD if
// empty), fetching a commit that no branch or tag reaches.
func (g *gitRunner) resolve(dir, ref string) (string, error) {
	cands := []string{"HEAD"}
	if ref != "" {
		cands = []string{ref, "refs/remotes/origin/" + ref}
	}
	for _, c := range cands {
		if out, err := g.run(dir, "rev-parse", "--verify", "--quiet", "--end-of-options", c+"^{commit}"); err == nil {
			return out, nil
		}
	}
	if isHexCommit(ref) {
		_, err := g.write(dir, "fetch", "--quiet", "origin", ref)
		if errors.Is(err, ErrArchiveLimit) {
			return "", err
		}
		if err == nil {
			if out, err := g.run(dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}"); err == nil {
				return out, nil
			}
		}
	}
	return "", fmt.Errorf("ref %q: %w", ref, ErrRefNotFound)
}

func isHexCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// checkTree streams "git ls-tree -r -t -l -z" of commit and applies the
// archive limits to what a checkout would write — entries (directories
// included), bytes, links, name length, depth, printable names — before
// anything is checked out; it stops git at the first limit. It returns the
// submodules (gitlinks) as path and commit.
func (g *gitRunner) checkTree(dir, commit, prefix string) ([][2]string, error) {
	var subs [][2]string
	err := g.lsTree(dir, []string{"-r", "-t", "-l", "-z", "--full-tree", commit}, ErrUnsafeArchive, func(rec []byte) error {
		return g.treeEntry(rec, prefix, &subs)
	})
	return subs, err
}

// lsTree streams the NUL-terminated records of "git ls-tree ARGS" to each
// (without the NUL), a record at most MaxArchiveName+256 bytes (longer
// is unsafe, a wrapped error), and stops git at the first error each
// returns.
func (g *gitRunner) lsTree(dir string, args []string, unsafe error, each func(rec []byte) error) error {
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	var stderr boundedBuffer
	cmd := g.command(ctx, dir, append([]string{"ls-tree"}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(out, MaxArchiveName+256)
	var ferr error
	for ferr == nil {
		rec, err := br.ReadSlice(0)
		if err == io.EOF && len(rec) == 0 {
			break
		}
		if err != nil {
			ferr = fmt.Errorf("%w: an entry name is longer than %d bytes, or git ls-tree failed (%v)", unsafe, MaxArchiveName, err)
			break
		}
		ferr = each(rec[:len(rec)-1])
	}
	if ferr != nil {
		cancel()
		cmd.Wait()
		return ferr
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git ls-tree: %v: %s", err, dist.PrintableLines(strings.TrimSpace(stderr.String())))
	}
	return nil
}

// treeEntry applies the limits to one "<mode> <type> <object> <size>\t<path>".
func (g *gitRunner) treeEntry(rec []byte, prefix string, subs *[][2]string) error {
	meta, p, ok := bytes.Cut(rec, []byte{'\t'})
	f := strings.Fields(string(meta))
	if !ok || len(f) != 4 {
		return fmt.Errorf("git ls-tree: unexpected output %q", rec)
	}
	name := prefix + string(p)
	if g.entries++; g.entries > MaxArchiveEntries {
		return fmt.Errorf("%w: more than %d entries (directories included)", ErrArchiveLimit, MaxArchiveEntries)
	}
	if len(name) > MaxArchiveName {
		return fmt.Errorf("%w: an entry name is longer than %d bytes", ErrUnsafeArchive, MaxArchiveName)
	}
	if err := printableName("file", name); err != nil {
		return err
	}
	if err := portableName(g.names, name); err != nil {
		return err
	}
	if strings.Count(name, "/") >= MaxArchiveDepth {
		return fmt.Errorf("%w: %q is more than %d directories deep", ErrArchiveLimit, name, MaxArchiveDepth)
	}
	switch f[1] {
	case "blob":
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("git ls-tree: unexpected size in %q", rec)
		}
		if g.bytes += size; g.bytes > MaxArchiveBytes {
			return fmt.Errorf("%w: unpacks to more than %d bytes", ErrArchiveLimit, MaxArchiveBytes)
		}
		if f[0] == "120000" {
			if g.links++; g.links > MaxArchiveLinks {
				return fmt.Errorf("%w: more than %d symbolic links", ErrArchiveLimit, MaxArchiveLinks)
			}
		}
	case "commit":
		if !isHexCommit(f[2]) {
			return fmt.Errorf("git ls-tree: unexpected submodule commit in %q", rec)
		}
		*subs = append(*subs, [2]string{string(p), f[2]})
	}
	return nil
}

// submoduleURLs reads .gitmodules from the commit (never from the checkout,
// where it could be a link): path -> url.
func (g *gitRunner) submoduleURLs(dir, commit string) (map[string]string, error) {
	out, err := g.run(dir, "config", "--blob", commit+":.gitmodules", "-z", "--get-regexp", `^submodule\..*\.(path|url)$`)
	if err != nil {
		return nil, fmt.Errorf("reading .gitmodules: %w", err)
	}
	paths, urls := map[string]string{}, map[string]string{}
	for _, kv := range strings.Split(out, "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		if name, ok := strings.CutSuffix(k, ".path"); ok {
			paths[name] = v
		} else if name, ok := strings.CutSuffix(k, ".url"); ok {
			urls[name] = v
		}
	}
	byPath := map[string]string{}
	for name, p := range paths {
		if u, ok := urls[name]; ok {
			byPath[path.Clean(p)] = u
		}
	}
	return byPath, nil
}

// resolveSubmoduleURL resolves a relative submodule URL ("./x", "../x")
// against the superproject's URL, as git does.
func resolveSubmoduleURL(base, rel string) (string, error) {
	if !strings.HasPrefix(rel, "./") && !strings.HasPrefix(rel, "../") {
		return rel, nil
	}
	if strings.HasPrefix(base, "git@") {
		host, p, _ := strings.Cut(base, ":")
		j := path.Join(p, rel)
		if strings.HasPrefix(j, "..") {
			return "", fmt.Errorf("relative URL %q leaves %q", rel, base)
		}
		return host + ":" + j, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path, u.RawPath, u.RawQuery = path.Join("/", u.Path, rel), "", ""
	return u.String(), nil
}
