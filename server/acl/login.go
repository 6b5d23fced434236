package acl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
)

// Single sign-on (serve's login service does the protocol): the access file's
// login block names the site's OpenID Connect identity provider, and its
// group and user blocks say what a person who signed in there may read:
//
//	login {
//	  issuer             = "https://idp.site.example/realms/eng"
//	  client_id          = "airgap"
//	  client_secret_file = "/etc/airgap/oidc-secret"   # optional: public clients have none
//	  ca_file            = "/etc/airgap/site-ca.pem"   # optional: the only CA the IdP's certificate may chain to
//	  scopes             = ["openid", "email", "profile", "groups"]
//	  groups_claim       = "groups"
//	  token_lifetime     = "12h"
//	}
//	group "platform"           { allow = ["registry.terraform.io/hashicorp/*", "site.example/**"] }
//	user  "alice@site.example" { allow = ["site.example/net/**"] }
//
// A person's rules are the union of the rules of the groups the IdP says
// they are in (the groups claim of the ID token, as it was at login) and of
// the user block of their e-mail address (when the IdP does not say the
// address is unverified). Group names are compared case-insensitively, as
// directory services do; so are addresses.
//
// Limits: group and user blocks together at most 10,000 (as tokens), names
// of 1–256 printable characters; the issuer https (http only on a loopback
// address, for tests); at most 32 scopes; a token lifetime of 1 s to 366 days.

// Login is the access file's login block, checked.
type Login struct {
	Issuer           string
	ClientID         string
	ClientSecretFile string // "" for a public client
	CAFile           string // "" for the system's roots
	Scopes           []string
	GroupsClaim      string
	TokenLifetime    time.Duration
	// RedirectURIs are the redirect URIs registered at the identity
	// provider for ClientID (redirect_uris): a sign-in started on a name
	// whose URI is not among them gets serve's page naming the URI to
	// register, not the identity provider's bare refusal. Empty: every URI
	// 'serve --check-config' lists is taken as registered.
	RedirectURIs []string
}

// Login defaults.
var (
	DefaultScopes        = []string{"openid", "email", "profile", "groups"}
	DefaultGroupsClaim   = "groups"
	DefaultTokenLifetime = 12 * time.Hour
)

const (
	maxLoginNames    = 10000
	maxLoginName     = 256
	maxScopes        = 32
	maxTokenLifetime = 366 * 24 * time.Hour
	maxRedirectURIs  = 256
	// CallbackPath is the path of serve's redirect URI.
	CallbackPath = "/oauth/callback"
)

type hclLogin struct {
	Issuer           string   `hcl:"issuer"`
	ClientID         string   `hcl:"client_id"`
	ClientSecretFile string   `hcl:"client_secret_file,optional"`
	CAFile           string   `hcl:"ca_file,optional"`
	Scopes           []string `hcl:"scopes,optional"`
	GroupsClaim      string   `hcl:"groups_claim,optional"`
	TokenLifetime    string   `hcl:"token_lifetime,optional"`
	RedirectURIs     []string `hcl:"redirect_uris,optional"`
	Body             hcl.Body `hcl:",body"`
}

// hclRule is a group or user block.
type hclRule struct {
	Name  string   `hcl:"name,label"`
	Allow []string `hcl:"allow"`
}

// compileLogin checks a login block; errors name the attribute's
// FILE:LINE:COL.
func compileLogin(hl hclLogin, filename string) (*Login, error) {
	at := func(attr string) string { return attrPos(hl.Body, attr, filename) + ": login" }
	l := &Login{Issuer: hl.Issuer, ClientID: hl.ClientID, ClientSecretFile: hl.ClientSecretFile, CAFile: hl.CAFile,
		Scopes: hl.Scopes, GroupsClaim: hl.GroupsClaim, TokenLifetime: DefaultTokenLifetime}
	if err := CheckIssuer(l.Issuer); err != nil {
		return nil, fmt.Errorf("%s: %v", at("issuer"), err)
	}
	if !printableName(l.ClientID) {
		return nil, fmt.Errorf("%s: client_id %q: want 1-%d printable characters (the client registered at the identity provider)", at("client_id"), dist.Printable(l.ClientID), maxLoginName)
	}
	if hl.Scopes == nil {
		l.Scopes = append([]string(nil), DefaultScopes...)
	}
	if err := checkScopes(l.Scopes); err != nil {
		return nil, fmt.Errorf("%s: %v", at("scopes"), err)
	}
	if l.GroupsClaim == "" {
		l.GroupsClaim = DefaultGroupsClaim
	} else if !printableName(l.GroupsClaim) {
		return nil, fmt.Errorf("%s: groups_claim %q: want the name of a claim of the ID token", at("groups_claim"), dist.Printable(l.GroupsClaim))
	}
	if hl.TokenLifetime != "" {
		d, err := store.ParseAge(hl.TokenLifetime)
		if err != nil || d < time.Second || d > maxTokenLifetime {
			return nil, fmt.Errorf("%s: token_lifetime %q: want a duration from 1s to 366d (12h, 7d)", at("token_lifetime"), dist.Printable(hl.TokenLifetime))
		}
		l.TokenLifetime = d
	}
	if len(hl.RedirectURIs) > maxRedirectURIs {
		return nil, fmt.Errorf("%s: redirect_uris: %d URIs (at most %d)", at("redirect_uris"), len(hl.RedirectURIs), maxRedirectURIs)
	}
	for _, u := range hl.RedirectURIs {
		ru, err := checkRedirectURI(u)
		if err != nil {
			return nil, fmt.Errorf("%s: redirect_uris: %v", at("redirect_uris"), err)
		}
		l.RedirectURIs = append(l.RedirectURIs, ru)
	}
	for attr, p := range map[string]string{"client_secret_file": l.ClientSecretFile, "ca_file": l.CAFile} {
		if p != "" && (len(p) > 4096 || strings.ContainsRune(p, 0)) {
			return nil, fmt.Errorf("%s: %s is not a usable path", at(attr), attr)
		}
	}
	return l, nil
}

// checkRedirectURI checks one of redirect_uris: https://HOST[:PORT]
// followed by CallbackPath, nothing else; it returns it with the host in
// lowercase (serve compares it with the name a sign-in started on).
func checkRedirectURI(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || len(s) > 1024 || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Path != CallbackPath {
		return "", fmt.Errorf("%q is not https://HOST[:PORT]%s (the URIs 'airgap serve --check-config' lists)", dist.Printable(s), CallbackPath)
	}
	host := strings.ToLower(u.Host)
	if u.Port() == "443" {
		host = strings.TrimSuffix(host, ":443") // as browsers send it
	}
	return "https://" + host + CallbackPath, nil
}

// CheckIssuer checks an issuer URL: https, or http on a loopback address
// (a test IdP on the same machine); no user information, query or
// fragment (OpenID Connect Discovery §4 appends the well-known path to it).
func CheckIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || len(issuer) > 1024 {
		return fmt.Errorf("issuer %q is not an absolute URL (https://idp.site.example/realms/eng)", dist.Printable(issuer))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return fmt.Errorf("issuer %q: no user information, query or fragment", dist.Printable(issuer))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("issuer %q must be https: the ID tokens and the client secret travel over it (plain http is accepted only on a loopback address, for tests)", dist.Printable(issuer))
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkScopes(scopes []string) error {
	if len(scopes) > maxScopes {
		return fmt.Errorf("%d scopes (at most %d)", len(scopes), maxScopes)
	}
	open := false
	for _, s := range scopes {
		if s == "" || len(s) > 128 || strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) >= 0 {
			return fmt.Errorf("scope %q: want printable ASCII without spaces", dist.Printable(s))
		}
		open = open || s == "openid"
	}
	if !open {
		return errors.New(`scopes must include "openid" (without it the identity provider sends no ID token)`)
	}
	return nil
}

// printableName reports whether s is 1–256 printable characters (no
// control characters; spaces allowed: directory group names have them).
func printableName(s string) bool {
	return s != "" && len(s) <= maxLoginName && dist.Printable(s) == s && strings.TrimSpace(s) == s
}

// attrPos is the FILE:LINE:COL of attribute name in body (the block's
// start when it is absent).
func attrPos(body hcl.Body, name, filename string) string {
	if body == nil {
		return filename
	}
	attrs, _ := body.JustAttributes()
	if a, ok := attrs[name]; ok {
		return fmt.Sprintf("%s:%d:%d", filename, a.Range.Start.Line, a.Range.Start.Column)
	}
	r := body.MissingItemRange()
	return fmt.Sprintf("%s:%d:%d", filename, r.Start.Line, r.Start.Column)
}

// compileLoginRules checks the group and user blocks (they need a login
// block: they only give login tokens their rules). where returns a
// block's FILE:LINE:COL.
func compileLoginRules(f *File, groups, users []hclRule, where func(int, string) string) error {
	if len(groups)+len(users) > 0 && f.Login == nil {
		typ := "group"
		if len(groups) == 0 {
			typ = "user"
		}
		return fmt.Errorf("%s: %s blocks give people who sign in through the identity provider their rules, and the file has no login block\nhint: add a login block (issuer, client_id) or remove the %s blocks", where(0, typ), typ, typ)
	}
	if len(groups)+len(users) > maxLoginNames {
		return fmt.Errorf("%d group and user blocks (at most %d)", len(groups)+len(users), maxLoginNames)
	}
	f.Groups, f.Users = map[string]*Rules{}, map[string]*Rules{}
	for _, c := range []struct {
		typ    string
		blocks []hclRule
		into   map[string]*Rules
	}{{"group", groups, f.Groups}, {"user", users, f.Users}} {
		for i, b := range c.blocks {
			if !printableName(b.Name) {
				return fmt.Errorf("%s: %s name %q: want 1-%d printable characters", where(i, c.typ), c.typ, dist.Printable(b.Name), maxLoginName)
			}
			if c.typ == "user" && !strings.Contains(b.Name, "@") {
				return fmt.Errorf("%s: user %q: name a person by the e-mail address the identity provider gives (alice@site.example)", where(i, c.typ), dist.Printable(b.Name))
			}
			k := strings.ToLower(b.Name)
			if c.into[k] != nil {
				return fmt.Errorf("%s: a second %s block for %q", where(i, c.typ), c.typ, b.Name)
			}
			r, err := CompileRules(b.Allow)
			if err != nil {
				return fmt.Errorf("%s: %s %q: %v", where(i, c.typ), c.typ, b.Name, err)
			}
			c.into[k] = r
		}
	}
	return nil
}

// LoginRules returns the patterns a person gets: the union of those of the
// groups they are in (as the identity provider listed them) and of their
// e-mail address's user block, when emailUsable (the IdP did not say it is
// unverified). matched lists the groups that had a block, in the file's
// spelling order (sorted), lower-cased; patterns is nil when nothing
// matched.
func (f *File) LoginRules(groups []string, email string, emailUsable bool) (patterns, matched []string) {
	if f == nil || f.Login == nil {
		return nil, nil
	}
	seen := map[string]bool{}
	// A rule without a release pattern admits every release: in a union
	// with one that narrows them, it must still (allReleases).
	var narrows, admitsAll bool
	add := func(r *Rules) {
		patterns = append(patterns, r.Patterns()...)
		narrows = narrows || r.releases
		admitsAll = admitsAll || !r.releases
	}
	for _, g := range groups {
		k := strings.ToLower(g)
		if r := f.Groups[k]; r != nil && !seen[k] {
			seen[k] = true
			matched = append(matched, k)
			add(r)
		}
	}
	sort.Strings(matched)
	if r := f.Users[strings.ToLower(email)]; r != nil && emailUsable && email != "" {
		add(r)
	}
	if narrows && admitsAll {
		patterns = append(patterns, allReleases)
	}
	return patterns, matched
}

// maxSecretFile bounds a client secret file.
const maxSecretFile = 4096

// ReadSecretFile reads the identity provider's client secret: the first
// line of the file, which, like the access file, must be private enough
// (osfile.PrivateEnough: serve's user's or root's alone, or root's and its
// group's), on a path only root and serve's user may change
// (osfile.CheckSafePath).
func ReadSecretFile(path string) (string, error) {
	// The file's rule says nothing of the path to it: a directory on the
	// way that another user may write lets them link a file root owns and
	// its group may read in its place (osfile.CheckSafePath).
	f, err := osfile.OpenSafe(path, "it holds the secret the identity provider knows the appliance by")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return "", fmt.Errorf("the login block's client_secret_file: %w", err)
	} else if err != nil {
		return "", fmt.Errorf("%w: the client secret file %w", ErrPermissions, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the login block's client_secret_file %s is not a regular file", path)
	}
	if err := osfile.CheckPrivate(fi, path, "it holds the secret the identity provider knows the appliance by"); err != nil {
		return "", fmt.Errorf("%w: the client secret file %w", ErrPermissions, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("the client secret file %s is larger than %d bytes", path, maxSecretFile)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	secret := strings.TrimSpace(line)
	if secret == "" {
		return "", fmt.Errorf("the client secret file %s is empty\nhint: put the secret the identity provider shows for the client on its first line", path)
	}
	return secret, nil
}
