package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/airgap/airgap/dist"
)

// Bounds on a credentials helper. A helper is a program the CLI
// configuration names; it is trusted to run (as Terraform runs it), not
// trusted to behave.
const (
	// MaxHelperOutput bounds what a helper may print on stdout: a JSON
	// object with a token (real tokens, JWTs included, are a few KiB). A
	// helper that prints more is stopped.
	MaxHelperOutput = 64 << 10
	// MaxTokenSize bounds the token itself.
	MaxTokenSize = 16 << 10
	// maxHelperStderr is how much of a failing helper's stderr a message
	// repeats.
	maxHelperStderr = 2 << 10
)

// ErrCredentialsHelper: the credentials helper failed, hung or printed
// something other than Terraform's protocol allows.
var ErrCredentialsHelper = errors.New("credentials helper")

// CredentialsHelper runs a terraform-credentials-NAME program the way
// Terraform does (terraform-svchost's auth.HelperProgramCredentialsSource):
// PATH ARGS... get HOST, HOST in punycode, no stdin, and reads one JSON
// object from its stdout: {"token": "…"} is a token, an object without
// "token" (e.g. {}) means the helper has none for that host. Each host is
// asked once per run.
//
// Unlike Terraform, which waits for ever and reads whatever comes, airgap
// bounds it: the helper must exit within Timeout (the metadata timeout, 10 s
// or TF_REGISTRY_CLIENT_TIMEOUT) and print at most MaxHelperOutput bytes, or
// it is killed (its whole process group, on Unix); output that is not a JSON
// object, a token that is not a string, is empty where present, is over
// MaxTokenSize or holds anything but printable ASCII without spaces (it goes
// into an Authorization header) fails the export with a message naming the
// helper and the host. Messages never repeat the helper's stdout (it may
// hold a secret), only its stderr, bounded and escaped.
type CredentialsHelper struct {
	Name    string
	Path    string
	Args    []string
	At      string // where the CLI configuration names it
	Timeout time.Duration

	answers memo[string]
}

var reHelperName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// findCredentialsHelper locates terraform-credentials-NAME where Terraform
// looks for it (pluginDiscovery.FindPlugins over its global plugin
// directories): configDir()/plugins and configDir()/plugins/OS_ARCH, named
// terraform-credentials-NAME or terraform-credentials-NAME_vX.Y.Z (the
// newest version wins; .exe on Windows). A helper that is not there is an
// error (Terraform only logs it and sends no credentials: a silent 401 later
// would be harder to understand).
func findCredentialsHelper(name string, args []string, at string) (*CredentialsHelper, error) {
	if !reHelperName.MatchString(name) {
		return nil, fmt.Errorf("%w: %s: credentials_helper %q: not a plain program name", ErrCLIConfig, at, dist.Printable(name))
	}
	dirs := []string{filepath.Join(configDir(), "plugins"), filepath.Join(configDir(), "plugins", runtime.GOOS+"_"+runtime.GOARCH)}
	prefix := "terraform-credentials-" + name
	best, bestV := "", (*version.Version)(nil)
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := strings.TrimSuffix(e.Name(), ".exe")
			var v *version.Version
			switch {
			case n == prefix:
				v = version.Must(version.NewVersion("0.0.0"))
			case strings.HasPrefix(n, prefix+"_v"):
				vs, _, _ := strings.Cut(strings.TrimPrefix(n, prefix+"_v"), "_")
				pv, err := version.NewVersion(vs)
				if err != nil {
					continue
				}
				v = pv
			default:
				continue
			}
			p := filepath.Join(dir, e.Name())
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode()&0o111 == 0) {
				continue
			}
			if bestV == nil || v.GreaterThan(bestV) {
				best, bestV = p, v
			}
		}
	}
	if best == "" {
		return nil, fmt.Errorf("%w: %s: credentials_helper %q: no executable %s in %s\nhint: install the helper there (as for Terraform), or remove the block", ErrCLIConfig, at, name, prefix, strings.Join(dirs, " or "))
	}
	return &CredentialsHelper{Name: name, Path: best, Args: args, At: at, Timeout: metadataTimeout()}, nil
}

// Token asks the helper for host's token (once per host).
func (h *CredentialsHelper) Token(ctx context.Context, host string) (string, error) {
	return h.answers.do(host, func() (string, error) { return h.run(ctx, host) })
}

// cappedBuffer keeps at most max bytes; more marks it spilt and calls over
// (once).
type cappedBuffer struct {
	b     []byte
	max   int
	over  func()
	spilt bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - len(c.b)
	if len(p) <= room {
		c.b = append(c.b, p...)
		return len(p), nil
	}
	c.b = append(c.b, p[:max(room, 0)]...)
	if !c.spilt {
		c.spilt = true
		if c.over != nil {
			c.over()
		}
	}
	return len(p), nil
}

func (h *CredentialsHelper) run(ctx context.Context, host string) (string, error) {
	what := fmt.Sprintf("terraform-credentials-%s (%s, named at %s), asked for %s", h.Name, h.Path, h.At, host)
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = metadataTimeout()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Path, append(append([]string{}, h.Args...), "get", host)...)
	killGroup(cmd)
	cmd.Env = dist.ChildEnv() // the environment, without airgap's own secrets
	cmd.WaitDelay = time.Second
	stdout := &cappedBuffer{max: MaxHelperOutput, over: cancel}
	stderr := &cappedBuffer{max: maxHelperStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	switch {
	case stdout.spilt:
		return "", helperErr(what, "it printed more than %d bytes and was stopped\nhint: a helper prints one small JSON object, {\"token\": \"…\"}; check the helper; nothing was written", MaxHelperOutput)
	case ctx.Err() == context.DeadlineExceeded:
		return "", helperErr(what, "no answer within %s; it was stopped\nhint: the helper must answer within the metadata timeout (TF_REGISTRY_CLIENT_TIMEOUT seconds, default 10); check that it does not wait for input; nothing was written", timeout)
	case err != nil:
		msg := strings.TrimSpace(string(stderr.b))
		if msg == "" {
			msg = "(it wrote no error message)"
		}
		return "", helperErr(what, "%v: %s", err, dist.Printable(msg))
	}
	return parseHelperOutput(what, stdout.b)
}

func helperErr(what, format string, a ...any) error {
	return fmt.Errorf("%w %s: %s", ErrCredentialsHelper, what, fmt.Sprintf(format, a...))
}

// helperJSON bounds a credentials helper's answer: one small object.
var helperJSON = dist.JSONLimit{MaxBytes: MaxHelperOutput, MaxDepth: MaxJSONDepth}

// parseHelperOutput reads the helper's JSON answer (within helperJSON).
func parseHelperOutput(what string, out []byte) (string, error) {
	var m map[string]json.RawMessage
	if err := helperJSON.Unmarshal(out, &m); err != nil || m == nil {
		return "", helperErr(what, "its output (%d bytes) is not a JSON object\nhint: the helper must print {\"token\": \"…\"} (or {} when it has no token for the host); check it by running it with 'get HOST'; nothing was written", len(out))
	}
	raw, ok := m["token"]
	if !ok {
		return "", nil // no credentials for this host
	}
	var tok string
	if err := json.Unmarshal(raw, &tok); err != nil {
		return "", helperErr(what, "its \"token\" is not a JSON string")
	}
	if tok == "" || len(tok) > MaxTokenSize {
		return "", helperErr(what, "its token is empty or longer than %d bytes", MaxTokenSize)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] >= 0x7f {
			return "", helperErr(what, "its token holds a space, a control character or a non-ASCII byte (at byte %d); a token goes into an HTTP header as it is", i)
		}
	}
	return tok, nil
}
