package access

import (
	"net/http"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Note is what the handlers and access control tell the access log
// (Observe) about a request that the response does not show: which token
// it acted as (never the secret), why credentials were refused, and which
// download it was.
type Note struct {
	Token    string // a token's name, or "anonymous"
	User     string // a login token's person
	By       string // how it was shown: token, oci_bearer, signed_url, signed_url+token, session, anonymous
	Auth     string // a refusal: authMissing, authInvalid, …
	Denied   string // an address the catalog has and the token may not read (answered as missing)
	Download *Download
	Event    *AuditEvent // an event of the request itself (a login), for the audit log
}

// Noter is the response writer of the access log, which carries the Note
// of its request.
type Noter interface{ Note() *Note }

// NoteOf finds the Note under w, if the access log wraps the handler.
func NoteOf(w http.ResponseWriter) *Note {
	for i := 0; i < 8; i++ {
		if rec, ok := w.(Noter); ok {
			return rec.Note()
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

func noteAuth(w http.ResponseWriter, token, refused string) {
	if n := NoteOf(w); n != nil {
		n.Token, n.Auth = token, refused
	}
}

// noteEvent hands Observe an audit event of the request (a login).
func noteEvent(w http.ResponseWriter, ev *AuditEvent) {
	if n := NoteOf(w); n != nil {
		n.Event = ev
	}
}

// NoteDenied tells the access log that the request asked for addr, which
// its token may not read (the answer is the one for a missing address).
func NoteDenied(w http.ResponseWriter, addr string) {
	if n := NoteOf(w); n != nil && n.Denied == "" {
		n.Denied = addr
	}
}

// NoteDownload tells the access log which download the request was.
func NoteDownload(w http.ResponseWriter, dl *Download) {
	if n := NoteOf(w); n != nil {
		n.Download = dl
	}
}

// Download is what a blob is in the catalog.
type Download struct {
	Kind     string // "provider", "module" or "release"
	Address  string // host/namespace/type, host/namespace/name/system, or the release's product
	Version  string
	Platform string // os_arch for provider packages
	Role     string // dist.Role*
	Digest   verify.Digest
}

// Audited reports whether a download of this blob goes into the audit
// log: provider packages, module archives (tar.gz, or the zip OCI
// clients fetch) and CLI release archives, not SHA256SUMS and signatures.
func (d *Download) Audited() bool {
	return d.Role == dist.RoleProviderPackage || d.Role == dist.RoleModuleArchive || d.Role == dist.RoleModuleZip || d.Role == dist.RoleReleaseZip
}
