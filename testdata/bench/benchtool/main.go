// Command benchtool prepares what 'make bench' (testdata/bench/run.sh)
// measures: fixtures, stores, bundles, a stand-in internet and the net/http
// floor server. It measures nothing itself except where noted; run.sh times
// the real commands.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/verify"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool world|site|zstdsize|sbomcost|serve-fixtures|nethttp|synthetic|login-token|s3 [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "working directory")
	n := fs.Int("n", 10, "how many (providers for world, packages for synthetic)")
	size := fs.Int64("size", 20<<20, "bytes per package")
	rate := fs.Int64("rate", 0, "world: limit each package download to this many bytes/s, like a CDN per connection (0: loopback speed)")
	listen := fs.String("listen", "127.0.0.1:18446", "nethttp: address to serve on")
	total := fs.Int64("bytes", 10<<30, "site: provider package bytes in all")
	unpacked := fs.Int64("unpacked", 830<<20, "site: bytes of the plugin binary in each package, unpacked (the AWS provider's darwin_arm64: 830 MB)")
	modules := fs.Int("modules", 24, "site: modules")
	cache := fs.String("cache", "", "site: where the packed payload is cached between runs")
	bundlePath := fs.String("bundle", "", "zstdsize, sbomcost: the bundle")
	key := fs.String("key", "", "zstdsize: the site signing key (armored)")
	keyring := fs.String("keyring", "", "sbomcost: the bundle signer's public key")
	blobs := fs.String("blobs", "", "sbomcost: directory of the packages and build-information blobs by hex digest (an export cache's blobs/sha256)")
	sample := fs.Int("sample", 0, "sbomcost: measure this many packages, spread over the catalog, and scale to all (0: all)")
	storeDir := fs.String("store", "", "login-token: the store whose serve takes the token")
	group := fs.String("group", "", "login-token: the group the person is in")
	s3Op := fs.String("op", "", "s3: mkbucket or upload")
	s3Endpoint := fs.String("endpoint", "", "s3: the S3 server's URL")
	s3Bucket := fs.String("bucket", "", "s3: the bucket")
	s3Key := fs.String("key-name", "", "s3 upload: the object's key")
	s3File := fs.String("file", "", "s3 upload: the file to upload")
	fs.Parse(os.Args[2:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "-dir is required")
		os.Exit(2)
	}
	os.MkdirAll(*dir, 0o755)
	t := bundletest.NewStandalone(filepath.Join(*dir, "fixtures"))
	switch os.Args[1] {
	case "world":
		world(t, *dir, *n, int(*size), *rate)
	case "site":
		site(t, *dir, *cache, *total, *unpacked, *modules)
	case "serve-fixtures":
		serveFixtures(t, *dir, int(*size))
	case "zstdsize":
		zstdSize(t, *bundlePath, *key)
	case "synthetic":
		synthetic(t, *dir, *n)
	case "nethttp":
		netHTTP(t, *dir, *listen)
	case "sbomcost":
		sbomCost(t, *bundlePath, *keyring, *blobs, *sample)
	case "login-token":
		loginToken(t, *storeDir, *group)
	case "s3":
		s3Tool(t, *s3Op, *s3Endpoint, *s3Bucket, *s3Key, *s3File)
	default:
		t.Fatalf("unknown subcommand %q", os.Args[1])
	}
}

var plats = []string{"linux_amd64", "darwin_arm64", "windows_amd64"}

// loginToken prints the secret of a login token of a person in group,
// issued into the store's login state as a sign-in through the identity
// provider would (the bench has no IdP; what is measured is the token's
// cost on every request).
func loginToken(t *bundletest.Standalone, storeDir, group string) {
	now := time.Now().UTC().Truncate(time.Second)
	secret, err := access.IssueLoginToken(storeDir, &access.LoginToken{User: "bench@site.example", Subject: "bench", Issuer: "https://idp.invalid",
		Groups: []string{group}, Via: "cli", Created: now, Expires: now.Add(24 * time.Hour)})
	if err != nil {
		t.Fatalf("login-token: %v", err)
	}
	fmt.Println(secret)
}

// world serves n providers x 3 platforms of size bytes on a stand-in
// internet until SIGTERM, writing DIR/env (HTTPS_PROXY, SSL_CERT_FILE, …),
// DIR/airgap.hcl and DIR/tf/main.tf.
func world(t *bundletest.Standalone, dir string, n, size int, rate int64) {
	in := registrytest.New(t)
	in.Throttle.Store(rate)
	var hcl, tf strings.Builder
	hcl.WriteString(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]` + "\n")
	tf.WriteString("terraform {\n  required_providers {\n")
	for i := 0; i < n; i++ {
		typ := fmt.Sprintf("p%02d", i)
		in.AddProvider(t, "registry.terraform.io", "bench", typ, "1.0.0", plats, size)
		fmt.Fprintf(&hcl, "provider \"bench/%s\" {\n  versions = \"1.0.0\"\n}\n", typ)
		fmt.Fprintf(&tf, "    %s = { source = \"bench/%s\", version = \"1.0.0\" }\n", typ, typ)
	}
	// One more version of p00, for the delta figure: airgap-next.hcl asks
	// for everything airgap.hcl does plus it.
	next := in.AddProvider(t, "registry.terraform.io", "bench", "p00", "1.1.0", plats, size)
	var nextBytes int64
	for _, pk := range next.Packages {
		nextBytes += pk.Size
	}
	os.WriteFile(filepath.Join(dir, "airgap-next.hcl"), []byte(strings.Replace(hcl.String(),
		"provider \"bench/p00\" {\n  versions = \"1.0.0\"\n}", "provider \"bench/p00\" {\n  all = true\n}", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "next-bytes"), []byte(fmt.Sprint(nextBytes)), 0o644)
	tf.WriteString("  }\n}\n")
	os.WriteFile(filepath.Join(dir, "airgap.hcl"), []byte(hcl.String()), 0o644)
	os.MkdirAll(filepath.Join(dir, "tf"), 0o755)
	os.WriteFile(filepath.Join(dir, "tf", "main.tf"), []byte(tf.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "env"), []byte(strings.Join(in.Env(), "\n")+"\n"), 0o644)
	fmt.Println("ready")
	waitForSignal()
	t.Close()
}

// serveFixtures writes DIR/store (small providers plus one package of size
// bytes), DIR/mirror (the same as a static 'terraform providers mirror'
// tree for nginx), and DIR/tls/{cert,key,ca}.pem for localhost/127.0.0.1.
func serveFixtures(t *bundletest.Standalone, dir string, size int) {
	signer := bundletest.Key(t, "bench")
	// Providers are signed by a publisher key, as upstream: a site key is
	// never a publisher key.
	pub := bundletest.Key(t, "publisher")
	set := bundletest.NewSet()
	small := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "random", Version: "3.6.0", Platforms: plats, Signer: pub, PackageSize: 64 << 10})
	big := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "bench",
		Type: "big", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Signer: pub, PackageSize: size})
	set.AddProvider(small)
	set.AddProvider(big)
	pr, pw := io.Pipe()
	go func() { set.WriteBundle(t, pw, signer, bundle.CompressionNone); pw.Close() }()
	if _, err := store.Import(filepath.Join(dir, "store"), pr, store.ImportOptions{Keyring: openpgp.EntityList{signer}}); err != nil {
		t.Fatal(err)
	}
	for _, bp := range []*bundletest.BuiltProvider{small, big} {
		d := filepath.Join(dir, "mirror", bp.Host, bp.Namespace, bp.Type)
		os.MkdirAll(d, 0o755)
		writeJSON(t, filepath.Join(d, "index.json"), map[string]any{"versions": map[string]any{bp.Version: map[string]any{}}})
		archives := map[string]any{}
		for _, pk := range bp.Packages {
			archives[pk.Platform()] = map[string]any{"url": pk.Filename, "hashes": []string{pk.H1, pk.ZH()}}
			if err := os.Link(bp.Files[pk.Filename], filepath.Join(d, pk.Filename)); err != nil {
				t.Fatal(err)
			}
		}
		writeJSON(t, filepath.Join(d, bp.Version+".json"), map[string]any{"archives": archives})
	}
	ca, err := certs.LoadOrCreateCA(filepath.Join(dir, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	key, leafPub := newKey(t)
	der, err := ca.Sign(leafPub, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(filepath.Join(dir, "tls", "cert.pem"), append(leaf, ca.PEM...), 0o644)
	os.WriteFile(filepath.Join(dir, "tls", "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600)
	os.WriteFile(filepath.Join(dir, "tls", "ca.pem"), ca.PEM, 0o644)
	pk := big.Packages[0]
	fmt.Printf("BIG_BLOB=/blobs/sha256/%s/%s\nBIG_MIRROR=/registry.terraform.io/bench/big/%s\n", pk.Digest.Hex(), pk.Filename, pk.Filename)
	for _, sp := range small.Packages {
		if sp.Platform() == "linux_amd64" {
			fmt.Printf("BIG_SMALL_BLOB=/blobs/sha256/%s/%s\n", sp.Digest.Hex(), sp.Filename)
		}
	}
}

// netHTTP is the net/http floor of the serving figures: the files of up
// to 1 MiB under DIR/mirror (the answers nginx serves) held in memory and
// answered with the headers airgap sends, by net/http's server exactly as airgap
// configures it (server.NewHTTPServer: HTTP/1.1 only, the same timeouts
// and header limit) with the same certificate. None of airgap's own
// serving code runs (no routing, answer cache, connection limits or
// access middleware), so airgap against this row is the cost of that
// code, and this row against nginx is the cost of Go's standard server.
// The collector is set as serve sets it (GOGC=400). Serves until SIGTERM.
func netHTTP(t *bundletest.Standalone, dir, addr string) {
	debug.SetGCPercent(400)
	type file struct {
		body []byte
		size []string // Content-Length, formatted once as airgap's cache does
	}
	files := map[string]file{}
	root := filepath.Join(dir, "mirror")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 {
			return err
		}
		b, err := os.ReadFile(p)
		files[strings.TrimPrefix(p, root)] = file{b, []string{strconv.Itoa(len(b))}}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls", "cert.pem"), filepath.Join(dir, "tls", "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	server.HTTP1Only(tc)
	jsonCT, noCache, nosniff := []string{"application/json"}, []string{"no-cache"}, []string{"nosniff"}
	hs := server.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = jsonCT
		h["Cache-Control"] = noCache
		h["X-Content-Type-Options"] = nosniff
		h["Content-Length"] = f.size
		w.Write(f.body)
	}), nil)
	hs.TLSConfig = tc
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go hs.ServeTLS(ln, "", "")
	fmt.Println("ready")
	waitForSignal()
	hs.Close()
}

// waitForSignal returns on SIGTERM or an interrupt.
func waitForSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}

func writeJSON(t *bundletest.Standalone, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o644)
}

// zstdSize prints the size the bundle at path would have with
// --compression zstd (one zstd frame, bundle's fixed encoder): the
// bundle's manifest and blobs, read and checked, through the bundle writer
// into a counter. keyFile is the site key that signed it (to sign again).
func zstdSize(t *bundletest.Standalone, path, keyFile string) {
	kf, err := os.Open(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := verify.ReadSigningKey(kf, nil)
	kf.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br, err := bundle.NewReader(f, openpgp.EntityList{key})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	var n counter
	bw, err := bundle.NewWriter(&n, br.Manifest(), key, bundle.WriterOptions{Compression: bundle.CompressionZstd})
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := bw.WriteBlob(b.Digest, rd); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(int64(n))
}

type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

func newKey(t *bundletest.Standalone) ([]byte, any) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return der, &k.PublicKey
}

// synthetic writes DIR/store/index.json with about n provider packages
// (n/5 provider versions x 5 platforms); no blobs, for start-up and
// metadata scale.
func synthetic(t *bundletest.Standalone, dir string, n int) {
	signer := bundletest.Key(t, "bench")
	armor, _ := verify.PublicArmor(signer)
	keys := []dist.SigningKey{{KeyID: verify.KeyID(signer), ASCIIArmor: armor}}
	ix := store.Index{Format: store.IndexFormat, Catalog: dist.Catalog{Modules: []dist.ModuleVersion{}}}
	platforms := []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"}
	versions := n / len(platforms)
	for i := 0; i < versions; i++ {
		typ := fmt.Sprintf("p%04d", i/10)
		ver := fmt.Sprintf("1.%d.0", i%10)
		d := func(s string) verify.Digest { return verify.DigestBytes([]byte(s)) }
		pv := dist.ProviderVersion{Host: "registry.terraform.io", Namespace: "bench", Type: typ, Version: ver, Protocols: []string{"5.0"},
			ShasumsName: "terraform-provider-" + typ + "_" + ver + "_SHA256SUMS", Shasums: d(typ + ver + "s"), ShasumsSig: d(typ + ver + "g"), SigningKeys: keys}
		for _, p := range platforms {
			os_, arch, _ := strings.Cut(p, "_")
			pv.Packages = append(pv.Packages, dist.Package{OS: os_, Arch: arch, Filename: "terraform-provider-" + typ + "_" + ver + "_" + p + ".zip",
				Digest: d(typ + ver + p), Size: 50 << 20, H1: "h1:" + strings.Repeat("A", 43) + "="})
		}
		ix.Catalog.Providers = append(ix.Catalog.Providers, pv)
	}
	ix.Catalog.Sort()
	os.MkdirAll(filepath.Join(dir, "store", "blobs", "sha256"), 0o755)
	if err := store.WriteIndex(filepath.Join(dir, "store"), &ix); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "store", "index.json"))
	fmt.Printf("%d packages, index %d bytes\n", versions*len(platforms), fi.Size())
}
