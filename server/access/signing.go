package access

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/server/internal/filestamp"
)

// Signed download URLs. Terraform and OpenTofu send no token when they
// download a provider package (the registry's download_url, a mirror's
// url, SHA256SUMS and its signature) or a module archive (X-Terraform-Get):
// those go through go-getter with only .netrc. So with an access file, every
// such URL in an answer is signed for the token that asked:
//
//	/blobs/sha256/<hex>/<file>?tok=<token name>&exp=<unix time>&sig=<key id>.<mac>
//
// mac is HMAC-SHA256 under the appliance's URL key over "airgap-url-v1",
// the token name, the expiry, the request path (without the query, and for
// module archives without the //subdir, which the client strips before it
// asks) and the token's hash (not in the URL), so a URL is bound to one
// path, one token and one expiry: changing any of them breaks the MAC, and
// a token revoked and created again under the same name does not inherit
// the old one's URLs. A download with a valid signature needs no
// Authorization header; it is refused (403, body says why) once expired,
// when its token has since been revoked or has expired, or when any part
// was altered; and answered as a missing blob when its token's rules no
// longer allow the address (whatBlob).
//
// Expiry is bucketed so answers stay cacheable: every answer rendered in
// the same bucket of time (a minute, or a quarter of the TTL when that is
// shorter) carries the same expiry, the end of its bucket plus the TTL, so
// a URL is valid for between TTL and TTL + bucket after it was issued and
// all requests in a bucket get identical bytes (the answer cache keeps one
// entry per token and path and renders it again in the next bucket).
//
// The keys live in STORE/tls/url-keys.json (mode 0600, next to the TLS
// keys, shared by replicas like the certificates): the first key signs,
// every listed key verifies. 'airgap token rotate-url-key' puts a new key
// first and keeps the previous one, so URLs issued just before a rotation
// stay valid; a second rotation drops the oldest. Replicas notice a changed
// file within a second (Watch) and immediately when asked to verify a key
// id they do not know.

// urlKeysFile is the key file's name in the store's tls directory.
const urlKeysFile = "url-keys.json"

// maxURLKeys is how many keys the file keeps (the signing key and the one
// before it).
const maxURLKeys = 2

type urlKey struct {
	ID      string    `json:"id"`
	Secret  []byte    `json:"secret"` // 32 random bytes (base64 in JSON)
	Created time.Time `json:"created"`
}

type urlKeyFile struct {
	Keys []urlKey `json:"keys"`
}

// urlKeys holds the signing keys of a store, reloaded when the file
// changes.
type urlKeys struct {
	path  string
	cur   atomic.Pointer[urlKeyFile]
	mu    sync.Mutex // serializes reloads
	stamp string
	last  time.Time // of the last stat for an unknown key id
}

// openURLKeys loads the store's URL keys from tlsDir, creating the file with
// one new key if there is none. Replicas starting at once agree on one
// file: it is created under the key file's lock by the first of them.
func openURLKeys(tlsDir string) (*urlKeys, error) {
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return nil, err
	}
	k := &urlKeys{path: filepath.Join(tlsDir, urlKeysFile)}
	if _, err := os.Stat(k.path); errors.Is(err, fs.ErrNotExist) {
		if err := editURLKeys(tlsDir, func(f *urlKeyFile) (bool, error) {
			if len(f.Keys) > 0 {
				return false, nil // another replica was first
			}
			key, err := newURLKey(time.Now())
			f.Keys = []urlKey{key}
			return true, err
		}); err != nil {
			return nil, err
		}
	}
	if _, err := k.reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// RotateURLKeys puts a new signing key first in the store's key file and
// keeps the one before it (URLs it signed stay valid until they expire);
// running serves pick it up within a second. It returns the new key's id.
func RotateURLKeys(tlsDir string, now time.Time) (string, error) {
	var id string
	err := editURLKeys(tlsDir, func(f *urlKeyFile) (bool, error) {
		key, err := newURLKey(now)
		f.Keys = append([]urlKey{key}, f.Keys...)
		if len(f.Keys) > maxURLKeys {
			f.Keys = f.Keys[:maxURLKeys]
		}
		id = key.ID
		return true, err
	})
	return id, err
}

// editURLKeys applies fn to the key file in tlsDir under its lock
// (urlkeys.json.lock) and, when fn says so, writes it back atomically (mode
// 0600). 'airgap token rotate-url-key' runs it as root in a directory
// serve's user owns, so the lock, the read and the write go through the
// directory's descriptor (osfile.Dir): no link is followed, no FIFO waited
// on, and the new file is given to the directory's owner before it is
// renamed into place, so serve can still read it.
func editURLKeys(tlsDir string, fn func(*urlKeyFile) (bool, error)) error {
	d, err := osfile.OpenDir(filepath.Dir(tlsDir), filepath.Base(tlsDir))
	if err != nil {
		return fmt.Errorf("the URL keys: %w", err)
	}
	defer d.Close()
	path := filepath.Join(tlsDir, urlKeysFile)
	unlock, err := d.LockFile(urlKeysFile + ".lock")
	if err != nil {
		return fmt.Errorf("locking the URL keys: %w", err)
	}
	defer unlock()
	var f urlKeyFile
	if b, err := d.ReadFile(urlKeysFile, maxURLKeyFile); err == nil {
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("%s: %v\nhint: remove it; serve creates a new one (download URLs issued before stop working)", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w\nhint: remove %s; serve creates a new one (download URLs issued before stop working)", err, path)
	}
	write, err := fn(&f)
	if err != nil || !write {
		return err
	}
	b, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return err
	}
	return d.WriteFileAtomic(urlKeysFile, append(b, '\n'), 0o600)
}

// maxURLKeyFile bounds what editURLKeys reads: maxURLKeys keys are well
// under 4 KiB.
const maxURLKeyFile = 64 << 10

func newURLKey(now time.Time) (urlKey, error) {
	k := urlKey{Secret: make([]byte, 32), Created: now.UTC().Truncate(time.Second)}
	var id [4]byte
	if _, err := rand.Read(k.Secret); err != nil {
		return k, err
	}
	if _, err := rand.Read(id[:]); err != nil {
		return k, err
	}
	k.ID = hex.EncodeToString(id[:])
	return k, nil
}

// reload re-reads the key file when its stamp (size, time, inode) changed.
func (k *urlKeys) reload() (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, err := filestamp.Of(k.path)
	if err != nil {
		return false, err
	}
	if st == k.stamp && k.cur.Load() != nil {
		return false, nil
	}
	kf, err := openURLKeyFile(k.path)
	if err != nil {
		return false, err
	}
	defer kf.Close()
	fi, err := kf.Stat()
	if err != nil {
		return false, err
	}
	if err := osfile.CheckPrivate(fi, k.path, "it signs download URLs"); err != nil {
		// serve (or 'token rotate-url-key') run as root hands the keys
		// it writes to the owner of the store's tls folder: that owner
		// holds the store already, so their file is as trusted as root's.
		if !osfile.ClosedMode(fi) || !ownedAsFolder(fi, filepath.Dir(k.path)) {
			return false, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(kf, maxURLKeyFile+1))
	if err != nil {
		return false, err
	}
	if len(b) > maxURLKeyFile {
		return false, fmt.Errorf("%s is larger than %d bytes\nhint: remove it and restart serve; a new key is made (URLs issued before stop working)", k.path, maxURLKeyFile)
	}
	var f urlKeyFile
	if err := json.Unmarshal(b, &f); err != nil || len(f.Keys) == 0 {
		return false, fmt.Errorf("%s holds no usable key (%v)\nhint: remove it and restart serve; a new key is made (URLs issued before stop working)", k.path, err)
	}
	for _, key := range f.Keys {
		if len(key.Secret) < 32 || key.ID == "" || strings.ContainsAny(key.ID, ".&=") {
			return false, fmt.Errorf("%s: key %q is malformed", k.path, key.ID)
		}
	}
	k.cur.Store(&f)
	k.stamp = st
	return true, nil
}

// openURLKeyFile opens the key file at path (STORE/tls/url-keys.json) for
// reading. The path to the store must be one only root and serve's user
// could change (osfile.CheckSafePath): else another user could put a
// store of theirs, and keys of theirs, in its place and forge download
// URLs. The store's tls folder may be the store owner's (serve run as
// root over another user's store): it is opened, and the file in it,
// without following a link (osfile.OpenDir) nor waiting on a FIFO. The
// mode and owner judged are then the open file's, the one read: a name
// checked and then opened again could be another file by then.
func openURLKeyFile(path string) (*os.File, error) {
	tlsDir := filepath.Dir(path)
	store := filepath.Dir(tlsDir)
	if err := osfile.CheckSafePathIfThere(store, "it holds the keys that sign download URLs"); err != nil {
		return nil, fmt.Errorf("the URL keys: %w", err)
	}
	d, err := osfile.OpenDir(store, filepath.Base(tlsDir))
	if err != nil {
		return nil, fmt.Errorf("the URL keys: %w", err)
	}
	defer d.Close()
	f, err := d.OpenRegular(filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("the URL keys: %w", err)
	}
	return f, nil
}

// refreshForUnknown re-reads the file (at most once a second) when a URL
// names a key id this process does not hold: another replica may have
// rotated a moment ago.
func (k *urlKeys) refreshForUnknown() {
	k.mu.Lock()
	if time.Since(k.last) < time.Second {
		k.mu.Unlock()
		return
	}
	k.last = time.Now()
	k.mu.Unlock()
	k.reload()
}

func (k *urlKeys) find(id string) *urlKey {
	f := k.cur.Load()
	for i := range f.Keys {
		if f.Keys[i].ID == id {
			return &f.Keys[i]
		}
	}
	return nil
}

// mac computes the MAC of a URL or bearer: domain separates the uses.
func mac(key *urlKey, domain string, fields ...string) []byte {
	h := hmac.New(sha256.New, key.Secret)
	io.WriteString(h, domain)
	for _, f := range fields {
		h.Write([]byte{0})
		io.WriteString(h, f)
	}
	return h.Sum(nil)
}

// sign returns "<key id>.<base64url mac>" under the current signing key.
func (k *urlKeys) sign(domain string, fields ...string) string {
	key := &k.cur.Load().Keys[0]
	return key.ID + "." + base64.RawURLEncoding.EncodeToString(mac(key, domain, fields...))
}

// verify checks a signature made by sign (constant time), under any listed
// key.
func (k *urlKeys) verify(sig, domain string, fields ...string) bool {
	id, m, ok := strings.Cut(sig, ".")
	if !ok || len(m) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(m)
	if err != nil {
		return false
	}
	key := k.find(id)
	if key == nil {
		k.refreshForUnknown()
		if key = k.find(id); key == nil {
			return false
		}
	}
	return hmac.Equal(got, mac(key, domain, fields...))
}

// Domains of the MACs (a URL signature is never a valid bearer, and the
// other way round).
const (
	macURL    = "airgap-url-v1"
	macBearer = "airgap-oci-bearer-v1"
)

// urlExpiry is the expiry written into URLs issued at now: the end of
// now's bucket plus ttl.
func urlExpiry(now time.Time, ttl time.Duration) int64 {
	b := urlBucket(ttl)
	t := now.Unix()
	return t - t%b + b + int64(ttl/time.Second)
}

// urlBucket is the bucket length in seconds: a minute, or a quarter of the
// TTL when that is shorter, at least a second.
func urlBucket(ttl time.Duration) int64 {
	b := int64(min(time.Minute, ttl/4) / time.Second)
	return max(b, 1)
}

// signedQuery is the query of a signed URL for path, issued to the token
// named who whose id (principal.id) is id.
func (k *urlKeys) signedQuery(path, who, id string, exp int64) string {
	e := strconv.FormatInt(exp, 10)
	return "tok=" + who + "&exp=" + e + "&sig=" + k.sign(macURL, who, e, path, id)
}

// ownedAsFolder reports whether fi's owner is the owner of the folder dir.
func ownedAsFolder(fi os.FileInfo, dir string) bool {
	di, err := os.Stat(dir)
	if err != nil {
		return false
	}
	fu, _, ok1 := osfile.Owner(fi)
	du, _, ok2 := osfile.Owner(di)
	return ok1 && ok2 && fu == du
}
