// Package registrytest runs a stand-in internet on loopback for tests: real
// HTTPS servers with a test CA, answering for registry.terraform.io (204 +
// X-Terraform-Get modules, RSA-signed providers on releases.hashicorp.com),
// registry.opentofu.org (static-site style: relative service URLs, empty
// signing keys, every platform's hashes in download answers, 200 + JSON
// location modules), a git smart-HTTP host
// (github.com, through 'git http-backend') and an HTTP archive host
// (archives.example.com), plus a CONNECT proxy so that subprocesses
// (airgap, terraform, git) reach them by their real names through
// HTTPS_PROXY. Nothing here is mocked; it only plays the other side, and
// it reaches nothing off loopback.
//
// GuardNetwork is the other half: run from each test package's
// TestMain (RunGuarded), it sends every client of the tests to a loopback
// proxy that refuses and records any host the stand-in does not replace,
// and fails the package's run if anything was asked.
//
// It is for tests only: nothing outside tests imports it, and it does not
// stand in for the offline side (the tests run the real 'airgap serve').
package registrytest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Hosts the stand-in answers for.
var Hosts = []string{"registry.terraform.io", "registry.opentofu.org", "releases.hashicorp.com", "github.com", "archives.example.com", "registry.example.com", "localhost",
	ProxyHost, MirrorHost, GitSiteHost}

// PrivateToken is the bearer token registry.example.com (a private
// registry) requires.
const PrivateToken = "s3cr3t-token"

// Internet is the running stand-in.
type Internet struct {
	Dir       string
	CAFile    string // PEM of the test CA, for SSL_CERT_FILE
	CertPool  *x509.CertPool
	Server    *httptest.Server
	Proxy     *httptest.Server // CONNECT proxy, for HTTPS_PROXY
	Publisher *openpgp.Entity  // signs providers' SHA256SUMS
	GitRoot   string
	// ProviderBinary: a real plugin to pack for this machine's platform.
	ProviderBinary string

	mu        sync.Mutex
	providers map[string][]*bundletest.BuiltProvider // host/ns/type -> versions
	modules   map[string][]Module                    // host/ns/name/system -> versions
	files     map[string]string                      // path on releases/archives host -> file
	// Counters of package downloads, by filename.
	Downloads sync.Map
	// FailNext makes the next N provider zip downloads answer 503.
	FailNext atomic.Int32
	// Tamper makes zip downloads of this filename return altered bytes.
	Tamper atomic.Value // string
	// Throttle limits zip downloads to this many bytes per second (0: none).
	Throttle atomic.Int64
	// RangeRequests counts zip downloads that asked for a byte range.
	RangeRequests atomic.Int32
	handlers      sync.Map // host+path -> http.Handler, see Handle
	// Corp: switches of the company's proxy registry and mirror.
	Corp    Corp
	blocked sync.Map // host -> true: unreachable (Block)
	// sources: host/ns/type -> the source repository its version
	// documents name (SetProviderSource)
	sources map[string]string
	// cli: the terraform and tofu releases published (AddCLIRelease)
	cli cliReleases
}

type throttled struct {
	http.ResponseWriter
	rate int64
}

func (t throttled) Write(p []byte) (int, error) {
	const chunk = 16 << 10
	n := 0
	for len(p) > 0 {
		c := min(len(p), chunk)
		w, err := t.ResponseWriter.Write(p[:c])
		n += w
		if err != nil {
			return n, err
		}
		if f, ok := t.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		time.Sleep(time.Duration(int64(c) * int64(time.Second) / t.rate))
		p = p[c:]
	}
	return n, nil
}

// Module is a stand-in module version.
type Module struct {
	Version  string
	Location string // X-Terraform-Get (terraform.io) or JSON location (opentofu.org)
}

// New starts the stand-in.
func New(t testing.TB) *Internet {
	t.Helper()
	in := &Internet{Dir: t.TempDir(), Publisher: bundletest.Key(t, "publisher"),
		providers: map[string][]*bundletest.BuiltProvider{}, modules: map[string][]Module{}, files: map[string]string{}, sources: map[string]string{}}
	in.Tamper.Store("")
	in.GitRoot = filepath.Join(in.Dir, "git")
	os.MkdirAll(in.GitRoot, 0o755)
	caCert, caKey := newCA(t)
	in.CAFile = filepath.Join(in.Dir, "ca.pem")
	os.WriteFile(in.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}), 0o644)
	in.CertPool = x509.NewCertPool()
	in.CertPool.AddCert(caCert)
	leaf := leafCert(t, caCert, caKey, Hosts)
	in.Server = httptest.NewUnstartedServer(http.HandlerFunc(in.route))
	in.Server.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	in.Server.StartTLS()
	t.Cleanup(in.Server.Close)
	in.Proxy = httptest.NewServer(http.HandlerFunc(in.connect))
	t.Cleanup(in.Proxy.Close)
	return in
}

// Transport returns an http.RoundTripper that reaches every stand-in host by
// name (for in-process clients) and trusts the test CA. It dials nothing
// but loopback: a host the stand-in does not answer for, unless an
// address on loopback (a test's own server), is unreachable, as through
// the CONNECT proxy, and is never looked up.
func (in *Internet) Transport() http.RoundTripper {
	addr := in.Server.Listener.Addr().String()
	return &http.Transport{
		DialContext: func(ctx context.Context, network, hostport string) (net.Conn, error) {
			var d net.Dialer
			host, _, _ := net.SplitHostPort(hostport)
			if in.isBlocked(host) {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("no route to host (blocked on the stand-in internet)")}
			}
			for _, h := range Hosts {
				if h == host {
					return d.DialContext(ctx, network, addr)
				}
			}
			if !isLoopback(host) {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("no route to " + host + " on the stand-in internet")}
			}
			return d.DialContext(ctx, network, hostport)
		},
		TLSClientConfig:   &tls.Config{RootCAs: in.CertPool},
		ForceAttemptHTTP2: true,
	}
}

// Env returns environment variables that route a subprocess's HTTPS (Go
// programs, terraform, git) to the stand-in by real host names. It sets
// every proxy variable the network guard sets (GuardNetwork), so that it
// replaces the guard's when it comes after it.
func (in *Internet) Env() []string {
	return append(ProxyEnv(in.Proxy.URL), "NO_PROXY=", "no_proxy=",
		"SSL_CERT_FILE="+in.CAFile, "SSL_CERT_DIR="+filepath.Join(in.Dir, "nocerts"), "GIT_SSL_CAINFO="+in.CAFile)
}

// ProxyEnv sets every proxy variable the network guard sets (GuardNetwork)
// to proxyURL, for a child process whose environment comes after the
// guard's: HTTPS_PROXY alone would leave git (curl reads https_proxy
// first) with the guard's.
func ProxyEnv(proxyURL string) []string {
	var env []string
	for _, k := range proxyVars {
		env = append(env, k+"="+proxyURL)
	}
	return env
}

func (in *Internet) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	host, port, _ := net.SplitHostPort(r.Host)
	known := false
	for _, h := range Hosts {
		if h == host {
			known = true
		}
	}
	if !known || port != "443" || in.isBlocked(host) {
		http.Error(w, "no route to "+r.Host+" on the stand-in internet", http.StatusBadGateway)
		return
	}
	splice(w, in.Server.Listener.Addr().String())
}

// splice answers a CONNECT with a tunnel to addr, which must be on
// loopback: the stand-in reaches nothing else.
func splice(w http.ResponseWriter, addr string) {
	if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
		http.Error(w, "the stand-in tunnels only to loopback, not "+addr, http.StatusBadGateway)
		return
	}
	up, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		return
	}
	w.WriteHeader(200)
	conn, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		up.Write(b)
	}
	go func() { io.Copy(up, conn); up.Close() }()
	io.Copy(conn, up)
	conn.Close()
}

// isLoopback: localhost or a loopback address.
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

func (in *Internet) route(w http.ResponseWriter, r *http.Request) {
	host, _, _ := strings.Cut(r.Host, ":")
	if h, ok := in.handlers.Load(host + r.URL.Path); ok { // see Handle
		h.(http.Handler).ServeHTTP(w, r)
		return
	}
	switch host {
	case "registry.terraform.io":
		in.registry(w, r, "registry.terraform.io", false)
	case "registry.opentofu.org":
		in.registry(w, r, "registry.opentofu.org", true)
	case "registry.example.com":
		if r.URL.Path != "/.well-known/terraform.json" && r.Header.Get("Authorization") != "Bearer "+PrivateToken {
			http.Error(w, `{"errors":["unauthorized"]}`, http.StatusUnauthorized)
			return
		}
		in.registry(w, r, host, false)
	case "releases.hashicorp.com", "archives.example.com":
		if r.Header.Get("Authorization") != "" {
			// Real clients never send registry tokens to download hosts.
			http.Error(w, "credentials sent to a download host", http.StatusBadRequest)
			return
		}
		in.file(w, r)
	case "github.com", GitSiteHost:
		in.git(w, r)
	case ProxyHost, MirrorHost:
		in.corp(w, r, host)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (in *Internet) registry(w http.ResponseWriter, r *http.Request, host string, tofu bool) {
	in.registryAs(w, r, host, tofu, nil)
}

// registryAs answers the registry protocol for host; rewrite, if set, is a
// proxy's: it rewrites each provider download document, and module
// archive locations point at the proxy.
func (in *Internet) registryAs(w http.ResponseWriter, r *http.Request, host string, tofu bool, rewrite func(map[string]any)) {
	p := r.URL.Path
	if p == "/.well-known/terraform.json" {
		if tofu || host == "registry.example.com" {
			writeJSON(w, map[string]string{"modules.v1": "/v1/modules/", "providers.v1": "/v1/providers/"})
		} else {
			writeJSON(w, map[string]string{"modules.v1": "https://registry.terraform.io/v1/modules/", "providers.v1": "/v1/providers/"})
		}
		return
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(parts) >= 5 && parts[0] == "v1" && parts[1] == "providers" {
		key := host + "/" + parts[2] + "/" + parts[3]
		vs := in.providers[key]
		if len(vs) == 0 {
			http.NotFound(w, r)
			return
		}
		if len(parts) == 5 && parts[4] == "versions" {
			var out []map[string]any
			for _, v := range vs {
				var plats []map[string]string
				for _, pk := range v.Packages {
					plats = append(plats, map[string]string{"os": pk.OS, "arch": pk.Arch})
				}
				out = append(out, map[string]any{"version": v.Version, "protocols": []string{"5.0"}, "platforms": plats})
			}
			writeJSON(w, map[string]any{"versions": out})
			return
		}
		if len(parts) == 5 && !tofu && in.sources[key] != "" {
			// registry.terraform.io's version document names the
			// provider's source repository (SetProviderSource).
			writeJSON(w, map[string]any{"id": key + "/" + parts[4], "version": parts[4], "source": in.sources[key]})
			return
		}
		if len(parts) == 8 && parts[5] == "download" {
			for _, v := range vs {
				if v.Version != parts[4] {
					continue
				}
				pk, ok := v.Package(parts[6], parts[7])
				if !ok {
					break
				}
				base := "https://releases.hashicorp.com/" + path(host, v.Type, v.Version) + "/"
				keys := []map[string]string{}
				if !tofu {
					keys = append(keys, map[string]string{"key_id": v.SigningKeys[0].KeyID, "ascii_armor": v.SigningKeys[0].ASCIIArmor})
				}
				doc := map[string]any{
					"protocols": []string{"5.0"}, "os": pk.OS, "arch": pk.Arch, "filename": pk.Filename,
					"download_url": base + pk.Filename, "shasums_url": base + v.ShasumsName,
					"shasums_signature_url": base + v.ShasumsName + ".sig", "shasum": pk.Digest.Hex(),
					"signing_keys": map[string]any{"gpg_public_keys": keys},
				}
				if tofu { // relative URLs, as a static registry may give them
					doc["download_url"] = "/dl/" + path(host, v.Type, v.Version) + "/" + pk.Filename
					// and every platform's hashes and size, which OpenTofu
					// 1.12 records in the lock file (RFC
					// 20251027-provider-registry-hashes).
					pkgs := map[string]any{}
					for _, p := range v.Packages {
						pkgs[p.Platform()] = map[string]any{"hashes": []string{p.ZH(), p.H1}, "package_size": p.Size}
					}
					doc["packages"] = pkgs
				}
				if rewrite != nil {
					rewrite(doc)
				}
				writeJSON(w, doc)
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	if len(parts) >= 6 && parts[0] == "v1" && parts[1] == "modules" {
		key := strings.ToLower(host + "/" + parts[2] + "/" + parts[3] + "/" + parts[4])
		vs := in.modules[key]
		if len(vs) == 0 {
			http.NotFound(w, r)
			return
		}
		if len(parts) == 6 && parts[5] == "versions" {
			var out []map[string]string
			for _, v := range vs {
				out = append(out, map[string]string{"version": v.Version})
			}
			writeJSON(w, map[string]any{"modules": []any{map[string]any{"versions": out}}})
			return
		}
		if len(parts) == 7 && parts[6] == "download" {
			for _, v := range vs {
				if v.Version == parts[5] {
					if rewrite != nil {
						v.Location = strings.Replace(v.Location, "https://archives.example.com/", "https://"+ProxyHost+"/arch/", 1)
					}
					if tofu {
						writeJSON(w, map[string]string{"location": v.Location})
					} else {
						w.Header().Set("X-Terraform-Get", v.Location)
						w.WriteHeader(http.StatusNoContent)
					}
					return
				}
			}
		}
	}
	if tofu && strings.HasPrefix(p, "/dl/") {
		http.Redirect(w, r, "https://releases.hashicorp.com/"+strings.TrimPrefix(p, "/dl/"), http.StatusFound)
		return
	}
	http.NotFound(w, r)
}

func path(host, typ, ver string) string {
	return host + "/terraform-provider-" + typ + "/" + ver
}

func (in *Internet) file(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	f, ok := in.files[r.Host+r.URL.Path]
	in.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	name := filepath.Base(f)
	if strings.HasSuffix(name, ".zip") {
		n, _ := in.Downloads.LoadOrStore(name, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if in.FailNext.Load() > 0 {
			in.FailNext.Add(-1)
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		if in.Tamper.Load().(string) == name {
			b, _ := os.ReadFile(f)
			b[len(b)/2] ^= 0xff
			w.Write(b)
			return
		}
		if r.Header.Get("Range") != "" {
			in.RangeRequests.Add(1)
		}
		if rate := in.Throttle.Load(); rate > 0 {
			w = throttled{w, rate}
		}
	}
	http.ServeFile(w, r, f)
}

func (in *Internet) git(w http.ResponseWriter, r *http.Request) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "no git", 500)
		return
	}
	h := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Dir: in.GitRoot,
		Env: []string{"GIT_PROJECT_ROOT=" + in.GitRoot, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: quietGit{}}
	h.ServeHTTP(w, r)
}

// quietGit is git http-backend's stderr: its complaint about a
// repository the stand-in does not have (every export asks for each
// provider's docs repository) is dropped; anything else goes to stderr.
type quietGit struct{}

func (quietGit) Write(p []byte) (int, error) {
	if !strings.Contains(string(p), "Not a git repository") {
		os.Stderr.Write(p)
	}
	return len(p), nil
}

// Downloaded returns how many times a package file was requested.
func (in *Internet) Downloaded(filename string) int32 {
	if n, ok := in.Downloads.Load(filename); ok {
		return n.(*atomic.Int32).Load()
	}
	return 0
}

// AddProvider publishes a provider version on host (registry.terraform.io or
// registry.opentofu.org), its files on releases.hashicorp.com. If
// in.ProviderBinary is set, this machine's platform gets that real plugin.
func (in *Internet) AddProvider(t testing.TB, host, ns, typ, version string, platforms []string, size int) *bundletest.BuiltProvider {
	t.Helper()
	bp := bundletest.BuildProvider(t, filepath.Join(in.Dir, "providers", host, typ, version), bundletest.Provider{
		Host: host, Namespace: ns, Type: typ, Version: version, Platforms: platforms, Signer: in.Publisher, PackageSize: size,
		Binary: in.ProviderBinary, BinaryPlatform: runtime.GOOS + "_" + runtime.GOARCH,
	})
	in.AddBuiltProvider(bp)
	return bp
}

// AddBuiltProvider publishes a provider version whose files (zips,
// SHA256SUMS signed by in.Publisher, signature) are already written, as
// AddProvider publishes the ones it builds.
func (in *Internet) AddBuiltProvider(bp *bundletest.BuiltProvider) {
	in.mu.Lock()
	defer in.mu.Unlock()
	key := bp.Host + "/" + bp.Namespace + "/" + bp.Type
	in.providers[key] = append(in.providers[key], bp)
	for name, f := range bp.Files {
		in.files["releases.hashicorp.com/"+path(bp.Host, bp.Type, bp.Version)+"/"+name] = f
	}
}

// AddModule publishes a module version whose download answer is location.
func (in *Internet) AddModule(host, ns, name, system, version, location string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	key := strings.ToLower(host + "/" + ns + "/" + name + "/" + system)
	in.modules[key] = append(in.modules[key], Module{Version: version, Location: location})
}

// AddArchive publishes a tar.gz of files at https://archives.example.com/name.
func (in *Internet) AddArchive(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	p := filepath.Join(in.Dir, "archives", name)
	bundletest.WriteModuleArchive(t, p, files)
	in.mu.Lock()
	in.files["archives.example.com/"+name] = p
	in.mu.Unlock()
	return "https://archives.example.com/" + name
}

// AddGitRepo creates a bare repository github.com/<repo> (reachable with and
// without ".git") with one commit of files, tagged tag.
func (in *Internet) AddGitRepo(t testing.TB, repo, tag string, files map[string]string) {
	t.Helper()
	work := filepath.Join(in.Dir, "gitwork", repo)
	for n, c := range files {
		bundletest.WriteFile(t, filepath.Join(work, n), []byte(c))
	}
	run := func(dir string, args ...string) { gitIn(t, dir, args...) }
	run(work, "init", "-q", "-b", "main")
	run(work, "add", "-A")
	run(work, "commit", "-q", "-m", "release")
	run(work, "tag", tag)
	bare := filepath.Join(in.GitRoot, repo+".git")
	run(in.Dir, "clone", "-q", "--bare", work, bare)
	os.Symlink(filepath.Base(bare), filepath.Join(in.GitRoot, repo))
}

// gitIn runs git in dir with a fixed author, committer and date.
func gitIn(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Provider returns a published provider version (for assertions), or nil.
func (in *Internet) Provider(host, ns, typ, version string) *dist.ProviderVersion {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, v := range in.providers[host+"/"+ns+"/"+typ] {
		if v.Version == version {
			return &v.ProviderVersion
		}
	}
	return nil
}

func newCA(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stand-in internet CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func leafCert(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, names []string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: names, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// World publishes a small, realistic set on a new stand-in internet:
//   - registry.terraform.io providers hashicorp/random 3.5.1, 3.6.0, 3.6.2 and
//     hashicorp/null 3.2.2, RSA-signed, packages on releases.hashicorp.com;
//   - registry.opentofu.org provider hashicorp/local 2.5.1 with no signing keys;
//   - modules in every location form: example/vpc/aws 1.0.0 (git tag; calls
//     example/subnet/aws ~> 2.0 and requires hashicorp/null ~> 3.2),
//     example/sub/aws 2.0.0 (git, //subdir before ?ref), example/subnet/aws
//     1.0.0 and 2.1.0 (HTTP tarball), and
//     registry.opentofu.org/example/tofu/aws 1.0.0 (200 + JSON location).
func World(t testing.TB) *Internet {
	t.Helper()
	return WorldWith(t, "")
}

// WorldWith is World with providerBinary (see BuildFixtureProvider) packed
// for this machine's platform, so that Terraform can run the providers.
func WorldWith(t testing.TB, providerBinary string) *Internet {
	t.Helper()
	in := New(t)
	in.ProviderBinary = providerBinary
	plats := []string{"linux_amd64", "darwin_arm64", "windows_amd64"}
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.5.1", plats, 8<<10)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.6.0", plats, 8<<10)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.6.2", plats, 8<<10)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "null", "3.2.2", []string{"linux_amd64", "darwin_arm64"}, 4<<10)
	in.AddProvider(t, "registry.opentofu.org", "hashicorp", "local", "2.5.1", plats, 4<<10)
	in.AddGitRepo(t, "example/terraform-aws-vpc", "v1.0.0", map[string]string{
		"main.tf": `terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~> 3.2" }
  }
}
variable "name" {
  default = "vpc"
}
module "subnet" {
  source  = "example/subnet/aws"
  version = "~> 2.0"
}
output "name" {
  value = var.name
}
`,
		"modules/inner/main.tf": "variable \"x\" {}\n",
	})
	in.AddModule("registry.terraform.io", "example", "vpc", "aws", "1.0.0", "git::https://github.com/example/terraform-aws-vpc?ref=v1.0.0")
	in.AddGitRepo(t, "example/mono", "v2.0.0", map[string]string{"modules/sub/main.tf": "output \"x\" {\n  value = 1\n}\n", "README.md": "mono\n"})
	in.AddModule("registry.terraform.io", "example", "sub", "aws", "2.0.0", "git::https://github.com/example/mono//modules/sub?ref=v2.0.0")
	loc := in.AddArchive(t, "subnet-2.1.0.tar.gz", map[string]string{"main.tf": "output \"id\" {\n  value = \"s\"\n}\n"})
	in.AddModule("registry.terraform.io", "example", "subnet", "aws", "2.1.0", loc)
	in.AddModule("registry.terraform.io", "example", "subnet", "aws", "1.0.0", loc)
	loc2 := in.AddArchive(t, "tofu-1.0.0.tar.gz", map[string]string{"main.tf": "output \"t\" {\n  value = 1\n}\n"})
	in.AddModule("registry.opentofu.org", "example", "tofu", "aws", "1.0.0", loc2)
	return in
}

// BuildFixtureProvider builds the minimal real provider in
// dist/registrytest/fixtureprovider into dir and returns its path.
func BuildFixtureProvider(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "terraform-provider-fixture")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./fixtureprovider")
	cmd.Dir = filepath.Dir(file)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture provider: %v\n%s", err, b)
	}
	return out
}

// Resign re-signs a published provider version's SHA256SUMS with
// in.Publisher, as a publisher does when it rotates its key: the packages
// and SHA256SUMS stay byte for byte the same, the signature and the key
// the registry lists are new.
func (in *Internet) Resign(t testing.TB, host, ns, typ, version string) {
	t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, v := range in.providers[host+"/"+ns+"/"+typ] {
		if v.Version != version {
			continue
		}
		sums, err := os.ReadFile(v.Files[v.ShasumsName])
		if err != nil {
			t.Fatal(err)
		}
		var sig bytes.Buffer
		if err := verify.SignDetachedAt(&sig, in.Publisher, bytes.NewReader(sums), time.Unix(2, 0)); err != nil {
			t.Fatal(err)
		}
		bundletest.WriteFile(t, v.Files[v.ShasumsName+".sig"], sig.Bytes())
		v.ShasumsSig = verify.DigestBytes(sig.Bytes())
		v.SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(in.Publisher), ASCIIArmor: bundletest.Armor(t, in.Publisher)}}
		return
	}
	t.Fatalf("Resign: %s/%s/%s %s is not published", host, ns, typ, version)
}
