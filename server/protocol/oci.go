package protocol

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/verify"
)

// The OCI distribution API (read-only) under /v2/, in the layout of package
// dist/oci, for OpenTofu's oci_mirror and oci:// module sources:
//
//	GET /v2/                                   200 {} (oras-go pings it)
//	GET /v2/<name>/tags/list[?n=&last=]        tags, lexical order, Link pagination
//	GET|HEAD /v2/<name>/manifests/<tag|digest> generated index or manifest
//	GET|HEAD /v2/<name>/blobs/<digest>         zips from the store (Range), the empty config
//
// Memory: the repository table is built once per catalog snapshot (one entry
// per provider and module, bounded by the catalog); a repository's
// documents are built on its first request, after its name was found in
// that table, and kept for the snapshot (about 1 KiB per package and
// version). Nothing a client sends can add an entry.

// maxTagsPage bounds one tags/list answer; clients follow Link for more.
const maxTagsPage = 1000

// ociHolder keeps the OCI state of the current catalog snapshot.
type ociHolder struct {
	mu sync.Mutex
	p  atomic.Pointer[ociState]
}

type ociState struct {
	cat   *dist.Catalog
	repos map[string]*ociRepo
}

type ociRepo struct {
	repo    *oci.Repository
	once    sync.Once
	content *oci.Content
}

// addr is the catalog address the repository holds.
func (r *ociRepo) addr() string {
	if len(r.repo.Providers) > 0 {
		return r.repo.Providers[0].Addr()
	}
	return r.repo.Modules[0].Addr()
}

func (r *ociRepo) get() *oci.Content {
	r.once.Do(func() { r.content = r.repo.Content() })
	return r.content
}

func (s *Answers) ociState() *ociState {
	cat := s.store.Catalog()
	if st := s.oci.p.Load(); st != nil && st.cat == cat {
		return st
	}
	s.oci.mu.Lock()
	defer s.oci.mu.Unlock()
	if st := s.oci.p.Load(); st != nil && st.cat == cat {
		return st
	}
	st := &ociState{cat: cat, repos: map[string]*ociRepo{}}
	for _, r := range oci.Repositories(cat) {
		st.repos[r.Name] = &ociRepo{repo: r}
	}
	if left := oci.Left(cat); len(left) > 0 {
		s.log.Warn("not offered over OCI (/v2/)", "count", len(left), "first", left[0])
	}
	s.oci.p.Store(st)
	return st
}

// OCI error codes (distribution spec).
const (
	ociNameUnknown     = "NAME_UNKNOWN"
	ociNameInvalid     = "NAME_INVALID"
	ociManifestUnknown = "MANIFEST_UNKNOWN"
	ociBlobUnknown     = "BLOB_UNKNOWN"
	ociDigestInvalid   = "DIGEST_INVALID"
	ociPagination      = "PAGINATION_NUMBER_INVALID"
	ociUnsupported     = "UNSUPPORTED"
)

// ociBase answers /v2/ itself: the API version check.
func (s *Answers) ociBase(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	reply.JSONBytes(w, r, "application/json", []byte("{}"))
}

// ociTokenHandler answers /v2/token (ociToken).
func (s *Answers) ociTokenHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	s.access.OCIToken(w, r)
}

// ociHandler answers everything else under /v2/: tags/list, manifests and
// blobs of a repository.
func (s *Answers) ociHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	rest := strings.TrimPrefix(r.URL.Path, "/v2/")
	var name, op, ref string
	if n, ok := strings.CutSuffix(rest, "/tags/list"); ok {
		name, op = n, "tags"
	} else if i := strings.LastIndex(rest, "/manifests/"); i > 0 {
		name, op, ref = rest[:i], "manifests", rest[i+len("/manifests/"):]
	} else if i := strings.LastIndex(rest, "/blobs/"); i > 0 {
		name, op, ref = rest[:i], "blobs", rest[i+len("/blobs/"):]
	} else {
		reply.OCIError(w, http.StatusNotFound, ociUnsupported, "no such endpoint: this appliance serves tags/list, manifests and blobs")
		return
	}
	if !oci.ValidRepoName(name) {
		reply.OCIError(w, http.StatusNotFound, ociNameInvalid, "invalid repository name")
		return
	}
	if op == "blobs" && verify.Digest(ref) == oci.EmptyDigest {
		// The config of every manifest; any repository may be asked for it.
		w.Header().Set("Docker-Content-Digest", ref)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		reply.JSONBytes(w, r, oci.EmptyDescriptor.MediaType, oci.EmptyConfig)
		return
	}
	repo, ok := s.ociState().repos[name]
	if ok && s.access != nil {
		// Outside the principal's rules: as if it did not exist.
		if ok = s.current().scopeFor(access.Of(r).Principal()).allows(repo.addr()); !ok {
			access.NoteDenied(w, repo.addr())
		}
	}
	if !ok {
		reply.OCIError(w, http.StatusNotFound, ociNameUnknown, "repository "+name+" is not on this appliance")
		return
	}
	c := repo.get()
	switch op {
	case "tags":
		s.ociTags(w, r, name, c)
	case "manifests":
		s.ociManifest(w, r, ref, c)
	case "blobs":
		s.ociBlob(w, r, ref, c)
	}
}

func (s *Answers) ociTags(w http.ResponseWriter, r *http.Request, name string, c *oci.Content) {
	q := r.URL.Query()
	n := maxTagsPage
	if v := q.Get("n"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			reply.OCIError(w, http.StatusBadRequest, ociPagination, "n must be a non-negative integer")
			return
		}
		n = min(k, maxTagsPage)
	}
	last := q.Get("last")
	i := sort.Search(len(c.Tags), func(i int) bool { return c.Tags[i].Tag > last })
	tags := []string{}
	for ; i < len(c.Tags) && len(tags) < n; i++ {
		tags = append(tags, c.Tags[i].Tag)
	}
	if i < len(c.Tags) && len(tags) > 0 {
		next := url.Values{"n": {strconv.Itoa(n)}, "last": {tags[len(tags)-1]}}
		w.Header().Set("Link", "</v2/"+name+"/tags/list?"+next.Encode()+`>; rel="next"`)
	}
	b, _ := json.Marshal(struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{name, tags})
	reply.JSONBytes(w, r, "application/json", b)
}

func (s *Answers) ociManifest(w http.ResponseWriter, r *http.Request, ref string, c *oci.Content) {
	var m *oci.Manifest
	byDigest := strings.HasPrefix(ref, "sha256:")
	if byDigest {
		m, _ = c.Manifest(verify.Digest(ref))
	} else if t, ok := c.Tag(ref); ok {
		m = t.Root
	}
	if m == nil {
		reply.OCIError(w, http.StatusNotFound, ociManifestUnknown, "manifest unknown")
		return
	}
	h := w.Header()
	h.Set("Docker-Content-Digest", string(m.Digest))
	h.Set("ETag", `"`+string(m.Digest)+`"`)
	if byDigest {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	reply.JSONBytes(w, r, m.MediaType, m.Body)
}

func (s *Answers) ociBlob(w http.ResponseWriter, r *http.Request, ref string, c *oci.Content) {
	d, err := verify.ParseDigest(ref)
	if err != nil {
		reply.OCIError(w, http.StatusBadRequest, ociDigestInvalid, "invalid digest")
		return
	}
	b, ok := c.Layer(d)
	if !ok {
		reply.OCIError(w, http.StatusNotFound, ociBlobUnknown, "blob unknown to this repository")
		return
	}
	w.Header().Set("Docker-Content-Digest", string(b.Digest))
	s.serveBlob(w, r, d.Hex(), "")
}
