package registry

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
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
	allowed := make([]string, 0, len(b.origins))
	for o := range b.origins {
		allowed = append(allowed, o)
	}
	sort.Strings(allowed)
	return fmt.Errorf("%s: %w: the proxy registry for %s (host block at %s, %s) gave %s\nhint: through a proxy registry airgap fetches only from the proxy itself; have the proxy rewrite download URLs to itself (a remote repository's own download URLs), or remove the host block if %s can be reached directly; nothing was written",
		what, ErrForeignURL, host, b.at, strings.Join(allowed, ", "), quote(raw), host)
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
