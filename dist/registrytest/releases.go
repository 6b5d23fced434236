package registrytest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// The hosts of the publishers' CLI releases besides releases.hashicorp.com
// and github.com: OpenTofu's release list and both publishers' key pages.
const (
	TofuGetHost      = "get.opentofu.org"
	HashiCorpWWWHost = "www.hashicorp.com"
)

func init() { Hosts = append(Hosts, TofuGetHost, HashiCorpWWWHost) }

// CLIRelease is one published stand-in release of terraform or tofu.
type CLIRelease struct {
	Product, Version string
	Dir              string            // its files
	Files            map[string]string // file name -> path
	Signer           *openpgp.Entity
}

// cliReleases: product -> its releases, in the order published.
type cliReleases map[string][]*CLIRelease

// StampCLI writes to dst the clistub binary src (see clistub) stamped
// with line ("Terraform v1.14.2"): the same program, printing line for
// 'version'.
func StampCLI(t testing.TB, src, dst, line string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "AIRGAP-CLISTUB-STAMP:"
	i := bytes.Index(b, []byte(prefix+"...."))
	if i < 0 {
		t.Fatalf("%s is not the clistub binary (no stamp)", src)
	}
	field := b[i+len(prefix):]
	n := bytes.IndexFunc(field, func(r rune) bool { return r != '.' })
	if n < len(line) {
		t.Fatalf("stamp %q is longer than clistub's %d bytes", line, n)
	}
	copy(field, line)
	bundletest.WriteFile(t, dst, b)
	os.Chmod(dst, 0o755)
}

// AddCLIRelease publishes release version of product ("terraform" or
// "tofu") for plats, in its publisher's layout: HashiCorp's on
// releases.hashicorp.com (/terraform/ as an HTML list, /terraform/index.json,
// /terraform/V/index.json, the zips, terraform_V_SHA256SUMS, .sig and
// .72D7468F.sig), OpenTofu's as get.opentofu.org/tofu/api.json and assets
// of its GitHub releases (tofu_V_OS_ARCH.zip, tofu_V_SHA256SUMS,
// tofu_V_SHA256SUMS.gpgsig). Each zip holds stub (see StampCLI) stamped
// with the release, as "terraform" or "tofu" (".exe" on windows), and the
// SHA256SUMS is signed by signer, whose public key the publisher's key page
// (www.hashicorp.com/.well-known/pgp-key.txt, get.opentofu.org/opentofu.asc)
// serves: a stand-in key, never the fingerprint airgap pins.
func (in *Internet) AddCLIRelease(t testing.TB, product, version string, plats []string, stub string, signer *openpgp.Entity) *CLIRelease {
	t.Helper()
	r := &CLIRelease{Product: product, Version: version, Dir: filepath.Join(in.Dir, "cli", product, version), Files: map[string]string{}, Signer: signer}
	name := "Terraform"
	if product == dist.ProductTofu {
		name = "OpenTofu"
	}
	bin := filepath.Join(in.Dir, "cli", product+"-"+version+".bin")
	StampCLI(t, stub, bin, name+" v"+version)
	exe, _ := os.ReadFile(bin)
	var sums strings.Builder
	sort.Strings(plats)
	for _, p := range plats {
		os_, arch, _ := strings.Cut(p, "_")
		fn := dist.ReleaseZipName(product, version, os_, arch)
		member := product
		if os_ == "windows" {
			member += ".exe"
		}
		var zb bytes.Buffer
		zw := zip.NewWriter(&zb)
		h := &zip.FileHeader{Name: member, Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		h.SetMode(0o755)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(exe)
		zw.Close()
		path := filepath.Join(r.Dir, fn)
		bundletest.WriteFile(t, path, zb.Bytes())
		r.Files[fn] = path
		sum := sha256.Sum256(zb.Bytes())
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), fn)
		if product == dist.ProductTofu { // OpenTofu also publishes a .tar.gz, which tofudl installs
			var tb bytes.Buffer
			gz := gzip.NewWriter(&tb)
			tw := tar.NewWriter(gz)
			tw.WriteHeader(&tar.Header{Name: member, Mode: 0o755, Size: int64(len(exe)), ModTime: h.Modified, Typeflag: tar.TypeReg})
			tw.Write(exe)
			tw.Close()
			gz.Close()
			tn := dist.ReleaseTarName(version, os_, arch)
			bundletest.WriteFile(t, filepath.Join(r.Dir, tn), tb.Bytes())
			r.Files[tn] = filepath.Join(r.Dir, tn)
			sum := sha256.Sum256(tb.Bytes())
			fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), tn)
		}
	}
	sumsName := dist.ReleaseShasumsName(product, version)
	r.Files[sumsName] = filepath.Join(r.Dir, sumsName)
	bundletest.WriteFile(t, r.Files[sumsName], []byte(sums.String()))
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, signer, strings.NewReader(sums.String()), signer.PrimaryKey.CreationTime.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, n := range dist.ReleaseSignatureNames(product, version) {
		r.Files[n] = filepath.Join(r.Dir, n)
		bundletest.WriteFile(t, r.Files[n], sig.Bytes())
	}
	in.mu.Lock()
	if in.cli == nil {
		in.cli = cliReleases{}
	}
	in.cli[product] = append(in.cli[product], r)
	in.mu.Unlock()
	armor := bundletest.Armor(t, signer)
	serveText := func(ct, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.Write([]byte(body))
		})
	}
	for fn, p := range r.Files {
		var at string
		if product == dist.ProductTofu {
			at = "github.com/opentofu/opentofu/releases/download/v" + version + "/" + fn
		} else {
			at = "releases.hashicorp.com/terraform/" + version + "/" + fn
		}
		in.Handle(at, in.releaseFile(p))
	}
	if product == dist.ProductTofu {
		in.Handle(TofuGetHost+"/tofu/api.json", http.HandlerFunc(in.tofuAPI))
		in.Handle(TofuGetHost+"/opentofu.asc", serveText("text/plain", armor))
	} else {
		in.Handle("releases.hashicorp.com/terraform/", http.HandlerFunc(in.hashicorpList))
		in.Handle("releases.hashicorp.com/terraform/index.json", http.HandlerFunc(in.hashicorpIndex))
		in.Handle("releases.hashicorp.com/terraform/"+version+"/index.json", http.HandlerFunc(in.hashicorpIndex))
		in.Handle(HashiCorpWWWHost+"/.well-known/pgp-key.txt", serveText("text/plain", armor))
	}
	return r
}

// releaseFile serves one file of a release, zips as application/zip (which
// hc-install requires), counted and tampered with like provider zips
// (Downloads, Tamper).
func (in *Internet) releaseFile(p string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(p)
		if strings.HasSuffix(name, ".zip") || strings.HasSuffix(name, ".tar.gz") {
			w.Header().Set("Content-Type", "application/zip")
			if strings.HasSuffix(name, ".tar.gz") {
				w.Header().Set("Content-Type", "application/gzip")
			}
			n, _ := in.Downloads.LoadOrStore(name, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			if in.Tamper.Load().(string) == name {
				b, _ := os.ReadFile(p)
				b[len(b)/2] ^= 0xff
				w.Write(b)
				return
			}
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		http.ServeFile(w, r, p)
	})
}

func (in *Internet) releasesOf(product string) []*CLIRelease {
	in.mu.Lock()
	defer in.mu.Unlock()
	rs := append([]*CLIRelease(nil), in.cli[product]...)
	sort.Slice(rs, func(i, j int) bool { return dist.CompareVersions(rs[i].Version, rs[j].Version) > 0 })
	return rs
}

// hashicorpVersion is one version's document as releases.hashicorp.com
// gives it.
func hashicorpVersion(r *CLIRelease) map[string]any {
	var builds []map[string]string
	var names []string
	for fn := range r.Files {
		names = append(names, fn)
	}
	sort.Strings(names)
	var sigs []string
	for _, fn := range names {
		if strings.HasSuffix(fn, ".zip") {
			parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(fn, "terraform_"+r.Version+"_"), ".zip"), "_")
			builds = append(builds, map[string]string{"name": "terraform", "version": r.Version, "os": parts[0], "arch": parts[1],
				"filename": fn, "url": "https://releases.hashicorp.com/terraform/" + r.Version + "/" + fn})
		}
		if strings.HasSuffix(fn, ".sig") {
			sigs = append(sigs, fn)
		}
	}
	return map[string]any{"name": "terraform", "version": r.Version, "shasums": dist.ReleaseShasumsName("terraform", r.Version),
		"shasums_signature": dist.ReleaseShasumsName("terraform", r.Version) + ".sig", "shasums_signatures": sigs, "builds": builds}
}

func (in *Internet) hashicorpIndex(w http.ResponseWriter, r *http.Request) {
	rs := in.releasesOf(dist.ProductTerraform)
	if r.URL.Path == "/terraform/index.json" {
		vs := map[string]any{}
		for _, rel := range rs {
			vs[rel.Version] = hashicorpVersion(rel)
		}
		writeJSON(w, map[string]any{"name": "terraform", "versions": vs})
		return
	}
	v := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/terraform/"), "/index.json")
	for _, rel := range rs {
		if rel.Version == v {
			writeJSON(w, hashicorpVersion(rel))
			return
		}
	}
	http.NotFound(w, r)
}

func (in *Internet) hashicorpList(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, "<!DOCTYPE html>\n<html><body><ul>\n<li><a href=\"../\">../</a></li>\n")
	for _, rel := range in.releasesOf(dist.ProductTerraform) {
		fmt.Fprintf(w, "<li>\n<a href=\"/terraform/%s/\">terraform_%s</a>\n</li>\n", html.EscapeString(rel.Version), html.EscapeString(rel.Version))
	}
	fmt.Fprint(w, "</ul></body></html>\n")
}

func (in *Internet) tofuAPI(w http.ResponseWriter, r *http.Request) {
	var vs []map[string]any
	for _, rel := range in.releasesOf(dist.ProductTofu) {
		var files []string
		for fn := range rel.Files {
			files = append(files, fn)
		}
		sort.Strings(files)
		vs = append(vs, map[string]any{"id": rel.Version, "files": files})
	}
	writeJSON(w, map[string]any{"versions": vs})
}

// CLIReleases lists the published releases of product, newest first.
func (in *Internet) CLIReleases(product string) []*CLIRelease { return in.releasesOf(product) }
