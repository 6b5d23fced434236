package registrytest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var guard *Guard

// TestMain runs this package's tests under the guard without failing on
// what it refuses: here that is what they check.
func TestMain(m *testing.M) {
	if os.Getenv(guardChildEnv) != "" { // TestRunGuardedFails' child
		os.Exit(RunGuarded(m))
	}
	var err error
	if guard, err = GuardNetwork(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	guard.Close()
	os.Exit(code)
}

// refused returns what the guard refused while f ran.
func refused(t *testing.T, f func()) []string {
	t.Helper()
	before := map[string]bool{}
	for _, a := range guard.Asked() {
		before[a] = true
	}
	f()
	var out []string
	for _, a := range guard.Asked() {
		if !before[a] {
			out = append(out, a)
		}
	}
	return out
}

func wantRefused(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("the guard did not record %q; it recorded %q", w, got)
		}
	}
}

func gitCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Env = append(env, "GIT_TERMINAL_PROMPT=0")
	return cmd
}

// An in-process Go client with the default transport goes to the
// sinkhole, which answers 403 and names the host.
func TestGuardGoClient(t *testing.T) {
	got := refused(t, func() {
		if _, err := http.Get("https://unreached.example/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("https through the guard: %v", err)
		}
		resp, err := http.Get("http://unreached.example/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "tests may not reach unreached.example") {
			t.Errorf("plain http through the guard: %d %s", resp.StatusCode, b)
		}
	})
	wantRefused(t, got, `CONNECT "unreached.example:443"`, `GET "unreached.example"`)
}

// A dial by name that skips the proxy asks the guard's resolver, which
// answers "no such host"; /etc/hosts names still resolve.
func TestGuardDNS(t *testing.T) {
	got := refused(t, func() {
		tr := &http.Transport{} // no Proxy
		if _, err := (&http.Client{Transport: tr}).Get("https://unreached.example/"); err == nil || !strings.Contains(err.Error(), "no such host") {
			t.Errorf("a direct dial: %v", err)
		}
		if _, err := net.LookupHost("localhost"); err != nil {
			t.Errorf("localhost: %v", err)
		}
	})
	wantRefused(t, got, `DNS lookup "unreached.example."`)
	for _, g := range got {
		if strings.Contains(g, "localhost") {
			t.Errorf("localhost was asked of the resolver: %s", g)
		}
	}
}

// git (curl) inherits the guard from the environment: https and ssh are
// refused and recorded, plain loopback goes direct (NO_PROXY).
func TestGuardGit(t *testing.T) {
	in := New(t)
	in.AddGitRepo(t, "example/repo", "v1", map[string]string{"a": "a"})
	direct := httptest.NewServer(http.HandlerFunc(in.git))
	defer direct.Close()
	got := refused(t, func() {
		out, err := gitCmd(os.Environ(), "ls-remote", "https://github.com/example/repo").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "403") {
			t.Errorf("git over https through the guard: %v\n%s", err, out)
		}
		out, err = gitCmd(os.Environ(), "ls-remote", "git@github.com:example/repo.git").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "tests may not reach a host over ssh") {
			t.Errorf("git over ssh under the guard: %v\n%s", err, out)
		}
		if out, err := gitCmd(os.Environ(), "ls-remote", direct.URL+"/example/repo").CombinedOutput(); err != nil || !strings.Contains(string(out), "refs/tags/v1") {
			t.Errorf("git to a loopback server under the guard: %v\n%s", err, out)
		}
	})
	wantRefused(t, got, `CONNECT "github.com:443" (git/`, `ssh "`)
}

// The stand-in's Env, after the guard's, replaces it: the real names
// reach the stand-in, and nothing is refused.
func TestGuardStandInEnvWins(t *testing.T) {
	in := New(t)
	in.AddGitRepo(t, "example/repo", "v1", map[string]string{"a": "a"})
	got := refused(t, func() {
		env := append(append(os.Environ(), GuardEnv()...), in.Env()...)
		if out, err := gitCmd(env, "ls-remote", "https://github.com/example/repo").CombinedOutput(); err != nil || !strings.Contains(string(out), "refs/tags/v1") {
			t.Errorf("git through the stand-in: %v\n%s", err, out)
		}
	})
	if len(got) > 0 {
		t.Errorf("the guard refused %q", got)
	}
}

// The stand-in reaches nothing off loopback: its Transport does not look
// up a name it does not answer for, and no CONNECT tunnel leaves loopback.
func TestStandInStaysOnLoopback(t *testing.T) {
	in := New(t)
	got := refused(t, func() {
		c := &http.Client{Transport: in.Transport()}
		if _, err := c.Get("https://unreachable.invalid/"); err == nil || !strings.Contains(err.Error(), "no route to unreachable.invalid") {
			t.Errorf("Transport to an unknown host: %v", err)
		}
		for _, proxy := range []string{in.Proxy.URL, DNSOverride(t, "unreachable.invalid:443")} {
			pu, _ := http.NewRequest("GET", proxy, nil)
			tr := &http.Transport{Proxy: http.ProxyURL(pu.URL), TLSClientConfig: &tls.Config{RootCAs: in.CertPool}}
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", "https://unreachable.invalid/", nil)
			if _, err := (&http.Client{Transport: tr}).Do(req); err == nil || !strings.Contains(err.Error(), "Bad Gateway") {
				t.Errorf("CONNECT through %s: %v", proxy, err)
			}
			cancel()
		}
	})
	if len(got) > 0 {
		t.Errorf("the guard refused %q", got)
	}
}

// guardChildEnv makes this test binary a package run under RunGuarded
// whose one test (TestGuardChild) asks for what the variable names.
const guardChildEnv = "REGISTRYTEST_GUARD_CHILD"

// TestGuardChild is TestRunGuardedFails' child: it passes, whatever the
// guard refuses, so that the child's exit code is the guard's verdict.
func TestGuardChild(t *testing.T) {
	switch os.Getenv(guardChildEnv) {
	case "": // in the package's own run: nothing to do
	case "lookup":
		net.LookupHost("leak.example")
	case "proxy":
		if resp, err := http.Get("http://leak.example/"); err == nil {
			resp.Body.Close()
		}
	case "git":
		gitCmd(os.Environ(), "ls-remote", "https://github.com/example/leak").Run()
	case "loopback":
		net.LookupHost("localhost")
		srv := httptest.NewServer(http.NotFoundHandler())
		defer srv.Close()
		if resp, err := http.Get(srv.URL); err == nil {
			resp.Body.Close()
		}
	}
}

// TestRunGuardedFails: a package whose tests pass but ask for a host off
// this machine — a lookup of a name that is not loopback's in the test
// process, a request through the sinkhole, git — fails its run (exit 1),
// naming what was asked; one that stays on loopback passes.
func TestRunGuardedFails(t *testing.T) {
	for _, c := range []struct{ what, want string }{
		{"lookup", `DNS lookup "leak.example." (TypeA) in the test process`},
		{"proxy", `GET "leak.example"`},
		{"git", `CONNECT "github.com:443" (git/`},
		{"loopback", ""},
	} {
		t.Run(c.what, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestGuardChild$", "-test.count=1", "-test.v")
			cmd.Env = append(UnguardedEnv(), guardChildEnv+"="+c.what)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if code != 0 || strings.Contains(string(out), "network guard") {
					t.Errorf("a run on loopback: exit %d\n%s", code, out)
				}
				return
			}
			if code != 1 || !strings.Contains(string(out), "--- PASS: TestGuardChild") ||
				!strings.Contains(string(out), "network guard: the tests asked for hosts off this machine:") || !strings.Contains(string(out), c.want) {
				t.Errorf("a run that asked for %s: exit %d, want 1 naming %q:\n%s", c.what, code, c.want, out)
			}
		})
	}
}
