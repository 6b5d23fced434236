package dist

import (
	"net/url"
	"strings"
)

// RedactSource is a module source address fit to record and show: without
// the credentials a URL may carry in its user information. A source the
// site writes ("git::https://deploy:TOKEN@git.site.example/net.git") or a
// registry answers with is fetched as written, but what a bundle records
// is shown by verify, inventory and every appliance's catalog page, to
// every engineer of the offline network. An https (or http) URL loses its
// whole user information, since hosts take a token as the user name too
// (https://TOKEN@github.com/…); an ssh URL keeps its user name ("git"),
// which is not a secret, and loses a password. Anything else, and a source
// without user information, is returned as it is.
func RedactSource(src string) string {
	prefix, rest := "", src
	if i := strings.Index(rest, "::"); i > 0 && !strings.Contains(rest[:i], "/") {
		prefix, rest = rest[:i+2], rest[i+2:]
	}
	u, err := url.Parse(rest)
	if err != nil || u.User == nil || u.Host == "" {
		return src
	}
	switch strings.ToLower(u.Scheme) {
	case "ssh":
		if _, has := u.User.Password(); !has {
			return src
		}
		u.User = url.User(u.User.Username())
	case "https", "http":
		u.User = nil
	default:
		return src
	}
	return prefix + u.String()
}
