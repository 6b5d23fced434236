package registry

import "errors"

// Sentinel errors. Those other than ErrNotFound are permanent: the client
// does not retry them, and a retry would get the same answer.
var (
	// ErrNotFound: the registry says the thing does not exist.
	ErrNotFound = errors.New("not found")
	// ErrTooLarge: a body is (or says it is) larger than the limit for its
	// kind of document. The download is cut off at the limit.
	ErrTooLarge = errors.New("too large")
	// ErrTooManyRedirects: more redirects than the limit, usually a loop.
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrUnsupportedScheme: a URL (or a redirect) that is neither https
	// nor http.
	ErrUnsupportedScheme = errors.New("unsupported URL scheme")
	// ErrInsecureRedirect: a redirect from https to plain http.
	ErrInsecureRedirect = errors.New("redirect from https to plain http refused")
	// ErrInvalidAnswer: a registry answer breaks the protocol, e.g. a
	// string field holding control characters.
	ErrInvalidAnswer = errors.New("invalid registry answer")
	// ErrTooSlow: a download stayed below MinDownloadRate for a whole
	// RateWindow (transient: a resumable download resumes).
	ErrTooSlow = errors.New("download too slow")
	// ErrNoService: the host offers no such service (its discovery
	// document does not list it, or it has none).
	ErrNoService = errors.New("no such service")
	// ErrUnauthorized: the registry refused the request (401 or 403): no
	// token, or one it does not accept.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForeignURL: a registry that a CLI config host block (a proxy) or
	// a network mirror stands for answered with a URL on another origin.
	ErrForeignURL = errors.New("answered with a URL on another host")
	// ErrStatus: the server answered with an HTTP status other than the
	// expected one (after retries, for 429 and 5xx).
	ErrStatus = errors.New("unexpected HTTP status")
)
