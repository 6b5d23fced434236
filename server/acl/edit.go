package acl

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// header starts a file that 'airgap token' creates.
const header = `# Who may fetch what from this airgap appliance. 'airgap token create|revoke'
# edit it; a running 'airgap serve --access FILE' reloads it within a second.
# Patterns: HOST/NAMESPACE/TYPE (providers), HOST/NAMESPACE/NAME/SYSTEM (modules),
# each part a glob; a final "**" matches any remaining parts. Tokens are stored
# as SHA-256 hashes only; keep this file mode 0600.
`

// ErrExists marks a token name that is already in the file.
var ErrExists = errors.New("a token of that name exists")

// ErrNoToken marks a token name that is not in the file.
var ErrNoToken = errors.New("no such token")

// AddToken adds a token to the access file at path (creating the file,
// mode 0600, when it does not exist) and returns its secret, which exists
// nowhere else: the file keeps only its SHA-256. expires zero: never.
func AddToken(path, name string, allow []string, expires, now time.Time) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if len(allow) == 0 {
		return "", errors.New("a token needs at least one --allow pattern (a token that may read nothing is no use)")
	}
	if _, err := CompileRules(allow); err != nil {
		return "", err
	}
	if !expires.IsZero() && !expires.After(now) {
		return "", fmt.Errorf("the expiry %s is not in the future", expires.UTC().Format(time.RFC3339))
	}
	secret, err := NewSecret()
	if err != nil {
		return "", err
	}
	h := HashSecret(secret)
	err = edit(path, true, func(wf *hclwrite.File, cur *File) error {
		if cur.Find(name) != nil {
			return fmt.Errorf("%w: %q is in %s\nhint: revoke it first ('airgap token revoke --access %s %s') or choose another name", ErrExists, name, path, path, name)
		}
		body := wf.Body()
		if len(body.Blocks()) > 0 || len(body.Attributes()) > 0 {
			body.AppendNewline()
		}
		b := body.AppendNewBlock("token", []string{name}).Body()
		b.SetAttributeValue("sha256", cty.StringVal(hex.EncodeToString(h[:])))
		b.SetAttributeValue("allow", stringList(allow))
		b.SetAttributeValue("created", cty.StringVal(now.UTC().Format(time.RFC3339)))
		if !expires.IsZero() {
			b.SetAttributeValue("expires", cty.StringVal(expires.UTC().Format(time.RFC3339)))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// RemoveToken revokes the token named name now (RevokeToken).
func RemoveToken(path, name string) error { return RevokeToken(path, name, time.Now()) }

// RevokeToken takes the token named name out of the file and keeps its
// name and hash in a revoked block, so that a running serve refuses it at
// once and its later attempts are refused and logged under its name. The
// file keeps the newest MaxRevoked revoked blocks; a name may be used for a
// new token at once.
func RevokeToken(path, name string, now time.Time) error {
	return edit(path, false, func(wf *hclwrite.File, cur *File) error {
		t := cur.Find(name)
		if t == nil {
			return fmt.Errorf("%w named %q in %s\nhint: 'airgap token list --access %s' lists them", ErrNoToken, name, path, path)
		}
		body := wf.Body()
		for _, b := range body.Blocks() {
			if b.Type() == "token" && len(b.Labels()) == 1 && b.Labels()[0] == t.Name {
				body.RemoveBlock(b)
				rb := body.AppendNewBlock("revoked", []string{t.Name}).Body()
				rb.SetAttributeValue("sha256", cty.StringVal(hex.EncodeToString(t.Hash[:])))
				rb.SetAttributeValue("revoked", cty.StringVal(now.UTC().Format(time.RFC3339)))
				dropOldRevoked(body, len(cur.Revoked)+1)
				return nil
			}
		}
		return fmt.Errorf("%w named %q in %s", ErrNoToken, name, path)
	})
}

// dropOldRevoked removes the first (oldest) revoked blocks beyond
// MaxRevoked; n is how many the body holds.
func dropOldRevoked(body *hclwrite.Body, n int) {
	for _, b := range body.Blocks() {
		if n <= MaxRevoked {
			return
		}
		if b.Type() == "revoked" {
			body.RemoveBlock(b)
			n--
		}
	}
}

// SetAnonymous sets the anonymous rule to allow; an empty list removes it
// (anonymous requests are then refused).
func SetAnonymous(path string, allow []string) error {
	if len(allow) > 0 {
		if _, err := CompileRules(allow); err != nil {
			return err
		}
	}
	return edit(path, true, func(wf *hclwrite.File, cur *File) error {
		body := wf.Body()
		for _, b := range body.Blocks() {
			if b.Type() == "anonymous" {
				if len(allow) == 0 {
					body.RemoveBlock(b)
				} else {
					b.Body().SetAttributeValue("allow", stringList(allow))
				}
				return nil
			}
		}
		if len(allow) > 0 {
			if len(body.Blocks()) > 0 || len(body.Attributes()) > 0 {
				body.AppendNewline()
			}
			body.AppendNewBlock("anonymous", nil).Body().SetAttributeValue("allow", stringList(allow))
		}
		return nil
	})
}

func stringList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

// edit applies fn to the file at path under its lock and writes the result
// atomically, after checking that it parses as an access file. With create,
// a missing file starts as the header alone.
func edit(path string, create bool, fn func(*hclwrite.File, *File) error) error {
	// 'airgap token' runs as root; when the access file's directory is
	// writable by another user (serve's), a name in it may be a link or a
	// FIFO: the lock and the file are opened through the directory's
	// descriptor, never through a link, and only a regular file is read.
	d, err := osfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("the access file's directory: %w", err)
	}
	defer d.Close()
	// Two 'airgap token' runs do not lose each other's edits.
	unlock, err := d.LockFile(filepath.Base(path) + ".lock")
	if err != nil {
		return fmt.Errorf("locking the access file: %w%s", err, linkHint(err))
	}
	defer unlock()
	var src []byte
	var owner os.FileInfo // the file's owner is kept (writeAtomic)
	f, err := d.OpenRegular(filepath.Base(path))
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		src = []byte(header)
	case err != nil:
		return fmt.Errorf("reading the access file: %w%s", err, linkHint(err))
	default:
		// Refuse to edit what serve would refuse to read for its mode;
		// its owner is serve's to judge (root may edit the file of the
		// user serve runs as, and keeps that owner).
		src, owner, err = readChecked(f, path, osfile.CheckClosedMode)
		f.Close()
		if err != nil {
			return err
		}
	}
	cur, err := Parse(src, path)
	if err != nil {
		return err
	}
	out, err := rewrite(src, path, cur, fn)
	if err != nil {
		return err
	}
	if _, err := Parse(out, path); err != nil {
		return fmt.Errorf("internal error: the edited access file does not read back: %w", err)
	}
	return writeAtomic(path, out, owner)
}

// linkHint is the hint of a name that is a link or not a regular file.
func linkHint(err error) string {
	if !errors.Is(err, osfile.ErrNotRegular) {
		return ""
	}
	return "\nhint: 'airgap token' does not follow a link (nor open a FIFO) where another user could have put it; give --access the file itself"
}

// rewrite applies fn to the access file src (cur, as parsed) through
// hclwrite, within the bounds every reader of HCL keeps (dist.AdmitHCL),
// and returns the result formatted.
func rewrite(src []byte, path string, cur *File, fn func(*hclwrite.File, *File) error) ([]byte, error) {
	release, err := dist.AdmitHCL(src, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	defer release()
	wf, diags := hclwrite.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	if err := fn(wf, cur); err != nil {
		return nil, err
	}
	return hclwrite.Format(wf.Bytes()), nil
}

// writeAtomic writes data to path: a temporary file in the same directory
// (mode 0600, the owner of the previous file, prev, when there was one and
// we may give it away), fsync, rename, fsync of the directory. No reader ever sees
// a partial file, and a failure leaves the previous file and no temporary.
func writeAtomic(path string, data []byte, prev os.FileInfo) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing the access file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	if uid, gid, ok := ownerOf(prev); ok && (uid != os.Geteuid() || gid != os.Getegid()) {
		// Root editing a file that belongs to the service's user keeps it
		// the service's: serve must still be able to read it.
		if err = tmp.Chown(uid, gid); err != nil {
			return fmt.Errorf("keeping the access file's owner (uid %d): %w\nhint: run 'airgap token' as that user or as root", uid, err)
		}
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ownerOf returns the owner of the file fi describes; false for no file or
// a system without owner numbers.
func ownerOf(fi os.FileInfo) (uid, gid int, ok bool) {
	if fi == nil {
		return 0, 0, false
	}
	return osfile.Owner(fi)
}

// Describe returns one line per token for 'airgap token list': name,
// created, expiry (and whether it has passed at now), patterns.
func (f *File) Describe(now time.Time) []string {
	var out []string
	for _, t := range f.Tokens {
		exp := "never expires"
		switch {
		case t.Expired(now):
			exp = "EXPIRED " + t.Expires.Format(time.RFC3339)
		case !t.Expires.IsZero():
			exp = "expires " + t.Expires.Format(time.RFC3339)
		}
		out = append(out, fmt.Sprintf("%s\t%s\t%s", t.Name, exp, strings.Join(t.Rules.Patterns(), " ")))
	}
	return out
}
