package access

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/verify"
)

// The audit log (serve --audit-log FILE): one JSON line per provider
// package or module archive whose download completed (a 200 or a 206 whose
// body went out whole), for "who fetched which provider, when":
//
//	{"time":"2026-11-24T22:31:07.123Z","token":"ci","client":"10.1.2.3","kind":"provider",
//	 "address":"registry.terraform.io/hashicorp/aws","version":"5.61.0","platform":"linux_amd64",
//	 "digest":"sha256:…","bytes":123456,"status":200,"via":"registry","client_name":"terraform","client_version":"1.11.4"}
//
// "token" is the token's name, "anonymous", or absent without an access
// file; never a secret. "via" is "registry" (a download URL or mirror
// archive) or "oci" (/v2/ blobs). Fields come from the catalog, the access
// file, the parsed client address and the parsed User-Agent, so a line is
// bounded (under 2 KiB) and holds no client text.
//
// Several replicas may append to one file on a shared filesystem: each
// line is one write(2) on an O_APPEND descriptor, made while holding an
// exclusive flock(2) on FILE.lock (NFSv4 maps it to a byte-range lock, and
// O_APPEND alone is not atomic over NFS). Under the same lock a writer
// that finds the file over the size limit rotates it (FILE → FILE.1 →
// FILE.2 …, keeping Keep old files), and a writer whose descriptor no
// longer names FILE (another replica rotated) reopens it first. Cost per
// line: two flock calls, a stat, an fstat and the write, a few µs, paid
// only for package downloads.
//
// A write that fails (a full disk) does not fail the download: it is
// logged and counted (airgap_audit_write_errors_total), what it wrote of
// the line is truncated away, and the next line tries again.

// AuditRecord is one download line of the audit log.
type AuditRecord struct {
	Time          string `json:"time"` // RFC 3339, UTC, milliseconds
	Token         string `json:"token,omitempty"`
	User          string `json:"user,omitempty"` // a login token's person
	Client        string `json:"client"`
	Kind          string `json:"kind"` // provider, module or release (Address: the product)
	Address       string `json:"address"`
	Version       string `json:"version"`
	Platform      string `json:"platform,omitempty"`
	Digest        string `json:"digest"`
	Bytes         int64  `json:"bytes"`
	Status        int    `json:"status"` // 200, or 206 for a range
	Via           string `json:"via"`    // registry, oci or releases
	ClientName    string `json:"client_name,omitempty"`
	ClientVersion string `json:"client_version,omitempty"`
}

// The audit log's other lines are events: who signed in or was refused,
// which tokens were created or revoked, and every request refused for its
// credentials or for asking outside its token's rules:
//
//	{"time":"…","event":"login","token":"login~3f5c…","user":"alice@site.example","groups":["platform"],"client":"10.1.2.3","via":"cli","expires":"…"}
//	{"time":"…","event":"login_refused","user":"bob@site.example","client":"10.1.2.4","reason":"no_rules","via":"browser","detail":"…"}
//	{"time":"…","event":"token_created","token":"ci-network","allow":["**"],"by":"root","expires":"…"}
//	{"time":"…","event":"token_revoked","token":"login~3f5c…","user":"alice@site.example","by":"root"}
//	{"time":"…","event":"refused","token":"ci-network","client":"10.1.2.3","reason":"revoked","endpoint":"provider_versions","status":401}
//	{"time":"…","event":"refused","token":"login~…","user":"alice@site.example","reason":"out_of_scope","endpoint":"provider_versions","address":"registry.terraform.io/hashicorp/aws","status":404}
//
// Refusals audited: invalid, expired and revoked tokens, download URLs
// that are not valid or expired, and out_of_scope (an address the catalog
// has and the token may not read, answered as missing); not requests
// without credentials, nor those refused while their address is throttled
// (so a client guessing tokens writes at most ten lines, then one per 6 s).
// Fields come from the access file, the login state, the catalog and
// fixed sets; detail is serve's own message (cut to 160 bytes, printable).
//
// Refusals cannot drown the rest. Anyone can be refused without a token
// (a sign-in link with a bad redirect_uri, a forged callback), so:
//
//   - refusals (login_refused, refused) go to a file of their own,
//     FILE.refusals (rotated as FILE is, FILE.refusals.1 …): a flood of
//     them rotates only that file, and the security records in FILE —
//     logins, token_created, token_revoked, downloads — stay for as long
//     as their own volume allows. A separate file rather than a reserved
//     share of one: it needs no bookkeeping across replicas, and a reader
//     sees at once which file an attacker can fill.
//   - the security events (login, token_created, token_revoked: every
//     event that is not a refusal) are written to FILE and again to
//     FILE.security (rotated as FILE is): downloads can be sent by anyone
//     the rules let fetch, anonymous requests too, at some 13,000 lines a
//     second from one client (a 1 GiB log, the default 100 MiB and 9 old
//     files, turned over in under 5 minutes); FILE.security grows only
//     with sign-ins and token changes, so they stay. FILE keeps every
//     line, in order, as before; 'airgap audit' counts each event once.
//   - per client address and minute, the first refusalsInFull refusals
//     of each reason (a fixed set of a few dozen) are written whole and
//     the rest counted; when the minute is over one
//     line says how many (event "refusals": count, reasons, and a sample
//     of at most maxRefusalSample details). Refusals while the address is
//     throttled are only counted. At most maxRefusalClients addresses are
//     counted apart; the others share one count (client "other"), whose
//     line says how many refusals came from how many more addresses
//     (told apart up to maxOverflowAddrs, ~2 MiB; "at least" past that)
//     and samples the first of them by address, so a flood from many
//     addresses cannot hide one more silently; the
//     airgap_audit_refusals_unitemised_total metric counts them too.
//
// So one address writes at most refusalsInFull lines per reason it can
// provoke and one count a minute (some 50 lines, under 20 KiB, for the
// reasons a client without credentials reaches, against 3,400 lines a
// second before), however many requests it sends.

// Audit events.
const (
	EventLogin        = "login"
	EventLoginRefused = "login_refused"
	EventTokenCreated = "token_created"
	EventTokenRevoked = "token_revoked"
	EventRefused      = "refused"
	// eventRefusals counts the refusals of one client address that were
	// not written whole.
	eventRefusals = "refusals"
)

// Refusal aggregation (see the audit log's comment).
const (
	refusalWindow     = time.Minute
	refusalsInFull    = 5
	maxRefusalClients = 4096
	maxRefusalSample  = 3
	maxSampleBytes    = 100
	// maxOverflowAddrs bounds the addresses told apart beyond
	// maxRefusalClients in one window (a 64-bit hash each).
	maxOverflowAddrs = 1 << 16
)

// AuditEvent is one event line of the audit log.
type AuditEvent struct {
	Time          string   `json:"time"`
	Event         string   `json:"event"`
	Token         string   `json:"token,omitempty"`
	User          string   `json:"user,omitempty"`
	Groups        []string `json:"groups,omitempty"`
	Client        string   `json:"client,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	Via           string   `json:"via,omitempty"`
	Endpoint      string   `json:"endpoint,omitempty"`
	Address       string   `json:"address,omitempty"`
	Status        int      `json:"status,omitempty"`
	Allow         []string `json:"allow,omitempty"`
	By            string   `json:"by,omitempty"`
	Expires       string   `json:"expires,omitempty"`
	Detail        string   `json:"detail,omitempty"`
	ClientName    string   `json:"client_name,omitempty"`
	ClientVersion string   `json:"client_version,omitempty"`
	// Of a "refusals" line: how many, since when, why, and a few details.
	Count   int            `json:"count,omitempty"`
	Since   string         `json:"since,omitempty"`
	Reasons map[string]int `json:"reasons,omitempty"`
	Sample  []string       `json:"sample,omitempty"`
	// Of the "refusals" line of client "other": how many addresses, past
	// the ones counted apart, the count is from (at least, when
	// AddressesAtLeast).
	Addresses        int  `json:"addresses,omitempty"`
	AddressesAtLeast bool `json:"addresses_at_least,omitempty"`
}

// maxAuditGroups bounds the groups an event line lists.
const maxAuditGroups = 50

// auditDetail makes a message fit an audit line: printable, 160 bytes
// (what it echoes of a request, a redirect_uri say, is cut with it).
func auditDetail(s string) string { return dist.Printable(reply.Cut(s, 160)) }

// AuditTime is the audit log's time format.
func AuditTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// AuditLog appends records to an audit file shared by replicas.
type AuditLog struct {
	path    string
	maxSize int64
	keep    int

	mu     sync.Mutex
	f      *os.File
	lockf  *os.File
	Errors atomic.Int64 // failed writes (metrics)
	onErr  func(error)

	// refusals is FILE.refusals, opened at the first refusal; agg counts
	// the refusals per client address (aggMu guards both).
	aggMu    sync.Mutex
	refusals *AuditLog
	// security is FILE.security, opened at the first security event
	// (aggMu guards it too).
	security *AuditLog
	agg      map[string]*refusalCount
	// overflow: the addresses (hashed) of the refusals counted as "other"
	// in its window, at most maxOverflowAddrs; overflowMore says some
	// were past that.
	overflow     map[uint64]struct{}
	overflowMore bool
	// Unitemised counts refusals from addresses past maxRefusalClients
	// (metrics).
	Unitemised atomic.Int64
	stop       chan struct{}
	stopOnce   sync.Once
}

// refusalCount is one client address's refusals in the current window.
type refusalCount struct {
	since   time.Time
	full    map[string]int // written whole, per reason
	counted int            // not written whole
	reasons map[string]int
	sample  []string
}

// Audit log defaults.
const (
	DefaultAuditMaxSize = 100 << 20
	DefaultAuditKeep    = 9
)

// OpenAuditLog opens (creating, mode 0600) the audit log at path; it
// rotates past maxSize bytes keeping keep old files (zero: the defaults).
// onErr, if set, hears about failed writes.
func OpenAuditLog(path string, maxSize int64, keep int, onErr func(error)) (*AuditLog, error) {
	if maxSize <= 0 {
		maxSize = DefaultAuditMaxSize
	}
	if keep <= 0 {
		keep = DefaultAuditKeep
	}
	a := &AuditLog{path: path, maxSize: maxSize, keep: keep, onErr: onErr}
	lf, err := openInDir(path+".lock", os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	a.lockf = lf
	if err := a.reopen(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	a.agg, a.overflow, a.stop = map[string]*refusalCount{}, map[uint64]struct{}{}, make(chan struct{})
	go a.flushLoop()
	return a, nil
}

// overflowSeed keys the hashes of the addresses past maxRefusalClients.
var overflowSeed = maphash.MakeSeed()

// refusalsPath is the file refusals are written to, beside the audit log.
func refusalsPath(path string) string { return path + ".refusals" }

// securityPath is the file security events are written to again, beside
// the audit log.
func securityPath(path string) string { return path + ".security" }

// securityEvent writes ev to FILE.security (opened if it is not yet).
func (a *AuditLog) securityEvent(ev *AuditEvent) error {
	a.aggMu.Lock()
	if a.security == nil {
		r, err := a.side(securityPath(a.path))
		if err != nil {
			a.aggMu.Unlock()
			return fmt.Errorf("the audit log's security events: %w", err)
		}
		a.security = r
	}
	side := a.security
	a.aggMu.Unlock()
	return side.writeJSON(ev)
}

// side opens a file of its own beside the log (FILE.refusals,
// FILE.security), rotated as the log is.
func (a *AuditLog) side(path string) (*AuditLog, error) {
	r := &AuditLog{path: path, maxSize: a.maxSize, keep: a.keep, onErr: a.onErr}
	lf, err := openInDir(r.path+".lock", os.O_RDWR)
	if err != nil {
		return nil, err
	}
	r.lockf = lf
	if err := r.reopen(); err != nil {
		lf.Close()
		return nil, err
	}
	return r, nil
}

// flushLoop writes the counts of finished windows every ten seconds.
func (a *AuditLog) flushLoop() {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case now := <-t.C:
			a.flushRefusals(now, false)
		}
	}
}

// refusal writes ev (a refusal) whole to the refusals file, or counts it
// (see the audit log's comment).
func (a *AuditLog) refusal(ev *AuditEvent) error {
	now := time.Now()
	a.aggMu.Lock()
	key := ev.Client
	c := a.agg[key]
	if c == nil && len(a.agg) >= maxRefusalClients {
		key = "other"
		c = a.agg[key]
		a.Unitemised.Add(1)
		h := maphash.String(overflowSeed, ev.Client)
		if _, seen := a.overflow[h]; !seen {
			if len(a.overflow) < maxOverflowAddrs {
				a.overflow[h] = struct{}{}
			} else {
				a.overflowMore = true
			}
		}
	}
	if c == nil {
		c = &refusalCount{since: now, reasons: map[string]int{}, full: map[string]int{}}
		a.agg[key] = c
	}
	whole := c.full[ev.Reason] < refusalsInFull && ev.Reason != authThrottled && key != "other" && (len(c.full) < 64 || c.full[ev.Reason] > 0)
	if whole {
		c.full[ev.Reason]++
	} else {
		c.counted++
		if len(c.reasons) < 64 || c.reasons[ev.Reason] > 0 {
			c.reasons[ev.Reason]++
		}
		if len(c.sample) < maxRefusalSample {
			what := ev.Event + " " + ev.Reason + ": " + ev.Detail
			if key == "other" { // the address is not on the line: sample it
				what = ev.Client + " " + what
			}
			c.sample = append(c.sample, dist.Printable(reply.Cut(what, maxSampleBytes)))
		}
	}
	err := a.openRefusalsLocked()
	side := a.refusals
	a.aggMu.Unlock()
	if err != nil || !whole {
		return err
	}
	return side.writeJSON(ev)
}

// openRefusalsLocked opens FILE.refusals if it is not yet (aggMu held).
func (a *AuditLog) openRefusalsLocked() error {
	if a.refusals != nil {
		return nil
	}
	r := &AuditLog{path: refusalsPath(a.path), maxSize: a.maxSize, keep: a.keep, onErr: a.onErr}
	lf, err := openInDir(r.path+".lock", os.O_RDWR)
	if err != nil {
		return fmt.Errorf("the audit log's refusals: %w", err)
	}
	r.lockf = lf
	if err := r.reopen(); err != nil {
		lf.Close()
		return fmt.Errorf("the audit log's refusals: %w", err)
	}
	a.refusals = r
	return nil
}

// flushRefusals writes one "refusals" line for each address whose window
// is over (all of them with all) and had refusals not written whole.
func (a *AuditLog) flushRefusals(now time.Time, all bool) {
	a.aggMu.Lock()
	var lines []*AuditEvent
	for key, c := range a.agg {
		if !all && now.Sub(c.since) < refusalWindow {
			continue
		}
		delete(a.agg, key)
		if c.counted == 0 {
			continue
		}
		d := now.Sub(c.since).Round(time.Second)
		ev := &AuditEvent{Time: AuditTime(now), Event: eventRefusals, Client: key, Count: c.counted,
			Since: AuditTime(c.since), Reasons: c.reasons, Sample: c.sample,
			Detail: fmt.Sprintf("%d more refusals from %s in the last %s (the first %d of each reason were written whole)", c.counted, key, d, refusalsInFull)}
		if key == "other" {
			ev.Addresses, ev.AddressesAtLeast = len(a.overflow), a.overflowMore
			more := ""
			if a.overflowMore {
				more = "at least "
			}
			ev.Detail = fmt.Sprintf("%d refusals from %s%d more addresses not itemised in the last %s: %d addresses were counted apart already (the sample names the first)", c.counted, more, len(a.overflow), d, maxRefusalClients)
			a.overflow, a.overflowMore = map[uint64]struct{}{}, false
		}
		lines = append(lines, ev)
	}
	side := a.refusals
	a.aggMu.Unlock()
	for _, ev := range lines {
		side.writeJSON(ev)
	}
}

// openInDir opens path (created 0600 if absent) for appending (flag
// os.O_APPEND) or as a lock file (os.O_RDWR). 'airgap token create|revoke
// --audit-log' runs as root, and the log's directory is often serve's
// user's (/var/log/airgap): so the file is opened through its directory's
// descriptor, never through a link nor a FIFO there, and a file root
// creates is given to the directory's owner, who appends to it too.
func openInDir(path string, flag int) (*os.File, error) {
	d, err := osfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if flag == os.O_APPEND {
		return d.OpenAppend(filepath.Base(path), 0o600)
	}
	return d.OpenLockFile(filepath.Base(path))
}

func (a *AuditLog) reopen() error {
	f, err := openInDir(a.path, os.O_APPEND)
	if err != nil {
		return err
	}
	if a.f != nil {
		a.f.Close()
	}
	a.f = f
	return nil
}

// Write appends one record as one line.
func (a *AuditLog) Write(rec *AuditRecord) error { return a.writeJSON(rec) }

// WriteEvent appends one event as one line (Time is set when empty).
func (a *AuditLog) WriteEvent(ev *AuditEvent) error {
	if ev.Time == "" {
		ev.Time = AuditTime(time.Now())
	}
	if len(ev.Groups) > maxAuditGroups {
		ev.Groups = ev.Groups[:maxAuditGroups]
	}
	if ev.Event == EventRefused || ev.Event == EventLoginRefused {
		return a.refusal(ev)
	}
	err := a.writeJSON(ev)
	if serr := a.securityEvent(ev); err == nil {
		err = serr
	}
	return err
}

func (a *AuditLog) writeJSON(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.writeLocked(line); err != nil {
		a.Errors.Add(1)
		if a.onErr != nil {
			a.onErr(err)
		}
		return err
	}
	return nil
}

func (a *AuditLog) writeLocked(line []byte) error {
	if err := osfile.Lock(a.lockf); err != nil {
		return fmt.Errorf("locking %s.lock: %w", a.path, err)
	}
	defer osfile.Unlock(a.lockf)
	cur, err := a.f.Stat()
	if err != nil {
		return err
	}
	if named, err := os.Stat(a.path); err != nil || !os.SameFile(named, cur) {
		// Another replica rotated (or someone removed the file).
		if err := a.reopen(); err != nil {
			return err
		}
		if cur, err = a.f.Stat(); err != nil {
			return err
		}
	}
	size := cur.Size()
	if size > 0 && size+int64(len(line)) > a.maxSize {
		if err := a.rotate(); err != nil {
			return fmt.Errorf("rotating %s: %w", a.path, err)
		}
		size = 0
	}
	if _, err := a.f.Write(line); err != nil {
		// A write cut short (a full disk) leaves part of the line, and the
		// next line would be glued to it and lost too: take the part back
		// (under the lock nobody appended since).
		a.f.Truncate(size)
		return err
	}
	return nil
}

// rotate shifts FILE.N-1 → FILE.N … FILE → FILE.1 and starts a new FILE
// (the lock is held).
func (a *AuditLog) rotate() error {
	for i := a.keep - 1; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", a.path, i), fmt.Sprintf("%s.%d", a.path, i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(a.path, a.path+".1"); err != nil {
		return err
	}
	return a.reopen()
}

// Close writes the counts of refusals not yet written and closes the log.
func (a *AuditLog) Close() error {
	if a.stop != nil {
		a.stopOnce.Do(func() { close(a.stop) })
		a.flushRefusals(time.Now(), true)
		a.aggMu.Lock()
		if a.refusals != nil {
			a.refusals.Close()
		}
		if a.security != nil {
			a.security.Close()
		}
		a.aggMu.Unlock()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lockf.Close()
	return a.f.Close()
}

// AuditedRefusal is the reason a refused request goes into the audit log
// with, or "" for none.
func AuditedRefusal(n *Note) string {
	switch n.Auth {
	case authInvalid, authExpired, authRevoked, urlInvalid, urlExpired:
		return n.Auth
	}
	if n.Denied != "" {
		return "out_of_scope"
	}
	return ""
}

// AuditSummary is what 'airgap audit' prints: downloads per token, and per
// token the addresses and versions fetched.
type AuditSummary struct {
	OK      bool           `json:"ok"`
	Files   []string       `json:"files"`
	Since   string         `json:"since,omitempty"`
	First   string         `json:"first,omitempty"`
	Last    string         `json:"last,omitempty"`
	Records int            `json:"records"`
	Skipped int            `json:"skipped_lines"`
	Tokens  []AuditByToken `json:"tokens"`
	// Provenance (with 'audit --store') says, for each version downloaded,
	// which import brought it into the store and who approved that import
	// at the transfer station (AddProvenance).
	Provenance []AuditProvenance `json:"provenance,omitempty"`
	// Events sums the event lines per person (or token): logins, refused
	// logins, token changes and refused requests.
	EventLines int          `json:"event_lines"`
	Events     []AuditByWho `json:"events"`
}

// AuditProvenance is where one downloaded version came from.
type AuditProvenance struct {
	Address   string                 `json:"address"`
	Version   string                 `json:"version"`
	Bundle    string                 `json:"bundle,omitempty"` // "" when the history does not say (pruned, or older)
	Signer    verify.Signer          `json:"signer"`
	Imported  string                 `json:"imported,omitempty"`
	Approvals []store.ApprovalRecord `json:"approvals"`
}

// AddProvenance fills sum.Provenance from the store's import history:
// each downloaded address and version, the newest import that added it,
// and that import's station approvals.
func AddProvenance(sum *AuditSummary, ix *store.Index) {
	prov := store.Provenance(ix)
	seen := map[string]bool{}
	for _, t := range sum.Tokens {
		for _, a := range t.Addresses {
			for _, v := range a.Versions {
				ver, _, _ := strings.Cut(v, " ") // "3.7.0 linux_amd64"
				k := a.Address + " " + ver
				if seen[k] {
					continue
				}
				seen[k] = true
				p := AuditProvenance{Address: a.Address, Version: ver, Approvals: []store.ApprovalRecord{}}
				if e := prov[dist.VersionKey(a.Address, ver)]; e != nil {
					p.Bundle, p.Signer, p.Imported = string(e.Bundle), e.Signer, e.Time.UTC().Format(time.RFC3339)
					p.Approvals = append(p.Approvals, e.Approvals...)
				}
				sum.Provenance = append(sum.Provenance, p)
			}
		}
	}
	sort.Slice(sum.Provenance, func(i, j int) bool {
		a, b := sum.Provenance[i], sum.Provenance[j]
		return a.Address < b.Address || a.Address == b.Address && a.Version < b.Version
	})
}

// AuditFilter picks the lines SummarizeAudit reads.
type AuditFilter struct {
	Since  time.Time // zero: all
	Tokens []string  // token names (empty: all)
	Users  []string  // login tokens' people, by e-mail (empty: all)
}

func (f *AuditFilter) keeps(token, user string, tm time.Time) bool {
	if tm.Before(f.Since) {
		return false
	}
	if len(f.Tokens) > 0 && !slices.Contains(f.Tokens, token) {
		return false
	}
	return len(f.Users) == 0 || slices.ContainsFunc(f.Users, func(u string) bool { return strings.EqualFold(u, user) })
}

// AuditByWho sums the events of one person or token.
type AuditByWho struct {
	Who     string         `json:"who"` // the user, or "token NAME"
	Events  map[string]int `json:"events"`
	Reasons map[string]int `json:"reasons,omitempty"` // of refusals
	Clients []string       `json:"clients"`
	First   string         `json:"first"`
	Last    string         `json:"last"`
	clients map[string]bool
}

// AuditByToken sums one token's downloads.
type AuditByToken struct {
	Token     string           `json:"token"`
	User      string           `json:"user,omitempty"`
	Downloads int              `json:"downloads"`
	Bytes     int64            `json:"bytes"`
	Clients   []string         `json:"clients"`
	First     string           `json:"first"`
	Last      string           `json:"last"`
	Addresses []AuditByAddress `json:"addresses"`
}

// AuditByAddress sums one token's downloads of one address.
type AuditByAddress struct {
	Address   string   `json:"address"`
	Versions  []string `json:"versions"`
	Downloads int      `json:"downloads"`
	Bytes     int64    `json:"bytes"`
	Last      string   `json:"last"`
}

// maxAuditLine bounds a line read back (the writer's are under 2 KiB);
// longer lines are skipped.
const maxAuditLine = 64 << 10

// SummarizeAudit reads the audit log at path and its rotated files (oldest
// first) and sums the records the filter keeps. Lines that are not audit
// records are counted and skipped. Memory is bounded by the distinct
// (token, client, address, version) tuples and (person, event, reason,
// client) tuples, not by the log's length.
func SummarizeAudit(path string, filter AuditFilter) (*AuditSummary, error) {
	since := filter.Since
	files := auditFiles(path)
	if len(files) == 0 {
		return nil, fmt.Errorf("no audit log at %s\nhint: serve writes it with --audit-log %s (or audit-log = \"%s\" in its --config file)", path, path, path)
	}
	sum := &AuditSummary{OK: true, Files: files, Tokens: []AuditByToken{}}
	if !since.IsZero() {
		sum.Since = since.UTC().Format(time.RFC3339)
	}
	whos := map[string]*AuditByWho{}
	type addrAgg struct {
		a        AuditByAddress
		versions map[string]bool
	}
	type tokAgg struct {
		t       AuditByToken
		clients map[string]bool
		addrs   map[string]*addrAgg
	}
	toks := map[string]*tokAgg{}
	// FILE.security repeats FILE's security events (kept there when FILE
	// has turned over): read first, each of its events counted once, and
	// the same line in FILE skipped.
	nSecurity := len(auditFilesOf(securityPath(path)))
	again := map[string]int{}
	eventKey := func(ev *AuditEvent) string { b, _ := json.Marshal(ev); return string(b) }
	for i, f := range files {
		if err := readAuditFile(f, func(rec *AuditRecord, ev *AuditEvent, tm time.Time) {
			if ev != nil {
				if i < nSecurity {
					again[eventKey(ev)]++
				} else if k := eventKey(ev); again[k] > 0 {
					again[k]--
					return
				}
				if filter.keeps(ev.Token, ev.User, tm) {
					sum.EventLines++
					countEvent(whos, ev)
				}
				return
			}
			if !filter.keeps(rec.Token, rec.User, tm) {
				return
			}
			sum.Records++
			if sum.First == "" || rec.Time < sum.First {
				sum.First = rec.Time
			}
			if rec.Time > sum.Last {
				sum.Last = rec.Time
			}
			name := rec.Token
			if name == "" {
				name = "-"
			}
			ta := toks[name]
			if ta == nil {
				ta = &tokAgg{t: AuditByToken{Token: name, User: rec.User, First: rec.Time}, clients: map[string]bool{}, addrs: map[string]*addrAgg{}}
				toks[name] = ta
			}
			ta.t.Downloads++
			ta.t.Bytes += rec.Bytes
			ta.clients[rec.Client] = true
			ta.t.First, ta.t.Last = minStr(ta.t.First, rec.Time), maxStr(ta.t.Last, rec.Time)
			aa := ta.addrs[rec.Address]
			if aa == nil {
				aa = &addrAgg{a: AuditByAddress{Address: rec.Address}, versions: map[string]bool{}}
				ta.addrs[rec.Address] = aa
			}
			aa.a.Downloads++
			aa.a.Bytes += rec.Bytes
			aa.a.Last = maxStr(aa.a.Last, rec.Time)
			v := rec.Version
			if rec.Platform != "" {
				v += " " + rec.Platform
			}
			aa.versions[v] = true
		}, &sum.Skipped); err != nil {
			return nil, err
		}
	}
	for _, ta := range toks {
		ta.t.Clients = sortedKeys(ta.clients)
		ta.t.Addresses = []AuditByAddress{}
		for _, aa := range ta.addrs {
			aa.a.Versions = sortedKeys(aa.versions)
			ta.t.Addresses = append(ta.t.Addresses, aa.a)
		}
		sort.Slice(ta.t.Addresses, func(i, j int) bool { return ta.t.Addresses[i].Address < ta.t.Addresses[j].Address })
		sum.Tokens = append(sum.Tokens, ta.t)
	}
	sort.Slice(sum.Tokens, func(i, j int) bool { return sum.Tokens[i].Token < sum.Tokens[j].Token })
	sum.Events = []AuditByWho{}
	for _, w := range whos {
		w.Clients = sortedKeys(w.clients)
		sum.Events = append(sum.Events, *w)
	}
	sort.Slice(sum.Events, func(i, j int) bool { return sum.Events[i].Who < sum.Events[j].Who })
	return sum, nil
}

// countEvent adds an event line to its person's (or token's) sums.
func countEvent(whos map[string]*AuditByWho, ev *AuditEvent) {
	who := ev.User
	switch {
	case who == "" && ev.Token != "":
		who = "token " + ev.Token
	case who == "":
		who = "unknown"
	}
	w := whos[who]
	if w == nil {
		w = &AuditByWho{Who: who, Events: map[string]int{}, Reasons: map[string]int{}, First: ev.Time, clients: map[string]bool{}}
		whos[who] = w
	}
	if ev.Event == eventRefusals && ev.Count > 0 {
		w.Events[ev.Event] += ev.Count
		for r, n := range ev.Reasons {
			w.Reasons[r] += n
		}
	} else {
		w.Events[ev.Event]++
	}
	if ev.Reason != "" {
		w.Reasons[ev.Reason]++
	}
	if ev.Client != "" {
		w.clients[ev.Client] = true
	}
	w.First, w.Last = minStr(w.First, ev.Time), maxStr(w.Last, ev.Time)
}

// auditFiles lists FILE.security.N … FILE.security, then FILE.N … FILE.1,
// FILE that exist (oldest first), then the same of FILE.refusals.
func auditFiles(path string) []string {
	return append(append(auditFilesOf(securityPath(path)), auditFilesOf(path)...), auditFilesOf(refusalsPath(path))...)
}

func auditFilesOf(path string) []string {
	var out []string
	for i := 1000; i >= 1; i-- {
		p := path + "." + strconv.Itoa(i)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	}
	return out
}

func readAuditFile(path string, fn func(*AuditRecord, *AuditEvent, time.Time), skipped *int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, tooLong, err := readLine(br, maxAuditLine)
		var rec AuditRecord
		var ev AuditEvent
		switch {
		case tooLong:
			*skipped++
		case len(line) == 0:
		case json.Unmarshal(line, &ev) == nil && ev.Event != "":
			tm, terr := time.Parse(time.RFC3339, ev.Time)
			if terr != nil {
				*skipped++
				break
			}
			fn(nil, &ev, tm)
		case json.Unmarshal(line, &rec) != nil || rec.Address == "":
			*skipped++
		default:
			tm, terr := time.Parse(time.RFC3339, rec.Time)
			if terr != nil {
				*skipped++
				break
			}
			fn(&rec, nil, tm)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
		}
	}
}

// readLine returns the next line without its newline, or tooLong (and
// no bytes) for a line over max bytes, which it consumes.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func minStr(a, b string) string {
	if a == "" || b < a {
		return b
	}
	return a
}

func maxStr(a, b string) string {
	if b > a {
		return b
	}
	return a
}
