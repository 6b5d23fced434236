package access

import (
	"errors"
	"strings"
	"time"

	"github.com/airgap/airgap/server/acl"
)

// Login tokens as principals: what a request's login token may read is
// the union of the current access file's rules for the groups recorded at
// its login and for its person's user block (acl.File.LoginRules). A group
// block narrowed, widened or removed applies to every login token at once;
// a group block added later applies from a person's next login (their
// membership is taken at login).
//
// loginSet is the principals of one version of the records for one
// version of the access file, built when either changes (copy on write; a
// request costs the atomic loads and one map lookup). A principal is kept
// (the same object) as long as its record and the access file are
// unchanged, so the answers cached for it stay valid: a login elsewhere
// does not make everyone's cached answers unreachable. Principals with the
// same patterns share one *acl.Rules (and so one scope).
type loginSet struct {
	acc    *Set
	recs   *loginRecs
	byHash map[[32]byte]*Principal
	byName map[string]*Principal
	rules  map[string]*acl.Rules // the patterns, joined, -> their rules
}

// openLogins opens the login state when f has a login block and it is not
// open yet.
func (a *AccessControl) openLogins(f *acl.File) error {
	if f.Login == nil || a.logins.Load() != nil {
		return nil
	}
	st := a.loginStore
	if st == nil && a.stateDir != "" {
		st = LoginDir(a.stateDir)
	}
	if st == nil {
		return errors.New("the access file has a login block, and this serve has no state directory for login tokens")
	}
	ls, err := openLoginState(st)
	if err != nil {
		return err
	}
	a.logins.Store(ls)
	return nil
}

// loginSetFor returns the login principals for set, building them when the
// records or the access file changed.
func (a *AccessControl) loginSetFor(set *Set, ls *LoginState) *loginSet {
	recs := ls.current()
	if cur := a.lset.Load(); cur != nil && cur.acc == set && cur.recs == recs {
		return cur
	}
	a.lmu.Lock()
	defer a.lmu.Unlock()
	recs = ls.current()
	prev := a.lset.Load()
	if prev != nil && prev.acc == set && prev.recs == recs {
		return prev
	}
	next := buildLoginSet(set, recs, prev)
	a.lset.Store(next)
	return next
}

func buildLoginSet(set *Set, recs *loginRecs, prev *loginSet) *loginSet {
	ls := &loginSet{acc: set, recs: recs, byHash: make(map[[32]byte]*Principal, len(recs.byHash)),
		byName: make(map[string]*Principal, len(recs.byHash)), rules: map[string]*acl.Rules{}}
	same := prev != nil && prev.acc == set
	if same {
		ls.rules = prev.rules
	}
	for h, rec := range recs.byHash {
		var p *Principal
		if same {
			if old := prev.byHash[h]; old != nil && old.login == rec {
				p = old
			}
		}
		if p == nil {
			p = newLoginPrincipal(h, rec, ls.rulesFor(set.file, rec), set.file.Login)
		}
		ls.byHash[h] = p
		ls.byName[rec.Name] = p
	}
	return ls
}

// rulesFor compiles (once per distinct set of patterns) what rec may read;
// nothing when no group or user block applies any more.
func (ls *loginSet) rulesFor(f *acl.File, rec *LoginToken) *acl.Rules {
	pats, _ := f.LoginRules(rec.Groups, rec.User, !rec.EmailUnverified)
	k := strings.Join(pats, "\n")
	if r := ls.rules[k]; r != nil {
		return r
	}
	r, err := acl.CompileUnion(pats)
	if err != nil || len(pats) == 0 {
		r = noRules // (the file's patterns all compiled when it was read)
	}
	ls.rules[k] = r
	return r
}

// newLoginPrincipal is rec's principal under the login block l. It
// expires at rec's expiry or token_lifetime after its creation, whichever
// comes first: a token_lifetime shortened in the access file (after an
// incident, or by a new policy) shortens the tokens already issued, as a
// narrowed group narrows them ('token list' shows the expiry the token
// was issued with).
func newLoginPrincipal(h [32]byte, rec *LoginToken, rules *acl.Rules, l *acl.Login) *Principal {
	exp := rec.Expires
	if l != nil && l.TokenLifetime > 0 && !rec.Created.IsZero() {
		if e := rec.Created.Add(l.TokenLifetime); e.Before(exp) {
			exp = e
		}
	}
	p := &Principal{name: rec.Name, hash: h, rules: rules, expires: exp, id: rec.SHA256, revoked: rec.Revoked, login: rec}
	p.admitted = &Admission{p: p}
	return p
}

// loginPrincipal finds a login token by the hash of its secret: in memory,
// or in the state when another replica issued it since the last scan.
// Without a login block in the access file there are none.
func (a *AccessControl) loginPrincipal(h [32]byte, set *Set) *Principal {
	ls := a.logins.Load()
	if ls == nil || set.file == nil || set.file.Login == nil {
		return nil
	}
	if p := a.loginSetFor(set, ls).byHash[h]; p != nil {
		return p
	}
	if ls.loadOne(h) == nil {
		return nil
	}
	return a.loginSetFor(set, ls).byHash[h]
}

// loginByName finds a login token by name (signed URLs, OCI bearers); a
// miss re-reads the directory if it changed, at most ten times a second.
func (a *AccessControl) loginByName(set *Set, name string) *Principal {
	ls := a.logins.Load()
	if ls == nil || set.file == nil || set.file.Login == nil || a.loginsStale(ls) {
		return nil // (stale: a URL of a token revoked meanwhile would pass)
	}
	if p := a.loginSetFor(set, ls).byName[name]; p != nil {
		return p
	}
	now := time.Now().UnixNano()
	last := a.lastScan.Load()
	if now-last < int64(100*time.Millisecond) || !a.lastScan.CompareAndSwap(last, now) {
		return nil
	}
	if changed, err := ls.scan(false); err != nil || !changed {
		return nil
	}
	return a.loginSetFor(set, ls).byName[name]
}

// ScanLogins re-reads the login tokens now if their directory changed
// (Watch does every second).
func (a *AccessControl) ScanLogins() {
	if ls := a.logins.Load(); ls != nil {
		ls.scan(false)
	}
}
