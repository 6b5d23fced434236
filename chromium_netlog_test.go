package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
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
	off, requests, err := chromiumOffMachine(f)
	switch {
	case err != nil:
		t.Errorf("chromium's net log %s: %v", path, err)
	case requests == 0:
		t.Errorf("chromium's net log %s records no host resolution at all: the check would miss a lookup", path)
	case len(off) > 0:
		t.Errorf("chromium asked for hosts off this machine (net log %s):\n  %s\nhint: tests reach loopback only: see chromiumResolverRules and the flags in newChromium", path, strings.Join(off, "\n  "))
	}
}

// chromiumOffMachine reads a Chromium net log (JSON, one event a line, as
// Chromium writes it; a log cut short by a killed browser still reads) and
// returns each host resolution of a name that is not loopback's and each
// connection to an address off loopback (but chromiumIPv6Probe's UDP
// connect), one line each, and how many host resolutions it read.
func chromiumOffMachine(r io.Reader) (off []string, requests int, err error) {
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

// TestChromiumNetLogCheck: the net log check finds what Chromium asks for
// without chromiumResolverRules (lines from a run without them, in a
// network namespace with only loopback), and passes a run with them.
func TestChromiumNetLogCheck(t *testing.T) {
	consts := `{"constants":{"logEventTypes":{"HOST_RESOLVER_MANAGER_REQUEST":10,"HOST_RESOLVER_MANAGER_JOB":11,"TCP_CONNECT_ATTEMPT":20,"UDP_CONNECT":21,"SOCKET_CONNECT":22,"UDP_LOCAL_ADDRESS":23},"logSourceType":{"SOCKET":1,"UDP_SOCKET":2,"UDP_CLIENT_SOCKET":3}},
"events": [
`
	withRules := consts + `{"params":{"host":"https://~notfound"},"phase":1,"source":{"id":4,"type":9},"type":10},
{"params":{"host":"http://127.0.0.1:18765"},"phase":1,"source":{"id":5,"type":9},"type":10},
{"params":{"address":"[2001:4860:4860::8888]:443"},"phase":0,"source":{"id":6,"type":2},"type":21},
{"params":{"address":"[2001:4860:4860::8888]:443"},"phase":0,"source":{"id":7,"type":3},"type":22},
{"params":{"address":"[fd00::2]:37418"},"phase":0,"source":{"id":6,"type":2},"type":23},
{"params":{"address":"127.0.0.1:18765"},"phase":1,"source":{"id":8,"type":1},"type":20},
{"params":{"host":"http://loc`
	off, n, err := chromiumOffMachine(strings.NewReader(withRules))
	if err != nil || n != 2 || len(off) != 0 {
		t.Errorf("a run with the rules: %q, %d resolutions, %v", off, n, err)
	}
	without := consts + `{"params":{"host":"http://clients2.google.com"},"phase":1,"source":{"id":4,"type":9},"type":11},
{"params":{"host":"https://update.googleapis.com"},"phase":1,"source":{"id":5,"type":9},"type":10},
{"params":{"address":"[2001:4860:4860::8888]:443"},"phase":1,"source":{"id":8,"type":1},"type":20},
{"params":{"address":"142.250.1.1:443"},"phase":1,"source":{"id":8,"type":1},"type":20}
]}
`
	off, _, err = chromiumOffMachine(strings.NewReader(without))
	want := []string{"HOST_RESOLVER_MANAGER_JOB http://clients2.google.com", "HOST_RESOLVER_MANAGER_REQUEST https://update.googleapis.com",
		"TCP_CONNECT_ATTEMPT [2001:4860:4860::8888]:443 (SOCKET)", "TCP_CONNECT_ATTEMPT 142.250.1.1:443 (SOCKET)"}
	if err != nil || strings.Join(off, "\n") != strings.Join(want, "\n") {
		t.Errorf("a run without the rules: %q, %v; want %q", off, err, want)
	}
	if _, _, err := chromiumOffMachine(strings.NewReader(`{"events": []}`)); err == nil {
		t.Error("a log without constants passed")
	}
}

// TestChromiumStaysOnLoopback: the tests' Chromium (newChromium) loads a
// page that asks for public hosts (a script, an image, a fetch); each
// fails inside Chromium, the page itself loads, and its net log, which
// recorded the page's own request, shows nothing off this machine.
func TestChromiumStaysOnLoopback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>t</title><img src="https://update.googleapis.com/x.png">
<script src="http://clients2.google.com/x.js"></script>
<script>window.fetched = fetch("https://example.com/").then(() => "reached", e => "failed: " + e);</script>`)
	}))
	defer srv.Close()
	work := t.TempDir()
	caFile := filepath.Join(work, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	ctx, cancel := newChromium(t, srv.URL, caFile, work)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	fetched, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.fetched`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fetched, "failed: ") {
		t.Errorf("fetch of https://example.com/ in the page: %s", fetched)
	}
}
