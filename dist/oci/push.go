package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// PushOptions configure Push.
type PushOptions struct {
	// Target is REGISTRY[/PREFIX]: repositories become PREFIX/<layout name>.
	Target string
	// Jobs bounds the tags pushed at once (default 4).
	Jobs int
	// Username and Password, when Username is set, are used for Target's
	// registry; otherwise Docker's config (DOCKER_CONFIG or ~/.docker,
	// credential helpers included) is read.
	Username, Password string
	// OpenBlob opens a store blob (a layer).
	OpenBlob func(verify.Digest) (io.ReadCloser, error)
	// HTTPClient carries the requests (default: oras-go's retrying client
	// over the system trust store).
	HTTPClient *http.Client
	// Progress, if set, is called after each tag (from several goroutines,
	// one call at a time).
	Progress func(TagResult)
}

// TagResult is what Push did for one tag.
type TagResult struct {
	Repository string        `json:"repository"`
	Tag        string        `json:"tag"`
	Digest     verify.Digest `json:"digest"`
	UpToDate   bool          `json:"up_to_date,omitempty"` // already tagged with this digest: nothing sent
	Blobs      int           `json:"blobs_pushed"`
	Bytes      int64         `json:"bytes_pushed"`
}

// PushResult sums up a Push.
type PushResult struct {
	Target       string      `json:"target"`
	Repositories int         `json:"repositories"`
	Tags         []TagResult `json:"tags"`
	TagsPushed   int         `json:"tags_pushed"`
	BlobsPushed  int         `json:"blobs_pushed"`
	BytesPushed  int64       `json:"bytes_pushed"`
	// Left is what the layout leaves out (see Left).
	Left []string `json:"left_out,omitempty"`
}

// ErrRejected marks a registry refusing OpenTofu's artifact layout.
var ErrRejected = errors.New("the registry refused an OpenTofu OCI artifact")

// ErrInsecureRedirect: the registry redirected push from https to plain http.
var ErrInsecureRedirect = errors.New("the registry redirected from https to plain http; refused, so that no credential or content leaves TLS")

// Push publishes cat's repositories (Repositories) under opt.Target. It is
// idempotent and resumable: a tag that already names the same digest is
// skipped without sending anything, and every blob and manifest is checked
// with HEAD before it is sent, so a rerun after an interruption sends only
// what is missing. Layers stream from the store (never held in memory);
// manifests are small. At most Jobs tags are in flight.
func Push(ctx context.Context, cat *dist.Catalog, opt PushOptions) (*PushResult, error) {
	if strings.Contains(opt.Target, "://") {
		// "https://reg/x" would be registry "https:" (an empty port), and
		// the password would go to whatever host "https" resolves to.
		return nil, fmt.Errorf("--to %q: write the registry without a scheme, e.g. registry.site.example/airgap\nhint: push always uses https", opt.Target)
	}
	reg, prefix, _ := strings.Cut(opt.Target, "/")
	if _, err := remote.NewRegistry(reg); err != nil || reg == "" || strings.HasSuffix(reg, ":") || strings.HasPrefix(reg, ":") {
		return nil, fmt.Errorf("--to %q: want REGISTRY[/PREFIX], e.g. registry.site.example/airgap", opt.Target)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" && !ValidRepoName(prefix) {
		return nil, fmt.Errorf("--to %q: %q is not a valid OCI repository path (lowercase letters, digits, and . _ - between them)", opt.Target, prefix)
	}
	client, err := newAuthClient(reg, opt)
	if err != nil {
		return nil, err
	}
	jobs := opt.Jobs
	if jobs <= 0 {
		jobs = 4
	}
	res := &PushResult{Target: opt.Target}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	repos := Repositories(cat)
	res.Repositories = len(repos)
	for _, r := range repos {
		name := r.Name
		if prefix != "" {
			name = prefix + "/" + name
		}
		repo := &remote.Repository{Client: client, Reference: registry.Reference{Registry: reg, Repository: name}}
		content := r.Content()
		// Version tags first, then "latest" (it names one of them).
		tags := append([]*Tagged(nil), content.Tags...)
		for i, t := range tags {
			if t.Tag == LatestTag {
				tags = append(append(tags[:i:i], tags[i+1:]...), t)
				break
			}
		}
		p := &pusher{repo: repo, open: opt.OpenBlob}
		for _, t := range tags {
			g.Go(func() error {
				tr, err := p.pushTag(gctx, t)
				if err != nil {
					return fmt.Errorf("pushing %s/%s:%s: %w", reg, name, t.Tag, err)
				}
				tr.Repository = reg + "/" + name
				mu.Lock()
				defer mu.Unlock()
				res.Tags = append(res.Tags, tr)
				if !tr.UpToDate {
					res.TagsPushed++
				}
				res.BlobsPushed += tr.Blobs
				res.BytesPushed += tr.Bytes
				if opt.Progress != nil {
					opt.Progress(tr)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	return res, nil
}

func newAuthClient(reg string, opt PushOptions) (*auth.Client, error) {
	var cred auth.CredentialFunc
	if opt.Username != "" {
		cred = auth.StaticCredential(reg, auth.Credential{Username: opt.Username, Password: opt.Password})
	} else {
		st, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading Docker's credentials: %w\nhint: fix the Docker config (DOCKER_CONFIG), or pass --username with AIRGAP_REGISTRY_PASSWORD or --password-stdin", err)
		}
		cred = credentials.Credential(st)
	}
	c := &auth.Client{Client: pushHTTPClient(opt.HTTPClient), Cache: auth.NewCache(), Credential: cred}
	c.SetUserAgent("airgap-push")
	return c, nil
}

// responseHeaderTimeout bounds how long push waits for a registry's answer
// once a request is sent (a blob's upload included: registries check the
// digest as they receive it), so a registry that accepts the connection and
// never answers fails the push instead of hanging it.
var responseHeaderTimeout = 5 * time.Minute

// pushHTTPClient is hc (default: oras-go's retrying client over a transport
// with responseHeaderTimeout) with a redirect policy that refuses to leave
// https. net/http drops the Authorization header on a redirect to another
// host, but keeps it on a redirect to the same host name over plain http
// (it compares names only, not schemes or ports): a registry, token realm or
// proxy answering 307 to http://same-host/… would have the credentials sent
// in clear. oras-go checks a bearer realm's scheme and an upload Location,
// not the redirects the HTTP client follows.
func pushHTTPClient(hc *http.Client) *http.Client {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = responseHeaderTimeout
		hc = &http.Client{Transport: retry.NewTransport(tr)}
	}
	c := *hc
	prev := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: %s redirected to %s", ErrInsecureRedirect, via[len(via)-1].URL.Redacted(), req.URL.Redacted())
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

type pusher struct {
	repo *remote.Repository
	open func(verify.Digest) (io.ReadCloser, error)
	// configDone: the empty config is in this repository.
	configDone atomic.Bool
}

func (p *pusher) pushTag(ctx context.Context, t *Tagged) (TagResult, error) {
	tr := TagResult{Tag: t.Tag, Digest: t.Root.Digest}
	if d, err := p.repo.Resolve(ctx, t.Tag); err == nil && verify.Digest(d.Digest) == t.Root.Digest {
		tr.UpToDate = true
		return tr, nil
	}
	if !p.configDone.Load() {
		sent, err := p.blob(ctx, EmptyDescriptor, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(EmptyConfig)), nil })
		if err != nil {
			return tr, err
		}
		if sent {
			tr.Blobs++
		}
		p.configDone.Store(true)
	}
	for _, l := range t.Layers {
		sent, err := p.blob(ctx, l.Descriptor(), func() (io.ReadCloser, error) { return p.open(l.Digest) })
		if err != nil {
			return tr, err
		}
		if sent {
			tr.Blobs++
			tr.Bytes += l.Size
		}
	}
	for _, m := range t.Children {
		if err := p.manifest(ctx, m, ""); err != nil {
			return tr, err
		}
	}
	return tr, p.manifest(ctx, t.Root, t.Tag)
}

// blob sends one blob unless the repository has it.
func (p *pusher) blob(ctx context.Context, desc ocispec.Descriptor, open func() (io.ReadCloser, error)) (bool, error) {
	ok, err := p.repo.Blobs().Exists(ctx, desc)
	if err != nil {
		return false, explain(err)
	}
	if ok {
		return false, nil
	}
	rc, err := open()
	if err != nil {
		return false, err
	}
	defer rc.Close()
	if err := p.repo.Blobs().Push(ctx, desc, rc); err != nil {
		return false, fmt.Errorf("blob %s: %w", desc.Digest, explain(err))
	}
	return true, nil
}

// manifest sends a manifest (by digest, or by tag when tag is set).
func (p *pusher) manifest(ctx context.Context, m *Manifest, tag string) error {
	desc := m.Descriptor()
	var err error
	if tag == "" {
		var ok bool
		if ok, err = p.repo.Manifests().Exists(ctx, desc); err == nil && ok {
			return nil
		}
		if err == nil {
			err = p.repo.Manifests().Push(ctx, desc, bytes.NewReader(m.Body))
		}
	} else {
		err = p.repo.Manifests().PushReference(ctx, desc, bytes.NewReader(m.Body), tag)
	}
	if err != nil {
		return fmt.Errorf("manifest %s (%s): %w", m.Digest.Short(), m.ArtifactType, explain(err))
	}
	return nil
}

// explain adds what to do to the errors registries give for layouts they
// do not accept, and for missing credentials. The registry's own text is
// escaped (registryText): a newline in it could otherwise forge a line of
// push's output, such as a "hint:".
func explain(err error) error {
	if err == nil {
		return nil
	}
	err = registryText{err}
	const loginHint = "\nhint: log in with 'docker login' (airgap reads Docker's config), or pass --username with the password in " + PasswordEnv + " or on --password-stdin; the account needs push rights"
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%w: the registry wants a login%s", err, loginHint)
	}
	var er *errcode.ErrorResponse
	if !errors.As(err, &er) {
		return err
	}
	switch {
	case er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w%s", err, loginHint)
	case er.StatusCode == http.StatusUnsupportedMediaType || hasCode(er, "MANIFEST_INVALID", "UNSUPPORTED"):
		return fmt.Errorf("%w: %w\nhint: OpenTofu's layout needs a registry that accepts OCI 1.1 artifacts: an image manifest with an artifactType (%s, %s, %s), the empty config (%s) and layers of media type %q. Allow custom artifact and media types in the registry or repository settings (registries that take only container images, or keep a media-type allow-list, refuse them), then run push again", ErrRejected, err, ArtifactProvider, ArtifactProviderTarget, ArtifactModule, EmptyDescriptor.MediaType, MediaTypeZip)
	}
	return err
}

func hasCode(er *errcode.ErrorResponse, codes ...string) bool {
	for _, e := range er.Errors {
		for _, c := range codes {
			if e.Code == c {
				return true
			}
		}
	}
	return false
}

// registryText is an error whose text came (at least partly) from a
// registry: Error escapes control characters, newlines included, so none
// reaches the terminal raw; errors.Is and errors.As still see the original.
type registryText struct{ err error }

func (e registryText) Error() string { return dist.Printable(e.err.Error()) }
func (e registryText) Unwrap() error { return e.err }
