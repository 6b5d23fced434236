package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
)

// chromiumResolverRules is Chromium's --host-resolver-rules in the tests:
// every name but loopback's fails inside Chromium (ERR_NAME_NOT_RESOLVED)
// without a lookup; an address is not a name and is not mapped.
const chromiumResolverRules = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE [::1]"

// chromiumIPv6Probe is where Chromium's IPv6 reachability check connect()s
// a UDP socket, to read the source address the kernel would pick; nothing
// is sent, and no flag turns it off.
const chromiumIPv6Probe = "[2001:4860:4860::8888]:443"

// checkChromiumNetLog fails t if the net log Chromium wrote (--log-net-log)
// at path shows it asked for a name or an address off this machine, or if
// the log is missing or records no request at all (a check of nothing).
func checkChromiumNetLog(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("chromium's net log: %v", err)
		return
	}
	defer f.Close()
	off, requests, err := ChromiumOffMachine(f)
	switch {
	case err != nil:
		t.Errorf("chromium's net log %s: %v", path, err)
	case requests == 0:
		t.Errorf("chromium's net log %s records no host resolution at all: the check would miss a lookup", path)
	case len(off) > 0:
		t.Errorf("chromium asked for hosts off this machine (net log %s):\n  %s\nhint: tests reach loopback only: see chromiumResolverRules and the flags in newChromium", path, strings.Join(off, "\n  "))
	}
}

// ChromiumOffMachine reads a Chromium net log (JSON, one event a line, as
// Chromium writes it; a log cut short by a killed browser still reads) and
// returns each host resolution of a name that is not loopback's and each
// connection to an address off loopback (but chromiumIPv6Probe's UDP
// connect), one line each, and how many host resolutions it read.
func ChromiumOffMachine(r io.Reader) (off []string, requests int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20) // the first line holds every constant (about 50 kB)
	var consts struct {
		Constants struct {
			EventTypes  map[string]int `json:"logEventTypes"`
			SourceTypes map[string]int `json:"logSourceType"`
		} `json:"constants"`
	}
	if !sc.Scan() {
		return nil, 0, fmt.Errorf("empty: %v", sc.Err())
	}
	first := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
	if err := json.Unmarshal(append(first, '}'), &consts); err != nil || consts.Constants.EventTypes == nil {
		return nil, 0, fmt.Errorf("its first line is not the constants: %v", err)
	}
	eventName, sourceName := map[int]string{}, map[int]string{}
	for k, v := range consts.Constants.EventTypes {
		eventName[v] = k
	}
	for k, v := range consts.Constants.SourceTypes {
		sourceName[v] = k
	}
	seen := map[string]bool{}
	note := func(s string) {
		if !seen[s] {
			seen[s] = true
			off = append(off, s)
		}
	}
	for sc.Scan() {
		var e struct {
			Type   int `json:"type"`
			Source struct {
				Type int `json:"type"`
			} `json:"source"`
			Params map[string]any `json:"params"`
		}
		line := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			continue // "events": [, the closing lines, a line cut short
		}
		name := eventName[e.Type]
		switch {
		case name == "HOST_RESOLVER_MANAGER_REQUEST" || name == "HOST_RESOLVER_MANAGER_JOB":
			host, _ := e.Params["host"].(string)
			if host == "" {
				continue
			}
			requests++
			if !loopbackName(host) {
				note(fmt.Sprintf("%s %s", name, host))
			}
		case strings.Contains(name, "CONNECT") && !strings.Contains(name, "LOCAL"):
			addr, _ := e.Params["address"].(string)
			if addr == "" || onLoopback(addr) {
				continue
			}
			if addr == chromiumIPv6Probe && strings.HasPrefix(sourceName[e.Source.Type], "UDP_") {
				continue
			}
			note(fmt.Sprintf("%s %s (%s)", name, addr, sourceName[e.Source.Type]))
		}
	}
	return off, requests, sc.Err()
}

// loopbackName: a host of a net log's resolution ("https://HOST:PORT",
// "HOST:PORT" or "HOST") that Chromium answers without asking anyone: a
// loopback address, localhost, or ~NOTFOUND (chromiumResolverRules).
func loopbackName(host string) bool {
	if strings.Contains(host, "://") {
		if u, err := url.Parse(host); err == nil {
			host = u.Host
		}
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "~notfound" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onLoopback: ADDRESS:PORT on loopback.
func onLoopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		h = addr
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
