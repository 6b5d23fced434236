package registry

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/airgap/airgap/dist"
)

// A proxy registry (a CLI config host block pointing a registry's services
// at, say, an Artifactory or Nexus remote repository) and a network mirror
// are the route the user chose to the internet: the connected side often
// reaches nothing else. Their answers must therefore keep to their own
// origins: every package, SHA256SUMS, signature and archive URL they give
// (after resolving relative ones) must be on the scheme, host and port of one
// of the proxy's service URLs, or of the mirror. A URL on another host means
// the proxy is not rewriting download URLs (the export would leave the route
// the user configured, to a host the user never named) or is hostile; it
// fails with ErrForeignURL naming the proxy and the URL, before anything is
// fetched from it. Redirects the proxy's own URLs answer with are followed
// as for any download (https never to http); what arrives is checked
// against the publisher's signed SHA256SUMS as always.
//
// The user may name further hosts the proxy's answers may point at
// (AllowDownloadHosts: export's --allow-download-host and the manifest's
// allow_download_hosts), for a site whose connected machine reaches, say,
// github.com as well: registry.terraform.io's own module answers point
// there. A URL on such a host is then fetched as any module source or
// package is (the same getter, limits and checks; no registry credentials
// go to it), and the client's Notice says so once per host.

// CheckProxied returns ErrForeignURL if host's services come from a CLI
// config host block and raw (a URL from one of their answers; for git
// sources, the git:: address) is on none of the block's origins. what names
// the answer for the message.
func (c *Client) CheckProxied(host, what, raw string) error {
	c.mu.Lock()
	b, ok := c.blocks[host]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	o, ok := sourceOrigin(raw)
	if ok && b.origins[o] {
		return nil
	}
	if h, allowed := c.allowedHost(o); ok && allowed {
		c.mu.Lock()
		first := !c.allowedSeen[h]
		c.allowedSeen[h] = true
		c.mu.Unlock()
		if first && c.Notice != nil {
			c.Notice("%s: fetching from %s, outside the proxy registry for %s (host block at %s): allowed by --allow-download-host %s", what, dist.Printable(o), host, b.at, h)
		}
		return nil
	}
	allowed := make([]string, 0, len(b.origins))
	for o := range b.origins {
		allowed = append(allowed, o)
	}
	sort.Strings(allowed)
	other := "that host"
	if u, err := url.Parse(o); ok && err == nil {
		other = u.Hostname()
	}
	return fmt.Errorf("%s: %w: the proxy registry for %s (host block at %s, %s) gave %s\nhint: through a proxy registry airgap fetches only from the proxy itself unless told otherwise: if this machine may reach %s, allow it with --allow-download-host %s (or allow_download_hosts = [\"%s\"] in the manifest); or have the proxy rewrite download URLs to itself (a remote repository's own download URLs), or remove the host block if %s can be reached directly; nothing was written",
		what, ErrForeignURL, host, b.at, strings.Join(allowed, ", "), quote(raw), other, other, other, host)
}

// AllowDownloadHosts lets the answers of a proxy registry (a CLI config host
// block) point downloads at these hosts besides the proxy itself: "HOST"
// (any port) or "HOST:PORT". Each is checked by CheckDownloadHost first.
func (c *Client) AllowDownloadHosts(hosts ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allowedHosts == nil {
		c.allowedHosts, c.allowedSeen = map[string]bool{}, map[string]bool{}
	}
	for _, h := range hosts {
		c.allowedHosts[strings.ToLower(h)] = true
	}
}

// allowedHost reports whether the origin o (scheme://host:port) is on a
// host AllowDownloadHosts named, and which entry allowed it.
func (c *Client) allowedHost(o string) (string, bool) {
	u, err := url.Parse(o)
	if err != nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range []string{strings.ToLower(u.Host), strings.ToLower(u.Hostname())} {
		if c.allowedHosts[h] {
			return h, true
		}
	}
	return "", false
}

// CheckDownloadHost checks an --allow-download-host value: a host name or
// IP address, with an optional port, and nothing else (no scheme, path,
// user information or wildcard).
func CheckDownloadHost(h string) error {
	u, err := url.Parse("https://" + h)
	bad := err != nil || h == "" || u.Host != h || u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.Hostname() == "" || strings.ContainsAny(h, "*/\\@ ") || dist.Printable(h) != h
	if !bad && u.Port() != "" {
		if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%q: give a host name, or HOST:PORT (no scheme, path or wildcard), e.g. github.com", h)
	}
	return nil
}

// checkMirrorURL returns ErrForeignURL if u (an archive URL of a network
// mirror's answer) is not on the mirror's own origin.
func checkMirrorURL(mirror *url.URL, what, raw string) error {
	if o, ok := sourceOrigin(raw); ok && o == origin(mirror.Scheme, mirror.Host) {
		return nil
	}
	return fmt.Errorf("%s: %w: the network mirror %s gave %s\nhint: airgap downloads a mirror's packages only from the mirror itself; have it serve its archives under its own URL; nothing was written",
		what, ErrForeignURL, mirror.Redacted(), quote(raw))
}

// sourceOrigin is the origin (scheme://host:port) of a URL, a git:: address
// or an scp-like git@host:path (as ssh://host:22).
func sourceOrigin(raw string) (string, bool) {
	s := strings.TrimPrefix(raw, "git::")
	if rest, ok := strings.CutPrefix(s, "git@"); ok && !strings.Contains(s, "://") {
		host, _, _ := strings.Cut(rest, ":")
		return origin("ssh", host+":22"), host != ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Scheme == "" {
		return "", false
	}
	if u.Scheme == "ssh" && u.Port() == "" {
		return origin("ssh", u.Hostname()+":22"), true
	}
	return origin(u.Scheme, u.Host), true
}
