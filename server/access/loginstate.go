package access

import (
	"crypto/aes"
	"crypto/cipher"
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
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/acl"
)

// Serve's state of single sign-on, under STORE/state/logins/ (mode 0700),
// shared by every replica serving the store and kept across restarts:
//
//	key                          the sealing key of pending sign-ins (32 random bytes), 0600
//	tokens/<sha256 hex>.json     a login token: who, their groups, when it expires
//	tokens/<sha256 hex>.revoked  the same, revoked (kept so its attempts keep its name)
//	codes/<sha256 hex>.json      an authorization code issued to a terraform login, 60 s
//	used/<id>                    a sign-in already completed, until it would have expired
//
// The state lives in a LoginStore: this directory (LoginDir), or, for a
// store in a bucket, the objects of the same names under state/logins/ in
// it, which every replica reads and writes. Every file is written whole
// (on disk: a temporary file, fsync, rename, fsync of the directory); a
// file two replicas may create at once (the key, a code, a used sign-in,
// a token's record) is created only if absent (link(2) on disk, If-None-
// Match: * in a bucket), so exactly one wins; a code is taken by exactly
// one request (LoginStore.Take); everything is read with a size limit
// (64 KiB): the state is shared by processes that may be older or newer,
// and what a bucket holds may have been put there by anyone with write
// access to the prefix. Scans read the files without holding the state's
// mutex.
//
// Login tokens are like the access file's: 256-bit secrets ("airgap_…"),
// of which only the SHA-256 is kept, as the file's name. A request's token
// is looked up by that hash in memory (AccessControl.loginPrincipal), then,
// for a token another replica issued a moment ago, by opening the file of
// that name. Each replica re-reads the tokens within a second of a change
// (LoginStore.Stamp: the directory's modification time, the bucket's
// change counter; in full every 10 s whatever it says), so a revocation
// takes effect everywhere within a second or two, as an access-file edit
// does; at most 10 s should a change counter's write fail. A replica that
// cannot read the state (the bucket unreachable from it, its credentials
// revoked) refuses every login token once it has not read it for
// loginStaleAfter (15 s), rather than admit one revoked meanwhile.
//
// A pending sign-in is not stored: it travels sealed (AES-256-GCM under
// the key) in the OAuth state parameter through the identity provider and
// back, bound to the browser that started it by a cookie (LoginService). So
// /oauth/authorization costs serve no memory and no disk, however many are
// sent; only a sign-in the identity provider completed writes a file here.
//
// Bounds: 50,000 token records (live and revoked; at the bound the 100
// oldest revoked or expired ones are forgotten to make room, and only a
// state of live tokens alone refuses a login, with a message), 20 live
// tokens per person (the oldest is revoked when a 21st is issued), 10,000
// outstanding codes and as many used sign-ins; of one person's revoked
// and expired tokens, the 100 newest are
// kept (forgetOldest), so filling the state with live tokens takes 2,500
// people (20 each), and with what one person leaves, some 420. Each
// record is under 4 KiB on disk and about 1 KiB in memory (with its
// principal), so at most ~50 MiB of memory and ~200 MiB of disk
// at the limit. Records are removed 30 days after they expired or were
// revoked, codes and used sign-ins once expired (sweep, any replica).
// A state can still hold more records than serve keeps (replicas at the
// bound each count what they read; a restored backup): serve then keeps
// 50,000 in memory and reads any other from its file when its token is
// presented, and 'airgap token' (list, revoke) reads every record of up
// to MaxLoginNames names (~100 MiB of memory at most) and refuses a state
// with more rather than revoke a person's tokens but some.

const (
	loginsDir         = "logins"
	maxLoginRecords   = 50000
	maxTokensPerUser  = 20
	maxEndedPerUser   = 100 // revoked and expired records kept per person
	maxLoginCodes     = 10000
	loginCodeTTL      = time.Minute
	pendingLoginTTL   = 10 * time.Minute
	loginRetention    = 30 * 24 * time.Hour
	maxLoginStateFile = 64 << 10
	loginRescanEvery  = 10 * time.Second
	// loginStaleAfter: a replica whose last look at the tokens (the
	// change counter, or a scan) succeeded longer ago than this refuses
	// every login token until one succeeds again: a revocation it cannot
	// see would otherwise be admitted for as long as the state cannot be
	// read (a bucket unreachable from this replica alone, its
	// credentials revoked). Above one call's timeout (10 s), so a single
	// slow answer refuses nobody.
	loginStaleAfter = 15 * time.Second
	loginSweepEvery = time.Minute
)

// MaxLoginStateFile bounds every file of the sign-in state a LoginStore
// reads.
const MaxLoginStateFile = maxLoginStateFile

// MaxLoginNames bounds the names a LoginStore lists of one subdirectory.
const MaxLoginNames = 2 * maxLoginRecords

// LoginNamePrefix starts the name of every login token. '~' is not allowed
// in the access file's token names, so the two never collide.
const LoginNamePrefix = "login~"

// LoginToken is the record of a token issued to a person who signed in
// through the identity provider.
type LoginToken struct {
	Name    string   `json:"name"`
	SHA256  string   `json:"sha256"`
	User    string   `json:"user,omitempty"` // e-mail, lower case
	Subject string   `json:"subject"`
	Issuer  string   `json:"issuer"`
	Groups  []string `json:"groups,omitempty"` // the groups that had a block when they signed in
	// EmailUnverified: the identity provider said the address is not
	// verified, so the person's user block does not apply.
	EmailUnverified bool      `json:"email_unverified,omitempty"`
	Via             string    `json:"via"`              // "cli" (terraform login) or "browser" (the catalog)
	Client          string    `json:"client,omitempty"` // the address it was issued to
	Created         time.Time `json:"created"`
	Expires         time.Time `json:"expires"`
	Revoked         time.Time `json:"revoked,omitzero"`
	RevokedBy       string    `json:"revoked_by,omitempty"`
}

// Who is how logs and pages name the token's person.
func (t *LoginToken) Who() string {
	if t.User != "" {
		return t.User
	}
	return "subject " + t.Subject
}

func (t *LoginToken) hash() ([32]byte, bool) {
	var h [32]byte
	b, err := hex.DecodeString(t.SHA256)
	if err != nil || len(b) != 32 {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

// valid checks a record read from the state (another process wrote it).
func (t *LoginToken) valid() bool {
	if _, ok := t.hash(); !ok || !strings.HasPrefix(t.Name, LoginNamePrefix) || len(t.Name) > 64 ||
		strings.ContainsAny(t.Name, ":&=?#/ ") || dist.Printable(t.Name) != t.Name {
		return false
	}
	if len(t.User) > 256 || len(t.Subject) > 256 || len(t.Issuer) > 1024 || len(t.Groups) > 10000 || t.Expires.IsZero() {
		return false
	}
	return true
}

// loginRecs is one version of the records: replaced whole (copy on write).
type loginRecs struct {
	byHash map[[32]byte]*LoginToken
}

// LoginState is the state directory of one store.
type LoginState struct {
	st   LoginStore
	aead cipher.AEAD
	key  []byte // the sealing key; also keys MACs (mac), another domain
	recs atomic.Pointer[loginRecs]

	// maxRecs is how many records a scan keeps (0: maxLoginRecords, serve's
	// memory bound); 'airgap token' keeps every one listed, because a
	// record it did not read is a token it cannot revoke.
	maxRecs int
	// truncated: the last scan left records unread (past maxRecs, or
	// past the listing's MaxLoginNames).
	truncated atomic.Bool
	// known is when the records were last known current (Unix ns): the
	// change counter read and unchanged, or a scan done.
	known atomic.Int64

	mu       sync.Mutex // guards the fields below and local changes; no file is read while it is held
	scanning bool       // a scan is reading the directory
	stamp    string
	lastScan time.Time
	lastSwp  time.Time
}

// openLoginState opens (creating) the login state of st and its key, and
// reads the tokens.
func openLoginState(st LoginStore) (*LoginState, error) {
	if d, ok := st.(*loginDir); ok {
		if err := d.mkdirs(); err != nil {
			return nil, err
		}
	}
	ls := &LoginState{st: st}
	key, err := ls.loadKey()
	if err != nil {
		return nil, err
	}
	block, _ := aes.NewCipher(key)
	ls.aead, _ = cipher.NewGCM(block)
	ls.key = key
	ls.recs.Store(&loginRecs{byHash: map[[32]byte]*LoginToken{}})
	if _, err := ls.scan(true); err != nil {
		return nil, err
	}
	return ls, nil
}

// loadKey reads the sealing key, creating it if there is none: created
// only if absent (a link on disk, If-None-Match: * in a bucket), which
// fails if another replica was first (its key is then read), so replicas
// starting at once agree on one.
func (ls *LoginState) loadKey() ([]byte, error) {
	path := ls.st.Where("", "key")
	for range 2 {
		b, err := ls.st.Read("", "key")
		if err == nil {
			var k struct{ Secret []byte }
			if json.Unmarshal(b, &k) != nil || len(k.Secret) != 32 {
				return nil, fmt.Errorf("%s holds no usable key\nhint: remove it and restart every serve of the store (sign-ins in progress must start again)", path)
			}
			return k.Secret, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		secret := make([]byte, 32)
		rand.Read(secret)
		b, _ = json.Marshal(map[string]any{"secret": secret, "created": time.Now().UTC().Truncate(time.Second)})
		if err := ls.st.Create("", "key", b); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("%s: cannot be created or read", path)
}

// sealing: what travels through the browser and the identity provider is
// AES-256-GCM under the key, with a random nonce, as base64url; domain
// separates the uses (a sealed state is never a cookie).
func (ls *LoginState) seal(domain string, v any) string {
	plain, _ := json.Marshal(v)
	nonce := make([]byte, ls.aead.NonceSize(), ls.aead.NonceSize()+len(plain)+ls.aead.Overhead())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(ls.aead.Seal(nonce, nonce, plain, []byte(domain)))
}

// mac is an HMAC-SHA256 under the key, base64url, for domain and data
// (the catalog's sign-out form carries one for its session).
func (ls *LoginState) mac(domain, data string) string {
	h := hmac.New(sha256.New, ls.key)
	io.WriteString(h, domain)
	h.Write([]byte{0})
	io.WriteString(h, data)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// maxSealed bounds what unseal decodes: what fits in a form of MaxForm
// bytes beside the other fields (the consent page's grant carries the
// person's groups: 4 KiB turned away someone in 60 groups, whose every
// Allow was "not valid").
const maxSealed = MaxForm - 256

func (ls *LoginState) unseal(domain, s string, v any) error {
	if len(s) > maxSealed {
		return errors.New("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < ls.aead.NonceSize() {
		return errors.New("not sealed by this appliance")
	}
	n := ls.aead.NonceSize()
	plain, err := ls.aead.Open(nil, b[:n], b[n:], []byte(domain))
	if err != nil {
		return errors.New("not sealed by this appliance (or its key was replaced)")
	}
	return json.Unmarshal(plain, v)
}

// current is the records as last read.
func (ls *LoginState) current() *loginRecs { return ls.recs.Load() }

// tokenName is the file name (in tokens/) of a token hash, live or revoked.
func tokenName(h [32]byte, revoked bool) string {
	ext := ".json"
	if revoked {
		ext = ".revoked"
	}
	return hex.EncodeToString(h[:]) + ext
}

// readRecord reads the record in d's file name; nil when it is missing,
// not a regular file or not a valid record of the hash its name gives.
func readRecord(st LoginStore, name string) *LoginToken {
	b, err := st.Read("tokens", name)
	if err != nil {
		return nil
	}
	var t LoginToken
	if json.Unmarshal(b, &t) != nil || !t.valid() {
		return nil
	}
	if hx, _, _ := strings.Cut(name, "."); hx != t.SHA256 {
		return nil
	}
	return &t
}

// loadOne reads the record of hash h from the directory (a token another
// replica issued or revoked since the last scan) and adds it to the
// records; nil when there is none. Cost: at most two reads.
func (ls *LoginState) loadOne(h [32]byte) *LoginToken {
	rec := readRecord(ls.st, tokenName(h, true))
	if rec == nil {
		rec = readRecord(ls.st, tokenName(h, false))
	}
	if rec == nil {
		return nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.put(h, rec)
	return rec
}

// put replaces the record of h (ls.mu held).
func (ls *LoginState) put(h [32]byte, rec *LoginToken) {
	old := ls.recs.Load().byHash
	m := make(map[[32]byte]*LoginToken, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if rec == nil {
		delete(m, h)
	} else {
		m[h] = rec
	}
	ls.recs.Store(&loginRecs{byHash: m})
}

// scan re-reads the tokens directory when it changed (or always with
// force, or every loginRescanEvery): records of new files are read, those
// of removed files dropped, a token whose .revoked file appeared is
// revoked. At most maxLoginRecords files are read. It reports whether the
// records changed. The files are read without ls.mu held: one scan at a
// time reads, and a scan that finds another reading returns at once (the
// records stay as they are until that one is done), so a slow file never
// holds up sign-ins or the other replicas' lookups; a change made here
// while it read (issue, revoke) is kept over what it read.
func (ls *LoginState) scan(force bool) (bool, error) {
	st, err := ls.st.Stamp()
	if err != nil {
		return false, fmt.Errorf("the login tokens: %w", err)
	}
	asked := time.Now()
	ls.mu.Lock()
	if ls.scanning || !force && st == ls.stamp && time.Since(ls.lastScan) < loginRescanEvery {
		if !ls.scanning {
			ls.known.Store(asked.UnixNano())
		}
		ls.mu.Unlock()
		return false, nil
	}
	ls.scanning = true
	oldRecs := ls.recs.Load()
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		ls.scanning = false
		ls.mu.Unlock()
	}()
	ents, err := ls.st.List("tokens", MaxLoginNames, false)
	if err != nil {
		return false, fmt.Errorf("the login tokens: %w", err)
	}
	limit := ls.maxRecs
	if limit == 0 {
		limit = maxLoginRecords
	}
	truncated := len(ents) >= MaxLoginNames
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	old := oldRecs.byHash
	m := make(map[[32]byte]*LoginToken, len(names))
	changed := false
	revoked := map[string]bool{}
	for _, n := range names {
		if h, ok := strings.CutSuffix(n, ".revoked"); ok {
			revoked[h] = true
		}
	}
	for _, n := range names {
		hx, ext, _ := strings.Cut(n, ".")
		if (ext != "json" && ext != "revoked") || !verifyHex(hx) || ext == "json" && revoked[hx] {
			continue
		}
		if len(m) >= limit {
			truncated = true
			continue
		}
		var h [32]byte
		hex.Decode(h[:], []byte(hx))
		if rec := old[h]; rec != nil && rec.Revoked.IsZero() == (ext == "json") {
			m[h] = rec // unchanged: records are never rewritten in place
			continue
		}
		if rec := readRecord(ls.st, n); rec != nil {
			m[h], changed = rec, true
		}
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if cur := ls.recs.Load(); cur != oldRecs {
		// put ran while the files were read: its changes win.
		for k, v := range cur.byHash {
			if old[k] != v {
				m[k] = v
			}
		}
		for k := range old {
			if _, ok := cur.byHash[k]; !ok {
				delete(m, k)
			}
		}
		changed = true
	}
	changed = changed || len(m) != len(old)
	if changed {
		ls.recs.Store(&loginRecs{byHash: m})
	}
	ls.stamp, ls.lastScan = st, time.Now()
	ls.truncated.Store(truncated)
	ls.known.Store(asked.UnixNano())
	return changed, nil
}

// fresh reports whether the records were known current within
// loginStaleAfter of now.
func (ls *LoginState) fresh(now time.Time) bool {
	return now.Sub(time.Unix(0, ls.known.Load())) <= loginStaleAfter
}

// verifyHex reports whether s is a SHA-256 in lower-case hex.
func verifyHex(s string) bool { return isHex(s, 64) }

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// writeRecord writes a token's record atomically.
func (ls *LoginState) writeRecord(h [32]byte, rec *LoginToken) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return ls.st.Write("tokens", tokenName(h, !rec.Revoked.IsZero()), append(b, '\n'))
}

// ErrLoginFull marks a login refused because the state holds as many
// records as it may.
var ErrLoginFull = errors.New("the appliance holds as many login tokens as it may")

// issue makes a new token for rec (its Name and SHA256 are set here),
// writes it before it returns (so every replica accepts it) and returns its
// secret. A person's live tokens beyond maxTokensPerUser - 1 are revoked,
// oldest first.
func (ls *LoginState) issue(rec *LoginToken, now time.Time) (string, error) {
	var secret string
	var h [32]byte
	for {
		s, err := acl.NewSecret()
		if err != nil {
			return "", err
		}
		secret, h = s, acl.HashSecret(s)
		rec.SHA256 = hex.EncodeToString(h[:])
		rec.Name = LoginNamePrefix + rec.SHA256[:16]
		if !ls.nameTaken(rec.Name) {
			break
		}
	}
	recs := ls.current().byHash
	if len(recs) >= maxLoginRecords {
		// Full: the oldest ended records (revoked or expired) make room,
		// else nobody could sign in until the sweep removed them, 30 days
		// after they ended; revoking tokens would free nothing.
		ls.makeRoom(now, loginRoomBatch)
		recs = ls.current().byHash
	}
	if len(recs) >= maxLoginRecords {
		return "", fmt.Errorf("%w (%d, every one a live token); ask its operator to revoke unused ones ('airgap token revoke --store DIR --user EMAIL')", ErrLoginFull, maxLoginRecords)
	}
	var mine, ended []*LoginToken
	for _, t := range recs {
		if t.Subject != rec.Subject || t.Issuer != rec.Issuer {
			continue
		}
		if t.Revoked.IsZero() && !now.After(t.Expires) {
			mine = append(mine, t)
		} else {
			ended = append(ended, t)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Created.Before(mine[j].Created) })
	for i := 0; i+maxTokensPerUser <= len(mine); i++ {
		ls.revoke(mine[i], "replaced by a newer login", now)
		ended = append(ended, mine[i])
	}
	ls.forgetOldest(ended, maxEndedPerUser)
	if err := ls.writeRecord(h, rec); err != nil {
		return "", fmt.Errorf("writing the login token: %w", err)
	}
	ls.mu.Lock()
	ls.put(h, rec)
	ls.mu.Unlock()
	return secret, nil
}

// loginRoomBatch is how many ended records a full state forgets at once
// (makeRoom): one sign-in at the bound pays for the next hundred.
const loginRoomBatch = 100

// makeRoom forgets the n oldest ended records (revoked, or expired) of
// everyone, as forgetOldest does one person's: the live file first, so a
// forgotten token is refused as unknown, never accepted. Cost: two
// removals a record and one copy of the records.
func (ls *LoginState) makeRoom(now time.Time, n int) {
	var ended []*LoginToken
	for _, t := range ls.current().byHash {
		if !t.Revoked.IsZero() || now.After(t.Expires) {
			ended = append(ended, t)
		}
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].Created.Before(ended[j].Created) })
	gone := map[[32]byte]bool{}
	for _, t := range ended[:min(n, len(ended))] {
		h, ok := t.hash()
		if !ok {
			continue
		}
		if !ls.dropRecord(h) {
			continue
		}
		gone[h] = true
	}
	if len(gone) == 0 {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	old := ls.recs.Load().byHash
	m := make(map[[32]byte]*LoginToken, len(old))
	for k, v := range old {
		if !gone[k] {
			m[k] = v
		}
	}
	ls.recs.Store(&loginRecs{byHash: m})
}

// dropRecord removes token h's record: the live file first, and the
// revocation only once that is gone, so a record is never left live
// without its revocation; false if the live file stays.
func (ls *LoginState) dropRecord(h [32]byte) bool {
	if err := ls.st.Remove("tokens", tokenName(h, false)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	ls.st.Remove("tokens", tokenName(h, true))
	return true
}

// forgetOldest removes the records of ended (one person's revoked and
// expired tokens) but the keep most recently created, before their
// loginRetention is up: one person signing in again and again (a script
// driving the identity provider's form) would otherwise fill the state
// with their own revoked tokens, up to maxLoginRecords, and lock everyone
// out of signing in for the 30 days those records are kept. A forgotten
// token is refused as unknown instead of as revoked (its attempts lose
// its name in the audit); never accepted: the live file goes first.
func (ls *LoginState) forgetOldest(ended []*LoginToken, keep int) {
	if len(ended) <= keep {
		return
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].Created.After(ended[j].Created) })
	for _, t := range ended[keep:] {
		h, ok := t.hash()
		if !ok {
			continue
		}
		if !ls.dropRecord(h) {
			continue
		}
		ls.mu.Lock()
		ls.put(h, nil)
		ls.mu.Unlock()
	}
}

func (ls *LoginState) nameTaken(name string) bool {
	for _, t := range ls.current().byHash {
		if t.Name == name {
			return true
		}
	}
	return false
}

// revoke revokes a token: its record is written as .revoked, then the live
// file removed (a reader that finds both takes .revoked).
func (ls *LoginState) revoke(rec *LoginToken, by string, now time.Time) error {
	h, ok := rec.hash()
	if !ok {
		return errors.New("a malformed login record")
	}
	r := *rec
	r.Revoked, r.RevokedBy = now.UTC(), by
	if err := ls.writeRecord(h, &r); err != nil {
		return err
	}
	if err := ls.st.Remove("tokens", tokenName(h, false)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ls.mu.Lock()
	ls.put(h, &r)
	ls.mu.Unlock()
	return nil
}

// loginCode is what an authorization code stands for until the CLI
// exchanges it (at most loginCodeTTL): the person, and the client's
// redirect URI and PKCE challenge it must present.
type loginCode struct {
	Token       LoginToken `json:"token"`
	RedirectURI string     `json:"redirect_uri"`
	Challenge   string     `json:"code_challenge"`
	Expires     time.Time  `json:"expires"`
}

// newCode stores a code for c and returns it (the file is named by its
// hash: the state never holds a code that could be exchanged).
// Codes that are not exchanged (a CLI that went away, or a person
// signing in again and again without one) count against maxLoginCodes
// only until they expire: when the directory is full, the expired ones
// are removed first, so one scripted person cannot keep everyone's
// 'terraform login' refused (with the sweep's 11 minutes, 15 sign-ins a
// second did; now it takes 10,000 within loginCodeTTL plus a minute).
func (ls *LoginState) newCode(c *loginCode) (string, error) {
	if n, _ := ls.st.List("codes", maxLoginCodes+1, false); len(n) > maxLoginCodes {
		if ls.removeOld("codes", codeFileAge, time.Now()); ls.countNames("codes") > maxLoginCodes {
			return "", fmt.Errorf("%w: %d sign-ins are waiting for their client; try again in a minute", ErrLoginFull, maxLoginCodes)
		}
	}
	code, err := acl.NewSecret()
	if err != nil {
		return "", err
	}
	code = strings.TrimPrefix(code, acl.SecretPrefix)
	b, _ := json.Marshal(c)
	h := sha256.Sum256([]byte(code))
	if err := ls.st.Create("codes", hex.EncodeToString(h[:])+".json", b); err != nil {
		return "", fmt.Errorf("storing the authorization code: %w", err)
	}
	return code, nil
}

// Why a code is refused.
var (
	errCodeUnknown = errors.New("the authorization code is unknown, already used or expired: run the login again")
)

// claimCode takes a code out of the state: exactly one caller, on any
// replica, gets it (the one whose remove succeeds).
func (ls *LoginState) claimCode(code string, now time.Time) (*loginCode, error) {
	if len(code) == 0 || len(code) > 128 {
		return nil, errCodeUnknown
	}
	h := sha256.Sum256([]byte(code))
	name := hex.EncodeToString(h[:]) + ".json"
	b, err := ls.st.Take("codes", name)
	if err != nil {
		return nil, errCodeUnknown // unknown, or another request took it first
	}
	var c loginCode
	// now is when the request came; taking it from a bucket may have
	// taken a while, so the later of the two.
	if t := time.Now(); t.After(now) {
		now = t
	}
	if json.Unmarshal(b, &c) != nil || !now.Before(c.Expires) {
		return nil, errCodeUnknown
	}
	return &c, nil
}

// markUsed records that the sign-in id completed; false when it was
// already (a replayed state).
func (ls *LoginState) markUsed(id string, until time.Time) (bool, error) {
	if !isHex(id, 32) {
		return false, nil
	}
	err := ls.st.Create("used", id, []byte(until.UTC().Format(time.RFC3339)))
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// wasUsed reports whether the sign-in id completed already.
func (ls *LoginState) wasUsed(id string) bool {
	if !isHex(id, 32) {
		return true
	}
	// Unknown only when it surely is not there: a file that cannot be
	// read (or is not a regular file) counts as used.
	_, err := ls.st.Read("used", id)
	return !errors.Is(err, fs.ErrNotExist)
}

// sweep removes, at most once a loginSweepEvery, the records that expired
// or were revoked more than loginRetention ago, and codes and used
// sign-ins past their expiry. Replicas may sweep at once: a file another
// removed first is skipped.
func (ls *LoginState) sweep(now time.Time) {
	ls.mu.Lock()
	if now.Sub(ls.lastSwp) < loginSweepEvery {
		ls.mu.Unlock()
		return
	}
	ls.lastSwp = now
	ls.mu.Unlock()
	for h, t := range ls.current().byHash {
		end := t.Expires
		if !t.Revoked.IsZero() && t.Revoked.Before(end) {
			end = t.Revoked
		}
		if now.Sub(end) > loginRetention {
			ls.dropRecord(h)
		}
	}
	ls.removeOld("codes", codeFileAge, now)
	ls.removeOld("used", pendingLoginTTL+time.Minute, now)
	ls.scan(true)
}

// codeFileAge is when a code's file is removed: its loginCodeTTL, and a
// minute for clocks of replicas (and a network filesystem) that differ.
const codeFileAge = loginCodeTTL + time.Minute

// removeOld removes the files of sub (codes, used) modified more than age
// before now (at most 2 × maxLoginCodes are looked at).
func (ls *LoginState) removeOld(sub string, age time.Duration, now time.Time) {
	ents, _ := ls.st.List(sub, 2*maxLoginCodes, true)
	for _, e := range ents {
		if now.Sub(e.Modified) > age {
			ls.st.Remove(sub, e.Name)
		}
	}
}

func (ls *LoginState) countNames(sub string) int {
	n, _ := ls.st.List(sub, maxLoginCodes+1, false)
	return len(n)
}

// ErrNoLoginState marks a store whose serve never signed anyone in.
var ErrNoLoginState = errors.New("no login tokens")

// readLoginState opens a store's login state to read or revoke tokens
// ('airgap token'), creating nothing.
func readLoginState(st LoginStore, storeName string) (*LoginState, error) {
	if _, err := st.List("tokens", 1, false); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s: its serve has not signed anyone in (the access file needs a login block)", ErrNoLoginState, storeName)
	} else if err != nil {
		return nil, err
	}
	ls := &LoginState{st: st, maxRecs: MaxLoginNames}
	ls.recs.Store(&loginRecs{byHash: map[[32]byte]*LoginToken{}})
	if _, err := ls.scan(true); err != nil {
		return nil, err
	}
	if ls.truncated.Load() {
		// A revocation that missed a record would leave its token live on
		// every replica (a token not in memory is read from its record),
		// while saying it revoked the person's tokens.
		return nil, fmt.Errorf("the login state of %s holds %d names or more in %s: not all were read, so a token could be missed\nhint: remove the records of tokens long revoked or expired there (their .revoked and .json names), then run it again", storeName, MaxLoginNames, st.Where("tokens", ""))
	}
	return ls, nil
}

// LoginTokens lists a store directory's login tokens, live and revoked,
// newest first.
func LoginTokens(storeDir string) ([]*LoginToken, error) {
	return LoginTokensIn(LoginDir(store.StateDir(storeDir)), storeDir)
}

// LoginTokensIn is LoginTokens of the login state st (of the store
// storeName).
func LoginTokensIn(st LoginStore, storeName string) ([]*LoginToken, error) {
	ls, err := readLoginState(st, storeName)
	if err != nil {
		return nil, err
	}
	var out []*LoginToken
	for _, t := range ls.current().byHash {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// RevokeLoginTokens revokes the live login tokens of the person whose
// e-mail is user (case-insensitively), or the one named name, and returns
// them; every serve of the store refuses them within a second or two. by
// says who revoked them (the audit log and 'token list' show it).
func RevokeLoginTokens(storeDir, user, name, by string, now time.Time) ([]*LoginToken, error) {
	return RevokeLoginTokensIn(LoginDir(store.StateDir(storeDir)), storeDir, user, name, by, now)
}

// RevokeLoginTokensIn is RevokeLoginTokens in the login state st (of the
// store storeName).
func RevokeLoginTokensIn(st LoginStore, storeName, user, name, by string, now time.Time) ([]*LoginToken, error) {
	ls, err := readLoginState(st, storeName)
	if err != nil {
		return nil, err
	}
	var out []*LoginToken
	for _, t := range ls.current().byHash {
		if !t.Revoked.IsZero() || (user == "" || !strings.EqualFold(t.User, user)) && (name == "" || t.Name != name) {
			continue
		}
		if err := ls.revoke(t, by, now); err != nil {
			return out, fmt.Errorf("revoking %s: %w", t.Name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// IssueLoginToken writes a login token for rec into a store's login state
// as a completed sign-in does, and returns its secret: for benchmarks and
// tests, which have no identity provider to sign in at. rec's Name and
// SHA256 are set; Created and Expires must be.
func IssueLoginToken(storeDir string, rec *LoginToken) (string, error) {
	ls, err := openLoginState(LoginDir(store.StateDir(storeDir)))
	if err != nil {
		return "", err
	}
	return ls.issue(rec, rec.Created)
}
