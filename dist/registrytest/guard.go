package registrytest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Guard is the network guard of a test process (GuardNetwork): a
// "sinkhole" proxy on loopback that every client of the process and of the
// programs it starts is sent to for any host that is not on loopback, and
// that refuses each request (403, "tests may not reach HOST") and records
// it.
type Guard struct {
	URL string // the sinkhole, http://127.0.0.1:PORT

	srv    *http.Server
	dir    string // the ssh stand-in and its log
	before []string

	mu    sync.Mutex
	asked map[string]int // "CONNECT github.com:443 (git/2.39.5)" -> times
}

// proxyVars are the proxy variables of Go's net/http (upper case first),
// curl and so git (lower case first; http_proxy only in lower case), npm
// and the rest. Internet.Env sets them all, so that its proxy replaces the
// guard's everywhere.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

// loopbackNoProxy is NO_PROXY under the guard: Go never proxies localhost
// or a loopback address whatever NO_PROXY says, but curl (git) proxies
// every host NO_PROXY does not name; both read CIDR ranges (curl from
// 7.86).
const loopbackNoProxy = "localhost,127.0.0.0/8,::1"

var (
	guardMu     sync.Mutex
	activeGuard *Guard
)

// GuardNetwork starts the network guard of this test process (once; it
// fails if one is running) and puts it into the process's environment, so
// that nothing the tests run reaches a host off this machine, nor even
// asks the machine's resolver for one:
//   - HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (and the lower case forms) name
//     the sinkhole, NO_PROXY the loopback names: Go clients
//     (http.ProxyFromEnvironment, which reads the environment once, so
//     this must run before any request: in TestMain), git (curl),
//     terraform and tofu send every other host to it, by name, without a
//     lookup. Programs started with os.Environ() or Env inherit it;
//     Internet.Env comes after it in a child's environment (os/exec keeps
//     the last value of a key) and replaces it for the stand-in's names.
//   - GIT_SSH_COMMAND is an ssh stand-in that records the host and fails:
//     git over ssh takes no proxy.
//   - net.DefaultResolver answers every DNS query of this process itself
//     with "no such host" and records the name (a name in /etc/hosts, such
//     as localhost, is found there first): a dial by name that skips the
//     proxy (a Transport without Proxy) asks nobody.
//
// Every request is answered 403 "tests may not reach HOST", logged to
// stderr at once (with -v, under the test that asked) and kept for Close.
// Run it from TestMain with RunGuarded.
func GuardNetwork() (*Guard, error) {
	guardMu.Lock()
	defer guardMu.Unlock()
	if activeGuard != nil {
		return nil, errors.New("the network guard is already running")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "netguard-")
	if err != nil {
		ln.Close()
		return nil, err
	}
	g := &Guard{URL: "http://" + ln.Addr().String(), dir: dir, before: os.Environ(), asked: map[string]int{}}
	g.srv = &http.Server{Handler: http.HandlerFunc(g.refuse)}
	go g.srv.Serve(ln)
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(sshStandIn), 0o755); err != nil {
		g.stop()
		return nil, err
	}
	for _, kv := range g.Env() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: g.dialDNS}
	activeGuard = g
	return g, nil
}

// sshStandIn is GIT_SSH_COMMAND under the guard (named ssh, so that git
// passes OpenSSH's options): it records its arguments (the host and the
// command) in ssh.log beside it and fails.
const sshStandIn = `#!/bin/sh
printf '%s\n' "$*" >> "$(dirname "$0")/ssh.log"
echo "tests may not reach a host over ssh ($*): serve a stand-in on loopback (dist/registrytest)" >&2
exit 255
`

// Env is the guard's environment for a child process whose environment
// is built without os.Environ() (the root tests' baseEnv).
func (g *Guard) Env() []string {
	var env []string
	for _, k := range proxyVars {
		env = append(env, k+"="+g.URL)
	}
	return append(env, "NO_PROXY="+loopbackNoProxy, "no_proxy="+loopbackNoProxy,
		"GIT_SSH_COMMAND="+filepath.Join(g.dir, "ssh"))
}

// GuardEnv is the running guard's Env, or nothing when none runs.
func GuardEnv() []string {
	guardMu.Lock()
	defer guardMu.Unlock()
	if activeGuard == nil {
		return nil
	}
	return activeGuard.Env()
}

// UnguardedEnv is the process's environment as it was before the guard
// started (os.Environ() when none runs). Only for a step that installs a
// test tool from a package registry into the test cache, once (go get of
// trivy, npm install of axe-core): the tests themselves never use it.
func UnguardedEnv() []string {
	guardMu.Lock()
	defer guardMu.Unlock()
	if activeGuard == nil {
		return os.Environ()
	}
	return append([]string(nil), activeGuard.before...)
}

// refuse answers every request to the sinkhole: a CONNECT (HTTPS through
// the proxy), a proxied plain-HTTP request or anything else.
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if r.Method != http.MethodConnect && r.URL.IsAbs() {
		host = r.URL.Host
	}
	host = strings.ToValidUTF8(host, "?")
	g.record(fmt.Sprintf("%s %q (%s)", r.Method, host, strings.ToValidUTF8(r.UserAgent(), "?")))
	http.Error(w, "tests may not reach "+host+": serve a stand-in on loopback (dist/registrytest)", http.StatusForbidden)
}

func (g *Guard) record(what string) {
	fmt.Fprintf(os.Stderr, "network guard: refused %s: tests may not reach hosts off this machine\n", what)
	g.mu.Lock()
	g.asked[what]++
	g.mu.Unlock()
}

// dialDNS is the in-process resolver's connection to "the name server":
// a pipe to serveDNS (Go frames a query on a stream as over TCP).
func (g *Guard) dialDNS(ctx context.Context, network, address string) (net.Conn, error) {
	client, server := net.Pipe()
	go g.serveDNS(server)
	return client, nil
}

// serveDNS answers each query on c with NXDOMAIN and records its name.
func (g *Guard) serveDNS(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(msg)
		if err != nil {
			return
		}
		q, err := p.Question()
		if err != nil {
			return
		}
		g.record(fmt.Sprintf("DNS lookup %q (%s) in the test process", q.Name.String(), q.Type))
		b := dnsmessage.NewBuilder(make([]byte, 2, 512), dnsmessage.Header{ID: h.ID, Response: true, RecursionAvailable: true, RCode: dnsmessage.RCodeNameError})
		b.StartQuestions()
		b.Question(q)
		out, err := b.Finish()
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(out, uint16(len(out)-2))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// Asked lists what the guard refused so far, one line each.
func (g *Guard) Asked() []string {
	var out []string
	g.mu.Lock()
	for what, n := range g.asked {
		out = append(out, fmt.Sprintf("%s, %d times", what, n))
	}
	g.mu.Unlock()
	if b, err := os.ReadFile(filepath.Join(g.dir, "ssh.log")); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			out = append(out, fmt.Sprintf("ssh %q", l))
		}
	}
	sort.Strings(out)
	return out
}

// Close stops the guard (the environment it set stays) and returns an
// error that lists what it refused, if anything.
func (g *Guard) Close() error {
	asked := g.Asked()
	g.stop()
	guardMu.Lock()
	activeGuard = nil
	guardMu.Unlock()
	if len(asked) == 0 {
		return nil
	}
	return fmt.Errorf("network guard: the tests asked for hosts off this machine:\n  %s\nhint: never call a public host from tests: serve a stand-in on loopback (registrytest.World, Internet.Env, Internet.Transport); a host that must be unreachable is Internet.Block'ed or a .invalid name through the stand-in", strings.Join(asked, "\n  "))
}

func (g *Guard) stop() {
	g.srv.Close()
	os.RemoveAll(g.dir)
}

// RunGuarded runs the tests of m under the network guard and returns the
// exit code for os.Exit: m's, or 1 if the guard refused anything (listed
// on stderr). The TestMain of every package whose tests run clients:
//
//	func TestMain(m *testing.M) { os.Exit(registrytest.RunGuarded(m)) }
func RunGuarded(m *testing.M) int {
	g, err := GuardNetwork()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the network guard:", err)
		return 2
	}
	code := m.Run()
	if err := g.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
