package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/airgap/airgap/verify"
)

// Errors a Client's calls wrap.
var (
	// ErrNotFound: no object under the key.
	ErrNotFound = errors.New("no such object")
	// ErrPrecondition: a conditional write (If-None-Match: *, If-Match)
	// was refused because the object is there, or changed.
	ErrPrecondition = errors.New("the object changed (conditional write refused)")
	// ErrTooLarge: an object or a listing is larger than the caller's bound.
	ErrTooLarge = errors.New("larger than allowed")
)

// Bounds on what the server may send. A listing longer than MaxList keys
// is refused rather than read into memory; retries are bounded (5
// attempts, backoff up to 5 s: about 15 s of 503 SlowDown before a call
// fails).
const (
	MaxList        = 1_000_000
	maxAttempts    = 5
	maxBackoff     = 5 * time.Second
	headerTimeout  = 60 * time.Second
	connectTimeout = 15 * time.Second
)

// Object is one object's name (relative to the store's prefix), size and
// ETag (with its quotes, as the server sent it).
type Object struct {
	Name string
	Size int64
	ETag string
	// Modified is the server's time of the last write (set by List).
	Modified time.Time
}

// Client is a store in a bucket. Safe for concurrent use.
type Client struct {
	s3   *s3.Client
	addr *Addr
}

// Open makes a client for the store at a, with credentials, region and
// endpoint from the standard AWS chain (environment, shared config and
// credentials files, web identity, AWS_ENDPOINT_URL_S3), the address's
// parameters overriding the region and the endpoint. It sends nothing.
func Open(ctx context.Context, a *Addr) (*Client, error) {
	// The SDK's buildable client, so that AWS_CA_BUNDLE (a site CA for the
	// endpoint) still applies.
	hc := awshttp.NewBuildableClient().WithDialerOptions(func(d *net.Dialer) {
		d.Timeout = connectTimeout
	}).WithTransportOptions(func(tr *http.Transport) {
		tr.TLSHandshakeTimeout = connectTimeout
		tr.ResponseHeaderTimeout = headerTimeout
		tr.MaxIdleConnsPerHost = 64
	})
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(hc),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = maxBackoff
			})
		}),
	}
	if a.Region != "" {
		opts = append(opts, config.WithRegion(a.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("store %s: reading the AWS configuration: %w\nhint: credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, or a web identity token", a, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers mostly ignore it; the signature needs one
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if a.Endpoint != "" {
			o.BaseEndpoint = aws.String(a.Endpoint)
		}
		o.UsePathStyle = a.PathStyle
		// Checksums only where S3 requires them: the blobs are checked by
		// their sha256 names, and not every S3-compatible server takes the
		// SDK's trailing checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &Client{s3: c, addr: a}, nil
}

// Addr is the client's store address.
func (c *Client) Addr() *Addr { return c.addr }

func (c *Client) key(name string) string {
	if c.addr.Prefix == "" {
		return name
	}
	return c.addr.Prefix + "/" + name
}

// Head says an object's size and ETag, or ErrNotFound.
func (c *Client) Head(ctx context.Context, name string) (Object, error) {
	out, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &c.addr.Bucket, Key: aws.String(c.key(name))})
	if err != nil {
		return Object{}, c.explain("reading", name, err)
	}
	return Object{Name: name, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

// Get opens an object for reading, refusing one larger than max bytes
// (the body is cut off past max too, whatever the server said).
func (c *Client) Get(ctx context.Context, name string, max int64) (io.ReadCloser, Object, error) {
	return c.get(ctx, name, max, nil)
}

// GetIfMatch is Get of the version with ETag etag; another gives
// ErrPrecondition.
func (c *Client) GetIfMatch(ctx context.Context, name, etag string, max int64) (io.ReadCloser, Object, error) {
	return c.get(ctx, name, max, &etag)
}

func (c *Client) get(ctx context.Context, name string, max int64, ifMatch *string) (io.ReadCloser, Object, error) {
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &c.addr.Bucket, Key: aws.String(c.key(name)), IfMatch: ifMatch})
	if err != nil {
		return nil, Object{}, c.explain("reading", name, err)
	}
	if out.ContentLength == nil {
		out.Body.Close()
		return nil, Object{}, fmt.Errorf("reading %s: the server sent no Content-Length", c.where(name))
	}
	o := Object{Name: name, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	if o.Size > max {
		out.Body.Close()
		return nil, o, fmt.Errorf("%s: %w: %d bytes, at most %d", c.where(name), ErrTooLarge, o.Size, max)
	}
	return &limitedBody{r: io.LimitReader(out.Body, max+1), c: out.Body, max: max, what: c.where(name)}, o, nil
}

type limitedBody struct {
	r    io.Reader
	c    io.Closer
	n    int64
	max  int64
	what string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n, fmt.Errorf("%s: %w: more than %d bytes", b.what, ErrTooLarge, b.max)
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.c.Close() }

// ReadSmall reads a whole object of at most max bytes.
func (c *Client) ReadSmall(ctx context.Context, name string, max int64) ([]byte, Object, error) {
	rc, o, err := c.Get(ctx, name, max)
	if err != nil {
		return nil, o, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, o, fmt.Errorf("%s: %w", c.where(name), err)
	}
	return data, o, nil
}

// PutIfAbsent writes an object only if there is none under its key
// (If-None-Match: *): ErrPrecondition if there is. body must be seekable
// (the request is signed over its sha256 and may be retried).
func (c *Client) PutIfAbsent(ctx context.Context, name string, body io.ReadSeeker, size int64) (string, error) {
	return c.put(ctx, name, body, size, nil, aws.String("*"))
}

// PutIfMatch replaces an object only if its ETag is still etag
// (If-Match): ErrPrecondition if it changed or is gone.
func (c *Client) PutIfMatch(ctx context.Context, name, etag string, body io.ReadSeeker, size int64) (string, error) {
	return c.put(ctx, name, body, size, &etag, nil)
}

// PutBytes is PutIfAbsent (etag "") or PutIfMatch of data.
func (c *Client) PutBytes(ctx context.Context, name, etag string, data []byte) (string, error) {
	if etag == "" {
		return c.PutIfAbsent(ctx, name, bytes.NewReader(data), int64(len(data)))
	}
	return c.PutIfMatch(ctx, name, etag, bytes.NewReader(data), int64(len(data)))
}

// PutBlob is PutIfAbsent of a blob whose name, hex, is the sha256 of its
// bytes: the request is signed over that digest (x-amz-content-sha256)
// instead of the SDK reading the body once more to hash it, and the
// server refuses bytes that do not match it.
func (c *Client) PutBlob(ctx context.Context, hex string, body io.ReadSeeker, size int64) (string, error) {
	return c.put(ctx, BlobPrefix+hex, body, size, nil, aws.String("*"), func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Build.Add(middleware.BuildMiddlewareFunc("AirgapBlobPayloadHash", func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				return next.HandleBuild(v4.SetPayloadHash(ctx, hex), in)
			}), middleware.After)
		})
	})
}

func (c *Client) put(ctx context.Context, name string, body io.ReadSeeker, size int64, ifMatch, ifNoneMatch *string, opts ...func(*s3.Options)) (string, error) {
	out, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &c.addr.Bucket, Key: aws.String(c.key(name)), Body: body, ContentLength: aws.Int64(size),
		IfMatch: ifMatch, IfNoneMatch: ifNoneMatch,
	}, opts...)
	if err != nil {
		return "", c.explain("writing", name, err)
	}
	return aws.ToString(out.ETag), nil
}

// Delete deletes an object (deleting an absent one is not an error).
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &c.addr.Bucket, Key: aws.String(c.key(name))})
	if err != nil {
		return c.explain("deleting", name, err)
	}
	return nil
}

// List lists the objects under the store's prefix whose names start with
// sub, at most max of them (more: ErrTooLarge), in key order.
func (c *Client) List(ctx context.Context, sub string, max int) ([]Object, error) {
	return c.list(ctx, sub, max, false, nil)
}

// ListFirst is List that stops at the first max objects instead of
// failing (a count that only needs to know whether there are more).
func (c *Client) ListFirst(ctx context.Context, sub string, max int) ([]Object, error) {
	return c.list(ctx, sub, max, true, nil)
}

// ListFirstKept is ListFirst holding only the objects whose names (as
// List gives them) keep accepts: the others count toward max but are
// not kept, so names the caller has no use for (which anyone with write
// access may make 1,024 bytes long) cost it no memory past a page.
func (c *Client) ListFirstKept(ctx context.Context, sub string, max int, keep func(name string) bool) ([]Object, error) {
	return c.list(ctx, sub, max, true, keep)
}

// ListKept is List holding only the objects whose names keep accepts
// (the others count toward max, and cost no memory past their page).
func (c *Client) ListKept(ctx context.Context, sub string, max int, keep func(name string) bool) ([]Object, error) {
	return c.list(ctx, sub, max, false, keep)
}

// ListBlobs is List of blobs/ holding only the objects named
// blobs/sha256/HEX, the only ones a verb uses (gc, prune and the
// inventory skip the others): a name of 1,024 bytes, one of a million,
// is then not held (a listing of the bound, MaxList, would otherwise
// hold some 1.2 GiB of names).
func (c *Client) ListBlobs(ctx context.Context) ([]Object, error) {
	return c.list(ctx, BlobPrefix, MaxList, false, func(name string) bool {
		return verify.IsHex64(strings.TrimPrefix(name, BlobPrefix))
	})
}

func (c *Client) list(ctx context.Context, sub string, max int, first bool, keep func(string) bool) ([]Object, error) {
	pre := c.key(sub)
	if c.addr.Prefix != "" && sub == "" {
		pre = c.addr.Prefix + "/"
	}
	var objs []Object
	listed := 0
	p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: &c.addr.Bucket, Prefix: aws.String(pre)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, c.explain("listing", sub+"*", err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			name := k
			if c.addr.Prefix != "" {
				name = strings.TrimPrefix(k, c.addr.Prefix+"/")
			}
			if listed >= max && first {
				return objs, nil
			}
			if listed >= max {
				return nil, fmt.Errorf("%s: %w: more than %d objects", c.where(sub+"*"), ErrTooLarge, max)
			}
			listed++
			if keep != nil && !keep(name) {
				continue
			}
			objs = append(objs, Object{Name: name, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return objs, nil
}

func (c *Client) where(name string) string {
	return Scheme + c.addr.Bucket + "/" + c.key(name)
}

// explain turns the SDK's error into one that says what to do.
func (c *Client) explain(doing, name string, err error) error {
	var re *smithyhttp.ResponseError
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	w := c.where(name)
	switch {
	case status == http.StatusPreconditionFailed || status == http.StatusConflict || code == "PreconditionFailed" || code == "ConditionalRequestConflict":
		return fmt.Errorf("%s %s: %w", doing, w, ErrPrecondition)
	case code == "NoSuchBucket":
		return fmt.Errorf("%s %s: bucket %q does not exist\nhint: create it first (the appliance never creates buckets), or check the address and endpoint", doing, w, c.addr.Bucket)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		return fmt.Errorf("%s %s: %w", doing, w, ErrNotFound)
	case code == "RequestTimeTooSkewed":
		return fmt.Errorf("%s %s: the server says this machine's clock is too far from its own (%s)\nhint: set the clock (NTP); S3 refuses requests signed more than 15 minutes off", doing, w, code)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "InvalidToken" || code == "ExpiredToken":
		return fmt.Errorf("%s %s: the server refused the credentials (%s)\nhint: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)", doing, w, code)
	case status == http.StatusForbidden || code == "AccessDenied":
		return fmt.Errorf("%s %s: access denied\nhint: the credentials' policy must allow s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket on the bucket and prefix (see docs/object-storage.md)", doing, w)
	case status == http.StatusServiceUnavailable || code == "SlowDown":
		return fmt.Errorf("%s %s: the server is throttling or unavailable after %d attempts (%v)\nhint: try again later", doing, w, maxAttempts, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || strings.Contains(err.Error(), "connection refused") {
		return fmt.Errorf("%s %s: cannot reach the server: %v\nhint: check endpoint= in the address (or AWS_ENDPOINT_URL_S3)", doing, w, err)
	}
	if strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "no EC2 IMDS role") {
		return fmt.Errorf("%s %s: no credentials: %v\nhint: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or a web identity token", doing, w, err)
	}
	return fmt.Errorf("%s %s: %w", doing, w, err)
}

// Presign is a URL that answers method (GET or HEAD) for the object name
// until expires, signed with the client's credentials: for a redirect to
// the object (a URL signed for GET answers a HEAD with 403, so each
// method gets its own).
func (c *Client) Presign(ctx context.Context, method, name string, expires time.Duration) (string, error) {
	pc := s3.NewPresignClient(c.s3, s3.WithPresignExpires(expires))
	var url string
	switch method {
	case http.MethodGet:
		r, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &c.addr.Bucket, Key: aws.String(c.key(name))})
		if err != nil {
			return "", c.explain("signing", name, err)
		}
		url = r.URL
	case http.MethodHead:
		r, err := pc.PresignHeadObject(ctx, &s3.HeadObjectInput{Bucket: &c.addr.Bucket, Key: aws.String(c.key(name))})
		if err != nil {
			return "", c.explain("signing", name, err)
		}
		url = r.URL
	default:
		return "", fmt.Errorf("presign: method %s", method)
	}
	return url, nil
}
