package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
	"github.com/zclconf/go-cty/cty"
)

// Client talks to registries. The zero value is not usable; use New.
type Client struct {
	// Received counts bytes received by downloads, for progress displays.
	Received  atomic.Int64
	http      *http.Client // metadata: bounded time
	download  *http.Client // packages: no overall timeout
	creds     Credentials
	UserAgent string
	Retries   int
	Backoff   time.Duration
	// IdleTimeout ends a download whose body sends nothing for this long (a
	// transient error: it is resumed like a dropped connection).
	IdleTimeout time.Duration
	// MinRate (bytes per second) and RateWindow cut off a download body
	// slower than MinRate on average over RateWindow (ErrTooSlow).
	MinRate    int64
	RateWindow time.Duration
	// Notice, if set, receives what the client skips (versions with build
	// metadata, which airgap does not carry).
	Notice      func(format string, a ...any)
	mu          sync.Mutex
	discoveries memo[map[string]*url.URL]
	// blocks are the CLI configuration's host blocks in use (UseHostBlock),
	// by host: the proxies whose answers must stay on their own origins.
	blocks map[string]hostBlock
	// allowedHosts are further hosts the proxies' answers may point at
	// (AllowDownloadHosts, CheckProxied), and allowedSeen those noticed.
	allowedHosts, allowedSeen map[string]bool
}

// hostBlock is a host whose services a CLI config host block gives: the
// block's place (for messages) and the origins of its service URLs.
type hostBlock struct {
	at      string
	origins map[string]bool
}

// Options configure New.
type Options struct {
	Credentials Credentials
	// Timeout bounds metadata requests (default 10s, or
	// TF_REGISTRY_CLIENT_TIMEOUT seconds).
	Timeout   time.Duration
	Transport http.RoundTripper // default: proxies and CAs from the environment
}

// New returns a Client.
func New(opt Options) *Client {
	tr := opt.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = http.ProxyFromEnvironment
		t.ResponseHeaderTimeout = 60 * time.Second
		t.MaxIdleConnsPerHost = 16
		tr = t
	}
	timeout := opt.Timeout
	if timeout == 0 {
		timeout = metadataTimeout()
	}
	return &Client{
		http:        &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: CheckRedirect(MaxAPIRedirects)},
		download:    &http.Client{Transport: tr, CheckRedirect: CheckRedirect(maxRedirects)},
		creds:       opt.Credentials,
		UserAgent:   "airgap",
		Retries:     3,
		Backoff:     500 * time.Millisecond,
		IdleTimeout: 2 * time.Minute,
		MinRate:     MinDownloadRate,
		RateWindow:  RateWindow,
		blocks:      map[string]hostBlock{},
	}
}

// metadataTimeout is Terraform's bound on registry metadata requests: 10 s,
// or TF_REGISTRY_CLIENT_TIMEOUT seconds.
func metadataTimeout() time.Duration {
	if s := os.Getenv("TF_REGISTRY_CLIENT_TIMEOUT"); s != "" {
		var n int
		if _, err := fmt.Sscanf(s, "%d", &n); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return 10 * time.Second
}

// CheckRedirect is airgap's one redirect policy for requests that may carry
// a token (an http.Client's CheckRedirect): it refuses more than n
// redirects, redirects to schemes other than https and http, and redirects
// from https to plain http: all are permanent errors. A redirect to another
// origin (scheme, host and port) than the first request's loses the
// Authorization header: net/http compares host names only and keeps it for
// subdomains, so it would send a token to another port of the same host, to
// plain http there, or to any subdomain. The registry client and 'airgap
// client-config --url' (protocol.FetchOrigins) use it.
func CheckRedirect(n int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > n {
			return fmt.Errorf("%w (more than %d; a redirect loop?)", ErrTooManyRedirects, n)
		}
		if err := checkScheme(req.URL); err != nil {
			return err
		}
		if prev := via[len(via)-1].URL; prev.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: %s to %s", ErrInsecureRedirect, prev.Redacted(), req.URL.Redacted())
		}
		if origin(req.URL.Scheme, req.URL.Host) != origin(via[0].URL.Scheme, via[0].URL.Host) {
			req.Header.Del("Authorization")
		}
		return nil
	}
}

// origin is scheme://host:port in lower case, with the scheme's default port
// made explicit.
func origin(scheme, hostport string) string {
	scheme, hostport = strings.ToLower(scheme), strings.ToLower(hostport)
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		port := "443"
		if scheme == "http" {
			port = "80"
		}
		hostport = net.JoinHostPort(strings.Trim(hostport, "[]"), port)
	}
	return scheme + "://" + hostport
}

// tokenFor returns host's token if a request to u may carry it: only over
// https, and only to host itself (its name and port, 443 when it names none)
// or to a service URL a CLI config host block gives for host. Terraform
// sends the token to whatever URL host's discovery document names; airgap
// does not, so a discovery document cannot hand the token to another host or
// port. A host block is the user's own configuration (a company's proxy
// registry standing in for host), so its services get host's token, as in
// Terraform.
func (c *Client) tokenFor(ctx context.Context, u *url.URL, host string) (string, error) {
	if u.Scheme != "https" {
		return "", nil
	}
	if o := origin(u.Scheme, u.Host); o != origin("https", host) && !c.blockOrigin(host, o) {
		return "", nil
	}
	return c.creds.Token(ctx, host)
}

func (c *Client) blockOrigin(host, o string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocks[host].origins[o]
}

func checkScheme(u *url.URL) error {
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("%w %q in %s (only https and http are fetched)", ErrUnsupportedScheme, u.Scheme, u.Redacted())
	}
	return nil
}

// Transient reports whether err is worth retrying: connection errors and
// timeouts (net.Error below the url.Error, unexpected EOF, resets) are;
// redirect loops, unsupported schemes, TLS certificate and handshake errors,
// unknown hosts, size-limit violations, digest mismatches and cancellation
// are permanent, as is anything not known to be transient.
//
// A server that hangs up on a fresh connection before the request is
// written surfaces as net/http's unexported "server closed idle
// connection", a bare errors.New; it is matched by its text because
// nothing else identifies it, and it is transient (the same hang-up a
// moment later is an EOF).
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var (
		record   tls.RecordHeaderError
		alert    tls.AlertError
		dnsErr   *net.DNSError
		urlErr   *url.Error
		netErr   net.Error
		sysErrno syscall.Errno
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, ErrTooLarge), errors.Is(err, ErrTooManyRedirects),
		errors.Is(err, ErrUnsupportedScheme), errors.Is(err, ErrInsecureRedirect), errors.Is(err, verify.ErrDigestMismatch):
		return false
	case isCertError(err), errors.As(err, &record), errors.As(err, &alert):
		return false
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return false
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), serverClosedIdle(err):
		return true
	case errors.As(err, &sysErrno):
		return sysErrno == syscall.ECONNRESET || sysErrno == syscall.ECONNREFUSED || sysErrno == syscall.ECONNABORTED ||
			sysErrno == syscall.EPIPE || sysErrno == syscall.ETIMEDOUT || sysErrno == syscall.EHOSTUNREACH || sysErrno == syscall.ENETUNREACH
	}
	// *url.Error is itself a net.Error: judge what it wraps.
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return errors.As(err, &netErr)
}

// serverClosedIdle reports whether err is (or wraps) net/http's
// errServerClosedIdle, which is not exported.
func serverClosedIdle(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "http: server closed idle connection" {
			return true
		}
	}
	return false
}

// isCertError reports whether err is a failed check of a server's TLS
// certificate.
func isCertError(err error) bool {
	var (
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		hostErr x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	return err != nil && (errors.As(err, &certErr) || errors.As(err, &unknown) || errors.As(err, &hostErr) || errors.As(err, &invalid))
}

// retryable reports whether a request should be tried again.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return Transient(err)
	}
	return resp.StatusCode == 429 || resp.StatusCode >= 500
}

// do sends a request built by mk, retrying with backoff.
func (c *Client) do(ctx context.Context, cl *http.Client, mk func() (*http.Request, error)) (*http.Response, error) {
	var lastErr error
	for attempt := 0; ; attempt++ {
		req, err := mk()
		if err != nil {
			return nil, err
		}
		if err := checkScheme(req.URL); err != nil {
			return nil, err
		}
		req = req.WithContext(ctx)
		req.Header.Set("User-Agent", c.UserAgent)
		resp, err := cl.Do(req)
		if isCertError(err) {
			return nil, fmt.Errorf("%w\nhint: the server's certificate is not trusted; for a private CA or a TLS-inspecting proxy, add its certificate with SSL_CERT_FILE", err)
		}
		if !retryable(resp, err) || attempt >= c.Retries || ctx.Err() != nil {
			if err != nil && lastErr != nil && attempt > 0 {
				return nil, fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return resp, err
		}
		if err != nil {
			lastErr = err
		} else {
			lastErr = fmt.Errorf("%s", status(resp))
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		wait := c.Backoff << attempt
		if resp != nil && resp.StatusCode == 429 {
			if s := resp.Header.Get("Retry-After"); s != "" {
				var n int
				if _, err := fmt.Sscanf(s, "%d", &n); err == nil && n > 0 && n < 60 {
					wait = time.Duration(n) * time.Second
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// apiRequest builds a registry API request: JSON, with host's token when u
// is on host itself (see tokenFor).
func (c *Client) apiRequest(ctx context.Context, u *url.URL, host string) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		req, err := http.NewRequest("GET", u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		tok, err := c.tokenFor(ctx, u, host)
		if err != nil {
			return nil, err
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		return req, nil
	}
}

// getJSON fetches u (with the host's token) into v and returns the final URL.
func (c *Client) getJSON(ctx context.Context, u *url.URL, v any, host string) (*url.URL, error) {
	return c.getJSONAs(ctx, u, v, host, false)
}

// The bounds of the registry's JSON answers: MaxAPIDocumentSize (versions,
// download, mirror and module documents) or MaxDiscoverySize, and
// MaxJSONDepth.
var (
	apiJSON       = dist.JSONLimit{MaxBytes: MaxAPIDocumentSize, MaxDepth: MaxJSONDepth}
	discoveryJSON = dist.JSONLimit{MaxBytes: MaxDiscoverySize, MaxDepth: MaxJSONDepth}
)

// getJSONAs is getJSON; with mustBeJSON, a 200 that is not
// application/json is ErrInvalidAnswer (a login page, a wrong URL).
func (c *Client) getJSONAs(ctx context.Context, u *url.URL, v any, host string, mustBeJSON bool) (*url.URL, error) {
	resp, err := c.do(ctx, c.http, c.apiRequest(ctx, u, host))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == 404:
		return nil, fmt.Errorf("GET %s: %w", u, ErrNotFound)
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return nil, fmt.Errorf("GET %s: %w: %s\nhint: set TF_TOKEN_%s, or add this block to the CLI config (the file TF_CLI_CONFIG_FILE names, or ~/.terraformrc):\n%s",
			u, ErrUnauthorized, status(resp), tokenEnvName(host), dist.HCLHint("credentials", []string{host}, dist.HCLAttr{Name: "token", Value: cty.StringVal("TOKEN")}))
	case resp.StatusCode != 200:
		return nil, fmt.Errorf("GET %s: %w: %s", u, ErrStatus, status(resp))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mustBeJSON && mt != "application/json" {
		return nil, fmt.Errorf("GET %s: %w: content type %s, want application/json (an HTML page here usually means a login page or a wrong URL)", u, ErrInvalidAnswer, quote(resp.Header.Get("Content-Type")))
	}
	body, err := readLimited(resp, MaxAPIDocumentSize)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if err := apiJSON.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("GET %s: %w: invalid JSON: %v", u, ErrInvalidAnswer, err)
	}
	return resp.Request.URL, nil
}

// readLimited reads a whole body of at most limit bytes; a larger one (by
// Content-Length or by what arrives) is ErrTooLarge, without reading past
// limit+1 bytes.
func readLimited(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, tooLarge(resp.ContentLength, limit)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(-1, limit)
	}
	return b, nil
}

func tooLarge(size, limit int64) error {
	if size >= 0 {
		return fmt.Errorf("%w: %s (%d bytes) exceeds the limit of %s", ErrTooLarge, dist.HumanSize(size), size, dist.HumanSize(limit))
	}
	return fmt.Errorf("%w: more than the limit of %s", ErrTooLarge, dist.HumanSize(limit))
}

// Services returns the service URLs host advertises. A host with no
// discovery document (404) offers no services.
func (c *Client) Services(ctx context.Context, host string) (map[string]*url.URL, error) {
	return c.discoveries.do(host, func() (map[string]*url.URL, error) { return c.discover(ctx, host) })
}

// SetServices fixes host's services, skipping discovery.
func (c *Client) SetServices(host string, services map[string]*url.URL) {
	c.discoveries.set(host, services)
}

// UseHostBlock applies a CLI config host block: host's services are the
// block's, without discovery; host's token goes to them (https only, see
// tokenFor); and every URL in their answers (package, SHA256SUMS and
// signature URLs, module locations) must be on one of their origins
// (CheckProxied).
func (c *Client) UseHostBlock(host string, hb HostBlock) {
	c.SetServices(host, hb.Services)
	b := hostBlock{at: hb.At, origins: map[string]bool{}}
	for _, u := range hb.Services {
		b.origins[origin(u.Scheme, u.Host)] = true
	}
	c.mu.Lock()
	c.blocks[host] = b
	c.mu.Unlock()
}

func (c *Client) discover(ctx context.Context, host string) (map[string]*url.URL, error) {
	du := &url.URL{Scheme: "https", Host: host, Path: "/.well-known/terraform.json"}
	resp, err := c.do(ctx, c.http, c.apiRequest(ctx, du, host))
	if err != nil {
		return nil, fmt.Errorf("service discovery for %s: %w", host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return map[string]*url.URL{}, nil
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("service discovery for %s: %w: %s", host, ErrStatus, status(resp))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("service discovery for %s: content type %q, want application/json", host, resp.Header.Get("Content-Type"))
	}
	body, err := readLimited(resp, MaxDiscoverySize)
	if err != nil {
		return nil, fmt.Errorf("service discovery for %s: %w", host, err)
	}
	var raw map[string]any
	if err := discoveryJSON.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("service discovery for %s: %w", host, err)
	}
	final := resp.Request.URL
	out := map[string]*url.URL{}
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			continue
		}
		ref, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("service discovery for %s: service %s: %w", host, k, err)
		}
		u := final.ResolveReference(ref)
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		out[k] = u
	}
	return out, nil
}

// service returns the base URL of a service, or an error saying the host
// does not offer it.
func (c *Client) service(ctx context.Context, host, id string) (*url.URL, error) {
	svcs, err := c.Services(ctx, host)
	if err != nil {
		return nil, err
	}
	u, ok := svcs[id]
	if !ok {
		return nil, fmt.Errorf("host %s does not offer %s (%w in its /.well-known/terraform.json)", host, id, ErrNoService)
	}
	return u, nil
}

func rel(base *url.URL, parts ...string) *url.URL {
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = url.PathEscape(p)
	}
	ref, _ := url.Parse(strings.Join(esc, "/"))
	return base.ResolveReference(ref)
}

// Download streams u into the file at path, hashing while copying, with no
// credentials; a body over limit bytes (0: DefaultMaxModuleSize) is cut off
// at the limit and fails with ErrTooLarge. The file never holds more than
// limit bytes and is removed on any error.
func (c *Client) Download(ctx context.Context, u string, path string, limit int64) (verify.Digest, int64, error) {
	if limit <= 0 {
		limit = DefaultMaxModuleSize
	}
	ctx, idle := c.watchIdle(ctx)
	defer idle.stop()
	resp, err := c.do(ctx, c.download, func() (*http.Request, error) { return http.NewRequest("GET", u, nil) })
	if err != nil {
		return "", 0, fmt.Errorf("downloading %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", 0, fmt.Errorf("downloading %s: %w: %s", u, ErrStatus, status(resp))
	}
	if resp.ContentLength > limit {
		return "", 0, fmt.Errorf("downloading %s: %w", u, tooLarge(resp.ContentLength, limit))
	}
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	dg := verify.NewDigester()
	// No fsync, as for packages (downloadOnce): the file is checked
	// against its digest before use and again when the bundle is written.
	n, err := copyLimited(io.MultiWriter(f, dg, counter{&c.Received}), idle.watchRate(resp.Body, c.MinRate, c.RateWindow), limit)
	err = idle.err(err)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	if err != nil {
		os.Remove(path)
		return "", 0, fmt.Errorf("downloading %s: %w", u, err)
	}
	return dg.Digest(), n, nil
}

// copyLimited copies src to dst until EOF, but never more than limit bytes:
// if src has more, it returns ErrTooLarge having written exactly limit.
func copyLimited(dst io.Writer, src io.Reader, limit int64) (int64, error) {
	n, err := io.Copy(dst, io.LimitReader(src, limit))
	if err != nil {
		return n, err
	}
	if n == limit {
		var one [1]byte
		if m, _ := io.ReadFull(src, one[:]); m > 0 {
			return n, tooLarge(-1, limit)
		}
	}
	return n, nil
}

// Fetch returns the body of a small document (at most limit bytes), with no
// credentials. Like an API call it has a total time bound, the metadata
// timeout (10 s, TF_REGISTRY_CLIENT_TIMEOUT), retries included, so a server
// that trickles a document cannot stall an export.
func (c *Client) Fetch(ctx context.Context, u string, limit int64) ([]byte, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.http.Timeout)
	defer cancel()
	b, err := c.fetch(ctx, u, limit)
	if err != nil && ctx.Err() == context.DeadlineExceeded && parent.Err() == nil {
		return nil, fmt.Errorf("GET %s: %w: not complete after %s (the metadata timeout; TF_REGISTRY_CLIENT_TIMEOUT sets it in seconds)", u, context.DeadlineExceeded, c.http.Timeout)
	}
	return b, err
}

func (c *Client) fetch(ctx context.Context, u string, limit int64) ([]byte, error) {
	ctx, idle := c.watchIdle(ctx)
	defer idle.stop()
	resp, err := c.do(ctx, c.download, func() (*http.Request, error) { return http.NewRequest("GET", u, nil) })
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %w: %s", u, ErrStatus, status(resp))
	}
	resp.Body = io.NopCloser(idle.watch(resp.Body))
	b, err := readLimited(resp, limit)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, idle.err(err))
	}
	return b, nil
}

// DownloadResumable downloads u into partial, continuing from what partial
// already holds with an HTTP Range request where the server allows it (a
// server that answers 200 gets a fresh download). Transient errors while
// reading the body are retried, resuming each time; permanent ones are not
// (see Transient). It returns the digest and size of the whole file; the
// caller must verify the digest before using the file. No credentials are
// sent.
//
// partial never grows past limit bytes (0: DefaultMaxPackageSize): a file
// that is, or says it is, larger fails with ErrTooLarge, and partial is then
// removed, since it cannot be the prefix of a file within the limit. On other
// errors partial is kept so that a later run resumes.
func (c *Client) DownloadResumable(ctx context.Context, u, partial string, limit int64) (verify.Digest, int64, error) {
	if limit <= 0 {
		limit = DefaultMaxPackageSize
	}
	var lastErr error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", 0, ctx.Err()
			case <-time.After(c.Backoff << (attempt - 1)):
			}
		}
		d, n, err := c.downloadOnce(ctx, u, partial, limit)
		if err == nil {
			return d, n, nil
		}
		lastErr = err
		if errors.Is(err, ErrTooLarge) {
			os.Remove(partial)
		}
		if ctx.Err() != nil || !errors.Is(err, errResumable) {
			break
		}
	}
	return "", 0, fmt.Errorf("downloading %s: %w", u, lastErr)
}

var errResumable = errors.New("interrupted")

// resumed counts downloads that continued a partial file (for reports).
var resumed atomic.Int64

// contentRangeTotal returns the complete length a Content-Range header
// states ("bytes 0-99/1000" -> 1000), or -1 when it says "*" or is absent.
func contentRangeTotal(h string) int64 {
	_, total, ok := strings.Cut(h, "/")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func (c *Client) downloadOnce(ctx context.Context, u, partial string, limit int64) (verify.Digest, int64, error) {
	f, err := os.OpenFile(partial, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	off := fi.Size()
	if off > limit {
		return "", 0, tooLarge(off, limit)
	}
	dg := verify.NewDigester()
	if off > 0 {
		if _, err := io.Copy(dg, io.NewSectionReader(f, 0, off)); err != nil {
			return "", 0, err
		}
	}
	ctx, idle := c.watchIdle(ctx)
	defer idle.stop()
	resp, err := c.do(ctx, c.download, func() (*http.Request, error) {
		req, err := http.NewRequest("GET", u, nil)
		if err == nil && off > 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
		}
		return req, err
	})
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && off > 0 && strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", off)):
		if total := contentRangeTotal(resp.Header.Get("Content-Range")); total > limit {
			return "", 0, tooLarge(total, limit)
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return "", 0, err
		}
		resumed.Add(1)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && off > 0:
		// Already complete (or longer than the file): let the digest decide.
		return dg.Digest(), off, nil
	case resp.StatusCode == http.StatusOK:
		if resp.ContentLength > limit {
			return "", 0, tooLarge(resp.ContentLength, limit)
		}
		if err := f.Truncate(0); err != nil {
			return "", 0, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", 0, err
		}
		off = 0
		dg = verify.NewDigester()
	default:
		return "", 0, fmt.Errorf("%w: %s", ErrStatus, status(resp))
	}
	if resp.ContentLength > limit-off {
		return "", 0, tooLarge(off+resp.ContentLength, limit)
	}
	// No fsync: a download is a cache entry whose digest is checked before
	// use and again when the bundle is written; the bundle itself is synced.
	n, err := copyLimited(io.MultiWriter(f, dg, counter{&c.Received}), idle.watchRate(resp.Body, c.MinRate, c.RateWindow), limit-off)
	if err != nil {
		if idle.fired.Load() {
			return "", 0, fmt.Errorf("%w after %d bytes: nothing received for %s", errResumable, dg.Size(), idle.d)
		}
		if errors.Is(err, ErrTooSlow) {
			return "", 0, fmt.Errorf("%w after %d bytes: %w", errResumable, dg.Size(), err)
		}
		if Transient(err) {
			return "", 0, fmt.Errorf("%w after %d bytes: %v", errResumable, dg.Size(), err)
		}
		return "", 0, err
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return "", 0, fmt.Errorf("%w: got %d of %d bytes", errResumable, n, resp.ContentLength)
	}
	return dg.Digest(), dg.Size(), nil
}

// idleReader cancels a request when its body sends nothing for d: the
// timer is armed by watch, once the response has arrived, and re-armed on
// every read. With a minimum rate (watchRate) it also fails a read with
// ErrTooSlow once a window of at least window has brought fewer than
// minRate bytes per second: together with the idle timer, a body slower
// than minRate is cut within window + d.
type idleReader struct {
	r      io.Reader
	d      time.Duration
	t      *time.Timer
	cancel context.CancelFunc
	fired  atomic.Bool

	minRate  int64
	window   time.Duration
	winStart time.Time
	winBytes int64
}

// watchIdle returns a context for one request and the idleReader that will
// cancel it; stop releases both.
func (c *Client) watchIdle(ctx context.Context) (context.Context, *idleReader) {
	ctx, cancel := context.WithCancel(ctx)
	ir := &idleReader{d: c.IdleTimeout, cancel: cancel}
	if ir.d <= 0 {
		ir.d = 2 * time.Minute
	}
	ir.t = time.AfterFunc(time.Hour, func() { ir.fired.Store(true); cancel() })
	ir.t.Stop()
	return ctx, ir
}

// watch starts the timer over body and returns the reader to read it through.
func (ir *idleReader) watch(body io.Reader) io.Reader {
	ir.r = body
	ir.t.Reset(ir.d)
	return ir
}

// watchRate is watch with a minimum average rate (none if minRate or window
// is not positive).
func (ir *idleReader) watchRate(body io.Reader, minRate int64, window time.Duration) io.Reader {
	ir.minRate, ir.window, ir.winStart = minRate, window, time.Now()
	return ir.watch(body)
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	if ir.minRate > 0 && ir.window > 0 {
		ir.winBytes += int64(n)
		if el := time.Since(ir.winStart); el >= ir.window {
			if float64(ir.winBytes) < float64(ir.minRate)*el.Seconds() {
				return n, fmt.Errorf("%w: %d bytes in %s, below the minimum of %s/s", ErrTooSlow, ir.winBytes, el.Round(time.Millisecond), dist.HumanSize(ir.minRate))
			}
			ir.winStart, ir.winBytes = time.Now(), 0
		}
	}
	return n, err
}

// err is what to report for a failed read: the idle timeout if it fired.
func (ir *idleReader) err(err error) error {
	if err != nil && ir.fired.Load() {
		return fmt.Errorf("nothing received for %s: %w", ir.d, err)
	}
	return err
}

func (ir *idleReader) stop() { ir.t.Stop(); ir.cancel() }

type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// usableVersion is v without a leading "v" and whether airgap can carry it
// (dist.ValidVersion); a version with build metadata is skipped with a
// notice, since clients treat it as the same version as the one without.
func (c *Client) usableVersion(what, v string) (string, bool) {
	v = strings.TrimPrefix(v, "v")
	if dist.ValidVersion(v) {
		return v, true
	}
	if dist.HasBuildMetadata(v) && c.Notice != nil {
		c.Notice("notice: %s: skipping version %s, whose build metadata clients ignore when they compare versions (airgap does not carry it)",
			what, v)
	}
	return "", false
}
