package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/verify"
)

// ReleasesPrefix is where the appliance serves the Terraform and OpenTofu CLI
// releases it holds, in their publishers' own layouts, so that a version
// manager or installer needs only a base URL (https://APPLIANCE/releases):
//
//	/releases/terraform/                     HTML list of terraform_V links (tfenv, tfswitch, tenv)
//	/releases/terraform/index.json           every version, as releases.hashicorp.com
//	/releases/terraform/V/index.json         one version; builds' URLs on the appliance (hc-install)
//	/releases/terraform/V/FILE               zips, terraform_V_SHA256SUMS, .sig, .72D7468F.sig
//	/releases/tofu/api.json                  tofudl's mirror list, newest first, ids without "v"
//	/releases/tofu/vV/FILE                   zips, tofu_V_SHA256SUMS, .gpgsig
//	/releases/PRODUCT/publisher-key.asc      the key that signed the newest release held
//
// hc-install joins the path of a build's URL onto its ApiBaseURL, so a
// URL of /releases/terraform/V/FILE reaches it as
// /releases/releases/terraform/V/FILE: that spelling is answered too.
//
// The documents are rendered for each request, not cached: each costs
// time and memory proportional to the releases of one product the store
// holds (about 250 bytes a build in index.json, 60 a file in api.json),
// which the bundles' manifests bound (bundle.MaxManifestSize). Files are
// served from the store's blobs by name, never by a path the request
// spells.
const ReleasesPrefix = "/releases/"

// releaseDoc is one version as releases.hashicorp.com's index.json gives it.
type releaseDoc struct {
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	Shasums    string         `json:"shasums"`
	ShasumsSig string         `json:"shasums_signature"`
	Sigs       []string       `json:"shasums_signatures"`
	Builds     []releaseBuild `json:"builds"`
}

type releaseBuild struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Filename string `json:"filename"`
	URL      string `json:"url"`
}

// releasesOf lists cat's releases of product, newest first.
func releasesOf(cat *dist.Catalog, product string) []*dist.CLIRelease {
	var out []*dist.CLIRelease
	for i := range cat.Releases {
		if cat.Releases[i].Product == product {
			out = append(out, &cat.Releases[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return dist.CompareVersions(out[i].Version, out[j].Version) > 0 })
	return out
}

// releaseFile is the blob and role of file name of release r, if r has one.
func releaseFile(r *dist.CLIRelease, name string) (verify.Digest, string, bool) {
	if name == r.ShasumsName {
		return r.Shasums, dist.RoleReleaseShasums, true
	}
	for _, s := range r.Signatures {
		if s.Name == name {
			return s.Digest, dist.RoleReleaseSignature, true
		}
	}
	for _, b := range r.Builds {
		if b.Filename == name {
			return b.Digest, dist.RoleReleaseZip, true
		}
	}
	return "", "", false
}

func (s *Answers) releases(w http.ResponseWriter, r *http.Request) {
	st := s.current()
	cat := st.cat
	rest := strings.TrimPrefix(r.URL.Path, ReleasesPrefix)
	rest = strings.TrimPrefix(rest, "releases/") // hc-install's spelling (ReleasesPrefix)
	product, rest, _ := strings.Cut(rest, "/")
	if product != dist.ProductTerraform && product != dist.ProductTofu {
		s.writeError(w, r, notFound("no releases of %q are served here (terraform, tofu)", dist.Printable(product)))
		return
	}
	// A product the principal's rules do not admit is answered exactly as
	// one the appliance holds no release of.
	var rs []*dist.CLIRelease
	if st.scopeFor(access.Of(r).Principal()).allowsRelease(product) {
		rs = releasesOf(cat, product)
	} else {
		access.NoteDenied(w, acl.ReleaseAddr(product))
	}
	// The builds' URLs name the appliance as the request does: a Host
	// that is not a host name (and optional port) gets none.
	host := strings.ToLower(r.Host)
	if !dist.ValidHost(host) {
		s.writeError(w, r, notFound("no releases are served for the host %q", dist.Printable(reply.Cut(r.Host, 256))))
		return
	}
	base := "https://" + host + ReleasesPrefix + product + "/"
	switch {
	case rest == "publisher-key.asc":
		if len(rs) == 0 {
			break
		}
		s.serveReleaseBlob(w, r, rs[0].Key, "application/pgp-keys", false, nil)
		return
	case product == dist.ProductTerraform && rest == "":
		var b strings.Builder
		b.WriteString("<!DOCTYPE html>\n<html><head><title>terraform releases</title></head><body><ul>\n<li><a href=\"../\">../</a></li>\n")
		for _, rel := range rs {
			v := html.EscapeString(rel.Version)
			fmt.Fprintf(&b, "<li>\n<a href=\"%sterraform/%s/\">terraform_%s</a>\n</li>\n", ReleasesPrefix, v, v)
		}
		b.WriteString("</ul></body></html>\n")
		writeReleaseDoc(w, r, "text/html; charset=utf-8", []byte(b.String()))
		return
	case product == dist.ProductTerraform && rest == "index.json":
		vs := map[string]releaseDoc{}
		for _, rel := range rs {
			vs[rel.Version] = hashicorpDoc(rel, base)
		}
		writeReleaseJSON(w, r, map[string]any{"name": "terraform", "versions": vs})
		return
	case product == dist.ProductTofu && rest == "api.json":
		type tofuVersion struct {
			ID    string   `json:"id"`
			Files []string `json:"files"`
		}
		vs := []tofuVersion{}
		for _, rel := range rs {
			tv := tofuVersion{ID: rel.Version, Files: []string{rel.ShasumsName}}
			for _, sg := range rel.Signatures {
				tv.Files = append(tv.Files, sg.Name)
			}
			for _, b := range rel.Builds {
				tv.Files = append(tv.Files, b.Filename)
			}
			sort.Strings(tv.Files)
			vs = append(vs, tv)
		}
		writeReleaseJSON(w, r, map[string]any{"versions": vs})
		return
	default:
		ver, file, ok := strings.Cut(rest, "/")
		if product == dist.ProductTofu {
			ver, ok = strings.CutPrefix(ver, "v")
			ok = ok && file != ""
		}
		if !ok {
			break
		}
		for _, rel := range rs {
			if rel.Version != ver {
				continue
			}
			if product == dist.ProductTerraform && file == "index.json" {
				writeReleaseJSON(w, r, hashicorpDoc(rel, base))
				return
			}
			if d, role, ok := releaseFile(rel, file); ok {
				ct := "application/octet-stream"
				var dl *access.Download
				switch role {
				case dist.RoleReleaseZip:
					ct = "application/zip"
					if strings.HasSuffix(file, ".tar.gz") {
						ct = "application/gzip"
					}
					dl = releaseDownload(rel, file, d)
					access.NoteDownload(w, dl)
				case dist.RoleReleaseShasums:
					ct = "text/plain; charset=utf-8"
				}
				s.serveReleaseBlob(w, r, d, ct, true, dl)
				return
			}
		}
	}
	s.writeError(w, r, notFound("no such release file %s", dist.Printable(r.URL.Path)))
}

// hashicorpDoc is rel as releases.hashicorp.com describes a version, its
// builds' URLs under base (the appliance's /releases/terraform/).
func hashicorpDoc(rel *dist.CLIRelease, base string) releaseDoc {
	d := releaseDoc{Name: rel.Product, Version: rel.Version, Shasums: rel.ShasumsName, Sigs: []string{}, Builds: []releaseBuild{}}
	for _, sg := range rel.Signatures {
		d.Sigs = append(d.Sigs, sg.Name)
		if strings.HasSuffix(sg.Name, "_SHA256SUMS.sig") {
			d.ShasumsSig = sg.Name
		}
	}
	for _, b := range rel.Builds {
		d.Builds = append(d.Builds, releaseBuild{Name: rel.Product, Version: rel.Version, OS: b.OS, Arch: b.Arch, Filename: b.Filename,
			URL: base + rel.Version + "/" + b.Filename})
	}
	return d
}

// writeReleaseJSON writes v as application/json, exactly: hc-install
// refuses the type with parameters.
func writeReleaseJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeReleaseDoc(w, r, "application/json", append(b, '\n'))
}

func writeReleaseDoc(w http.ResponseWriter, r *http.Request, ct string, body []byte) {
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// releaseDownload is what a GET of release archive file is, for the
// access and audit logs and the download counts.
func releaseDownload(rel *dist.CLIRelease, file string, d verify.Digest) *access.Download {
	for _, b := range rel.Builds {
		if b.Filename == file {
			return &access.Download{Kind: store.UsageRelease, Address: rel.Product, Version: rel.Version, Platform: b.Platform(), Role: dist.RoleReleaseZip, Digest: d}
		}
	}
	return nil
}

// serveReleaseBlob serves blob d of a release held as ct; immutable for a
// file whose name fixes its bytes (not the publisher key, whose URL
// follows the newest release). A GET of an archive (dl set) whose last
// byte went out counts as a download of its release and platform, by the
// rules the provider packages count by (StartUsage).
//
// From a store in object storage, a HEAD is answered with the object's
// size and a GET streamed and hashed on the way, cut off short on a
// mismatch, as a provider package is (serveBlob): only a range request
// stages the blob in the replica's directory, so the replica's disk does
// not fill with every release file clients ask for.
func (s *Answers) serveReleaseBlob(w http.ResponseWriter, r *http.Request, d verify.Digest, ct string, immutable bool, dl *access.Download) {
	counted := s.usage != nil && dl != nil && r.Method == http.MethodGet
	count := func() {
		if counted {
			s.usage.count([]store.UsageKey{usageKey(dl)}, s.usage.opt.Now())
		}
	}
	h := w.Header()
	headers := func() {
		h.Set("Content-Type", ct)
		h.Set("ETag", `"`+string(d)+`"`)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		if immutable {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		}
	}
	if bs, ok := s.store.(blobStreamer); ok && r.Header.Get("Range") == "" {
		if r.Method == http.MethodHead {
			if size, ok, err := bs.StatBlob(r.Context(), d); ok {
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				headers()
				h.Set("Content-Length", strconv.FormatInt(size, 10))
				return
			}
		}
		if rc, size, ok, err := streamGet(bs, r, d); ok {
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			defer rc.Close()
			headers()
			h.Set("Content-Length", strconv.FormatInt(size, 10))
			if err := copyHeld(w, rc); err != nil {
				s.log.Error("release download cut off", "blob", string(d), "err", err)
				return
			}
			count()
			return
		}
	}
	f, err := s.store.OpenBlob(d)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	headers()
	if counted {
		rec := ops.NewRecorder(w)
		http.ServeContent(rec, r, "", time.Time{}, f)
		if completed(rec) {
			count()
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, f)
}
