package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/verify"
)

// ErrNotFound: the registry says the thing does not exist.
var ErrNotFound = errors.New("not found")

// Client talks to registries. The zero value is not usable; use New.
type Client struct {
	// Received counts bytes received by downloads, for progress displays.
	Received    atomic.Int64
	http        *http.Client // metadata: bounded time
	download    *http.Client // packages: no overall timeout
	creds       Credentials
	UserAgent   string
	Retries     int
	Backoff     time.Duration
	mu          sync.Mutex
	discoveries map[string]*discovery
}

type discovery struct {
	once     sync.Once
	services map[string]*url.URL
	err      error
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
		timeout = 10 * time.Second
		if s := os.Getenv("TF_REGISTRY_CLIENT_TIMEOUT"); s != "" {
			var n int
			if _, err := fmt.Sscanf(s, "%d", &n); err == nil && n > 0 {
				timeout = time.Duration(n) * time.Second
			}
		}
	}
	redirects := func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("more than 3 redirects")
		}
		return nil
	}
	return &Client{
		http:        &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: redirects},
		download:    &http.Client{Transport: tr, CheckRedirect: func(r *http.Request, via []*http.Request) error { return limitRedirects(via, 10) }},
		creds:       opt.Credentials,
		UserAgent:   "airgap",
		Retries:     3,
		Backoff:     500 * time.Millisecond,
		discoveries: map[string]*discovery{},
	}
}

func limitRedirects(via []*http.Request, n int) error {
	if len(via) >= n {
		return fmt.Errorf("more than %d redirects", n)
	}
	return nil
}

// retryable reports whether a request should be tried again.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection") {
			return true
		}
		return false
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
		req = req.WithContext(ctx)
		req.Header.Set("User-Agent", c.UserAgent)
		resp, err := cl.Do(req)
		if !retryable(resp, err) || attempt >= c.Retries {
			if err != nil && lastErr != nil && attempt > 0 {
				return nil, fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return resp, err
		}
		if err != nil {
			lastErr = err
		} else {
			lastErr = fmt.Errorf("%s", resp.Status)
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

// apiRequest builds a registry API request: JSON, with host's token.
func (c *Client) apiRequest(u *url.URL, host string) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		req, err := http.NewRequest("GET", u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		if tok := c.creds.Token(host); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		return req, nil
	}
}

// getJSON fetches u (with the host's token) into v and returns the final URL.
func (c *Client) getJSON(ctx context.Context, u *url.URL, v any, host string) (*url.URL, error) {
	resp, err := c.do(ctx, c.http, c.apiRequest(u, host))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == 404:
		return nil, fmt.Errorf("GET %s: %w", u, ErrNotFound)
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return nil, fmt.Errorf("GET %s: %s\nhint: set TF_TOKEN_%s or add a credentials %q block to the CLI config", u, resp.Status, TokenEnvName(host), host)
	case resp.StatusCode != 200:
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return nil, fmt.Errorf("GET %s: invalid JSON: %w", u, err)
	}
	return resp.Request.URL, nil
}

// Services returns the service URLs host advertises. A host with no
// discovery document (404) offers no services.
func (c *Client) Services(ctx context.Context, host string) (map[string]*url.URL, error) {
	c.mu.Lock()
	d := c.discoveries[host]
	if d == nil {
		d = &discovery{}
		c.discoveries[host] = d
	}
	c.mu.Unlock()
	d.once.Do(func() { d.services, d.err = c.discover(ctx, host) })
	return d.services, d.err
}

// SetServices fixes host's services, skipping discovery (like a CLI config
// host block).
func (c *Client) SetServices(host string, services map[string]*url.URL) {
	d := &discovery{services: services}
	d.once.Do(func() {})
	c.mu.Lock()
	c.discoveries[host] = d
	c.mu.Unlock()
}

func (c *Client) discover(ctx context.Context, host string) (map[string]*url.URL, error) {
	du := &url.URL{Scheme: "https", Host: host, Path: "/.well-known/terraform.json"}
	resp, err := c.do(ctx, c.http, c.apiRequest(du, host))
	if err != nil {
		return nil, fmt.Errorf("service discovery for %s: %w", host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return map[string]*url.URL{}, nil
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("service discovery for %s: %s", host, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("service discovery for %s: content type %q, want application/json", host, resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength > 1<<20 {
		return nil, fmt.Errorf("service discovery for %s: document over 1 MB", host)
	}
	var raw map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&raw); err != nil {
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
		return nil, fmt.Errorf("host %s does not offer %s (no such service in its /.well-known/terraform.json)", host, id)
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
// credentials. A partial file is removed.
func (c *Client) Download(ctx context.Context, u string, path string) (verify.Digest, int64, error) {
	resp, err := c.do(ctx, c.download, func() (*http.Request, error) { return http.NewRequest("GET", u, nil) })
	if err != nil {
		return "", 0, fmt.Errorf("downloading %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", 0, fmt.Errorf("downloading %s: %s", u, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	d, n, err := verify.CopyDigest(f, resp.Body)
	if err == nil {
		err = f.Sync()
	}
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
	return d, n, nil
}

// Fetch returns the body of a small document (at most limit bytes), with no
// credentials.
func (c *Client) Fetch(ctx context.Context, u string, limit int64) ([]byte, error) {
	resp, err := c.do(ctx, c.download, func() (*http.Request, error) { return http.NewRequest("GET", u, nil) })
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", u, limit)
	}
	return b, nil
}

// DownloadResumable downloads u into partial, continuing from what partial
// already holds with an HTTP Range request where the server allows it (a
// server that answers 200 gets a fresh download). Body errors are retried,
// resuming each time. It returns the digest and size of the whole file; the
// caller must verify the digest before using the file, and keeps partial on
// error so that a later run resumes. No credentials are sent.
func (c *Client) DownloadResumable(ctx context.Context, u, partial string) (verify.Digest, int64, error) {
	var lastErr error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", 0, ctx.Err()
			case <-time.After(c.Backoff << (attempt - 1)):
			}
		}
		d, n, err := c.downloadOnce(ctx, u, partial)
		if err == nil {
			return d, n, nil
		}
		lastErr = err
		if ctx.Err() != nil || !errors.Is(err, errResumable) {
			break
		}
	}
	return "", 0, fmt.Errorf("downloading %s: %w", u, lastErr)
}

var errResumable = errors.New("interrupted")

// Resumed counts downloads that continued a partial file (for reports).
var Resumed atomic.Int64

func (c *Client) downloadOnce(ctx context.Context, u, partial string) (verify.Digest, int64, error) {
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
	dg := verify.NewDigester()
	if off > 0 {
		if _, err := io.Copy(dg, io.NewSectionReader(f, 0, off)); err != nil {
			return "", 0, err
		}
	}
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
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return "", 0, err
		}
		Resumed.Add(1)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && off > 0:
		// Already complete (or longer than the file): let the digest decide.
		return dg.Digest(), off, nil
	case resp.StatusCode == http.StatusOK:
		if err := f.Truncate(0); err != nil {
			return "", 0, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", 0, err
		}
		dg = verify.NewDigester()
	default:
		return "", 0, fmt.Errorf("%s", resp.Status)
	}
	// No fsync: a download is a cache entry whose digest is checked before
	// use and again when the bundle is written; the bundle itself is synced.
	n, err := io.Copy(io.MultiWriter(f, dg, counter{&c.Received}), resp.Body)
	if err != nil {
		return "", 0, fmt.Errorf("%w after %d bytes: %v", errResumable, dg.Size(), err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return "", 0, fmt.Errorf("%w: got %d of %d bytes", errResumable, n, resp.ContentLength)
	}
	return dg.Digest(), dg.Size(), nil
}

type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }
