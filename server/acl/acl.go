package acl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
)

// File is a parsed access file.
type File struct {
	// Anonymous is what requests without a token may read; nil: they are
	// refused (401).
	Anonymous *Rules
	Tokens    []*Token
	// AnonymousPatterns are the anonymous rule's patterns as written.
	AnonymousPatterns []string
	// Login is single sign-on through the site's identity provider (nil:
	// none); Groups and Users give the people who sign in their rules,
	// keyed by lower-cased name (serve's login service).
	Login  *Login
	Groups map[string]*Rules
	Users  map[string]*Rules
	// Revoked are tokens 'airgap token revoke' took out: kept (newest
	// last, at most MaxRevoked) so that a revoked token's attempts are
	// refused and logged under its name.
	Revoked []*Revoked
}

// Revoked is a token that was revoked: its name and hash, and when.
type Revoked struct {
	Name    string
	Hash    [sha256.Size]byte
	Revoked time.Time
}

// MaxRevoked is how many revoked tokens a file keeps (the oldest are
// dropped when a revocation would exceed it).
const MaxRevoked = 1000

// Token is one named token of the file. Its secret is not in the file.
type Token struct {
	Name    string
	Hash    [sha256.Size]byte
	Rules   *Rules
	Created time.Time
	Expires time.Time // zero: never
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// AnonymousName is how anonymous access is named in logs, the audit log
// and signed URLs; no token may be called that.
const AnonymousName = "anonymous"

// SecretPrefix starts every token secret: it makes a leaked token easy to
// recognise (and to scan repositories for).
const SecretPrefix = "airgap_"

// secretLen is the length of a secret: the prefix and 32 random bytes in
// unpadded base64url.
var secretLen = len(SecretPrefix) + base64.RawURLEncoding.EncodedLen(32)

// Limits of a file.
const (
	maxFileSize = 4 << 20
	maxTokens   = 10000
)

var reName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrPermissions marks an access file that other users may read or write, or
// that another user than serve's or root owns (osfile.PrivateEnough).
var ErrPermissions = errors.New("access file is not private enough")

// ErrSyntax marks an access file that does not parse or validate; the
// message names FILE:LINE:COL.
var ErrSyntax = errors.New("invalid access file")

// NewSecret returns a new token secret: "airgap_" and 256 random bits.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashSecret is what the file stores of a secret. A secret of the usual
// length is hashed from a stack buffer (no allocation per request).
func HashSecret(secret string) [sha256.Size]byte {
	var buf [64]byte
	if len(secret) <= len(buf) {
		n := copy(buf[:], secret)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(secret))
}

// LooksLikeSecret reports whether s has the shape of a token secret (the
// prefix and the length); anything else is refused without hashing.
func LooksLikeSecret(s string) bool {
	return len(s) == secretLen && strings.HasPrefix(s, SecretPrefix)
}

// ValidName checks a token name.
func ValidName(name string) error {
	if !reName.MatchString(name) {
		return fmt.Errorf("token name %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", dist.Printable(name))
	}
	if strings.EqualFold(name, AnonymousName) {
		return fmt.Errorf("token name %q is reserved for anonymous access (the file's anonymous block)", name)
	}
	return nil
}

// hclFile is the file's schema.
type hclFile struct {
	Anonymous []hclAnonymous `hcl:"anonymous,block"`
	Tokens    []hclToken     `hcl:"token,block"`
	Login     []hclLogin     `hcl:"login,block"`
	Groups    []hclRule      `hcl:"group,block"`
	Users     []hclRule      `hcl:"user,block"`
	Revoked   []hclRevoked   `hcl:"revoked,block"`
}

type hclRevoked struct {
	Name    string `hcl:"name,label"`
	SHA256  string `hcl:"sha256"`
	Revoked string `hcl:"revoked"`
}

type hclAnonymous struct {
	Allow []string `hcl:"allow"`
}

type hclToken struct {
	Name    string   `hcl:"name,label"`
	SHA256  string   `hcl:"sha256"`
	Allow   []string `hcl:"allow"`
	Created string   `hcl:"created,optional"`
	Expires string   `hcl:"expires,optional"`
}

// Load reads and checks the access file at path. It refuses a file other
// users may read or write (ErrPermissions; the rule is osfile.PrivateEnough),
// one on a path another user could change (ErrPermissions; the rule is
// osfile.CheckSafePath: serve, run as root, would otherwise take a file
// that user linked or swapped in), one that is not a regular file, or one
// over 4 MiB.
func Load(path string) (*File, error) {
	f, err := osfile.OpenSafe(path, "it says who may fetch what")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("reading the access file: %w", err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPermissions, err)
	}
	defer f.Close()
	src, _, err := readChecked(f, path, osfile.CheckPrivate)
	if err != nil {
		return nil, err
	}
	return Parse(src, path)
}

// LoadToList is Load for 'airgap token list', which only prints the
// file: it judges the mode alone, as an edit does, so that root may list
// the file of the user serve runs as (serve judges the owner).
func LoadToList(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the access file: %w", err)
	}
	defer f.Close()
	src, _, err := readChecked(f, path, osfile.CheckClosedMode)
	if err != nil {
		return nil, err
	}
	return Parse(src, path)
}

// readChecked reads the open access file f (named path): a regular file,
// private enough by check (osfile.CheckPrivate for a reader that acts on
// it: owned by this process's user or root, and its owner's alone, or
// root's and its group's, as a Kubernetes Secret; osfile.CheckClosedMode
// for an edit, which root may make to the file of serve's user), at most
// maxFileSize bytes.
func readChecked(f *os.File, path string, check func(fi os.FileInfo, path, what string) error) ([]byte, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is not a regular file", ErrSyntax, path)
	}
	if err := check(fi, path, "it says who may fetch what"); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPermissions, err)
	}
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(src) > maxFileSize {
		return nil, nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrSyntax, path, maxFileSize)
	}
	return src, fi, nil
}

// Parse reads an access file's text; filename is used in messages.
func Parse(src []byte, filename string) (*File, error) {
	release, err := dist.AdmitHCL(src, filename)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	defer release()
	hf, diags := hclparse.NewParser().ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	var raw hclFile
	if diags := gohcl.DecodeBody(hf.Body, nil, &raw); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	schema, _ := gohcl.ImpliedBodySchema(&hclFile{})
	content, _ := hf.Body.Content(schema)
	where := func(i int, typ string) string {
		n := -1
		for _, b := range content.Blocks {
			if b.Type == typ {
				if n++; n == i {
					return fmt.Sprintf("%s:%d:%d", filename, b.DefRange.Start.Line, b.DefRange.Start.Column)
				}
			}
		}
		return filename
	}
	out := &File{}
	if len(raw.Anonymous) > 1 {
		return nil, fmt.Errorf("%w: %s: more than one anonymous block", ErrSyntax, where(1, "anonymous"))
	}
	if len(raw.Anonymous) == 1 {
		r, err := CompileRules(raw.Anonymous[0].Allow)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: anonymous: %v", ErrSyntax, where(0, "anonymous"), err)
		}
		out.Anonymous, out.AnonymousPatterns = r, raw.Anonymous[0].Allow
	}
	if len(raw.Tokens) > maxTokens {
		return nil, fmt.Errorf("%w: %s: %d tokens (at most %d)", ErrSyntax, filename, len(raw.Tokens), maxTokens)
	}
	names := map[string]bool{}
	hashes := map[[sha256.Size]byte]string{}
	for i, ht := range raw.Tokens {
		t, err := compileToken(ht)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, where(i, "token"), err)
		}
		if names[strings.ToLower(t.Name)] {
			return nil, fmt.Errorf("%w: %s: a second token named %q", ErrSyntax, where(i, "token"), t.Name)
		}
		if other, ok := hashes[t.Hash]; ok {
			return nil, fmt.Errorf("%w: %s: token %q has the same sha256 as %q", ErrSyntax, where(i, "token"), t.Name, other)
		}
		names[strings.ToLower(t.Name)], hashes[t.Hash] = true, t.Name
		out.Tokens = append(out.Tokens, t)
	}
	if len(raw.Revoked) > maxTokens {
		return nil, fmt.Errorf("%w: %s: %d revoked blocks (at most %d)", ErrSyntax, filename, len(raw.Revoked), maxTokens)
	}
	for i, hr := range raw.Revoked {
		r, err := compileRevoked(hr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, where(i, "revoked"), err)
		}
		if other, ok := hashes[r.Hash]; ok {
			return nil, fmt.Errorf("%w: %s: revoked token %q has the sha256 of token %q", ErrSyntax, where(i, "revoked"), r.Name, other)
		}
		hashes[r.Hash] = r.Name
		out.Revoked = append(out.Revoked, r)
	}
	if len(raw.Login) > 1 {
		return nil, fmt.Errorf("%w: %s: more than one login block", ErrSyntax, where(1, "login"))
	}
	if len(raw.Login) == 1 {
		l, err := compileLogin(raw.Login[0], filename)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		out.Login = l
	}
	if err := compileLoginRules(out, raw.Groups, raw.Users, where); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return out, nil
}

func compileRevoked(hr hclRevoked) (*Revoked, error) {
	if !reName.MatchString(hr.Name) {
		return nil, fmt.Errorf("revoked %q: not a token name", dist.Printable(hr.Name))
	}
	r := &Revoked{Name: hr.Name}
	h, err := hex.DecodeString(hr.SHA256)
	if err != nil || len(h) != sha256.Size || strings.ToLower(hr.SHA256) != hr.SHA256 {
		return nil, fmt.Errorf("revoked %q: sha256 must be 64 lower-case hex digits", hr.Name)
	}
	copy(r.Hash[:], h)
	tm, err := time.Parse(time.RFC3339, hr.Revoked)
	if err != nil {
		return nil, fmt.Errorf("revoked %q: revoked %q is not an RFC 3339 time", hr.Name, hr.Revoked)
	}
	r.Revoked = tm.UTC()
	return r, nil
}

func compileToken(ht hclToken) (*Token, error) {
	if err := ValidName(ht.Name); err != nil {
		return nil, err
	}
	t := &Token{Name: ht.Name}
	h, err := hex.DecodeString(ht.SHA256)
	if err != nil || len(h) != sha256.Size || strings.ToLower(ht.SHA256) != ht.SHA256 {
		return nil, fmt.Errorf("token %q: sha256 must be 64 lower-case hex digits (what 'airgap token create' writes)", ht.Name)
	}
	copy(t.Hash[:], h)
	if t.Rules, err = CompileRules(ht.Allow); err != nil {
		return nil, fmt.Errorf("token %q: %v", ht.Name, err)
	}
	for _, f := range []struct {
		name, val string
		dst       *time.Time
	}{{"created", ht.Created, &t.Created}, {"expires", ht.Expires, &t.Expires}} {
		if f.val == "" {
			continue
		}
		tm, err := time.Parse(time.RFC3339, f.val)
		if err != nil {
			return nil, fmt.Errorf("token %q: %s %q is not an RFC 3339 time (2027-01-31T00:00:00Z)", ht.Name, f.name, f.val)
		}
		*f.dst = tm.UTC()
	}
	return t, nil
}

func diagErr(diags hcl.Diagnostics) error {
	return fmt.Errorf("%w: %s", ErrSyntax, strings.Join(dist.DiagLines(diags), "\n"))
}

// Find returns the token named name (case-insensitively), or nil.
func (f *File) Find(name string) *Token {
	for _, t := range f.Tokens {
		if strings.EqualFold(t.Name, name) {
			return t
		}
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }
