package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/osfile"
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

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time          string `json:"time"` // RFC 3339, UTC, milliseconds
	Token         string `json:"token,omitempty"`
	Client        string `json:"client"`
	Kind          string `json:"kind"` // provider or module
	Address       string `json:"address"`
	Version       string `json:"version"`
	Platform      string `json:"platform,omitempty"`
	Digest        string `json:"digest"`
	Bytes         int64  `json:"bytes"`
	Status        int    `json:"status"` // 200, or 206 for a range
	Via           string `json:"via"`    // registry or oci
	ClientName    string `json:"client_name,omitempty"`
	ClientVersion string `json:"client_version,omitempty"`
}

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
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	a.lockf = lf
	if err := a.reopen(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	return a, nil
}

func (a *AuditLog) reopen() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
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
func (a *AuditLog) Write(rec *AuditRecord) error {
	line, err := json.Marshal(rec)
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

// Close closes the log.
func (a *AuditLog) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lockf.Close()
	return a.f.Close()
}

// audit writes the record of a completed download.
func (o *observer) audit(r *http.Request, code int, rec *recorder, dl *Download) {
	client, _ := o.opt.Proxies.ClientAddr(r)
	ar := &AuditRecord{
		Time: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), Token: rec.note.token, Client: client,
		Kind: dl.Kind, Address: dl.Address, Version: dl.Version, Platform: dl.Platform, Digest: string(dl.Digest),
		Bytes: rec.bytes, Status: code, Via: "registry",
	}
	if EndpointKind(r.URL.Path) == KindOther {
		ar.Via = "oci"
	}
	ar.ClientName, ar.ClientVersion = ClientFromUserAgent(r.UserAgent())
	o.opt.Audit.Write(ar)
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

// AuditByToken sums one token's downloads.
type AuditByToken struct {
	Token     string           `json:"token"`
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
// first) and sums the records at or after since (zero: all), for the
// tokens in only (empty: all). Lines that are not audit records are
// counted and skipped. Memory is bounded by the distinct (token, client,
// address, version) tuples, not by the log's length.
func SummarizeAudit(path string, since time.Time, only []string) (*AuditSummary, error) {
	files := auditFiles(path)
	if len(files) == 0 {
		return nil, fmt.Errorf("no audit log at %s\nhint: serve writes it with --audit-log %s (or audit-log = \"%s\" in its --config file)", path, path, path)
	}
	sum := &AuditSummary{OK: true, Files: files, Tokens: []AuditByToken{}}
	if !since.IsZero() {
		sum.Since = since.UTC().Format(time.RFC3339)
	}
	want := map[string]bool{}
	for _, t := range only {
		want[t] = true
	}
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
	for _, f := range files {
		if err := readAuditFile(f, func(rec *AuditRecord, tm time.Time) {
			if tm.Before(since) || len(want) > 0 && !want[rec.Token] {
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
				ta = &tokAgg{t: AuditByToken{Token: name, First: rec.Time}, clients: map[string]bool{}, addrs: map[string]*addrAgg{}}
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
	return sum, nil
}

// auditFiles lists FILE.N … FILE.1, FILE that exist (oldest first).
func auditFiles(path string) []string {
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

func readAuditFile(path string, fn func(*AuditRecord, time.Time), skipped *int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, tooLong, err := readLine(br, maxAuditLine)
		var rec AuditRecord
		switch {
		case tooLong:
			*skipped++
		case len(line) == 0:
		case json.Unmarshal(line, &rec) != nil || rec.Address == "":
			*skipped++
		default:
			tm, terr := time.Parse(time.RFC3339, rec.Time)
			if terr != nil {
				*skipped++
				break
			}
			fn(&rec, tm)
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
