package station

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// The evidence a site reads about what entered its store, and the bounds
// on what reading it costs: each test is the regression test of a
// finding of issue 30.

// TestCatalogHistoryWithAccessFile: with an access file, the catalog
// page's "Bundles imported" table showed "none" to every token: the
// filter compared the word "provider" or "module" that starts each
// history line with the token's address rules. Now a token sees the
// import that added what it may read, counting only that, and a token
// that may read nothing of it still sees none.
func TestCatalogHistoryWithAccessFile(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t) // one import: a terraform.io provider, an opentofu.org provider, a module
	access := filepath.Join(t.TempDir(), "access.hcl")
	all := harness.CreateToken(t, access, "all", "**")
	tofu := harness.CreateToken(t, access, "tofu", "registry.opentofu.org/**")
	nobody := harness.CreateToken(t, access, "nobody", "example.invalid/**")
	srv := harness.StartServe(t, root, "--access", access)
	base := srv.Base
	cl, _, _ := harness.CAClient(t, root)
	// The rows of the bundle table: the "Added" cell of each.
	added := func(token string) []string {
		t.Helper()
		resp, body := harness.HTTPGet(t, cl, base, "Authorization", "Bearer "+token)
		if resp.StatusCode != 200 {
			t.Fatalf("catalog page: %s", resp.Status)
		}
		page := string(body)
		i := strings.Index(page, `id="bundles"`)
		if i < 0 {
			t.Fatalf("no Bundles imported section:\n%s", page)
		}
		sec := page[i:]
		if strings.HasPrefix(strings.TrimSpace(sec[strings.Index(sec, "</h2>")+5:]), `<p class="muted">none</p>`) {
			return nil
		}
		rows := regexp.MustCompile(`(?s)<tr class="import"><td><code title="sha256:[0-9a-f]{64}">.*?</td><td>(\d+)</td><td>(\d+)</td>`).FindAllStringSubmatch(sec, -1)
		if len(rows) == 0 {
			t.Fatalf("a bundle table without rows:\n%s", sec)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r[1])
		}
		return out
	}
	if got := added(all); strings.Join(got, ",") != "3" {
		t.Errorf("token with every address: rows with Added %v, want one import that added 3", got)
	}
	if got := added(tofu); strings.Join(got, ",") != "1" {
		t.Errorf("token for registry.opentofu.org: rows with Added %v, want the import, counting the 1 entry it may read", got)
	}
	if got := added(nobody); got != nil {
		t.Errorf("token that may read nothing imported: rows %v, want none", got)
	}
}

// TestClientConfigRedirectKeepsToken: 'client-config --url URL
// --token-file F' asks the appliance for its origins with the token, and
// followed redirects with net/http's policy, which keeps the Authorization
// header for the same host name on any port and scheme and for every
// subdomain: an answer that redirected to http:// on the same host, or to
// a subdomain, received the token. It now follows the registry client's
// policy (registry.CheckRedirect): a redirect to plain http is refused
// before any request is made there, and one to another origin goes
// without the token.
func TestClientConfigRedirectKeepsToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, caFile := selfSignedTLS(t, dir, "appliance.test", "sub.appliance.test", "127.0.0.1")
	tokenFile := filepath.Join(dir, "token")
	secret := "airgap_" + strings.Repeat("R", 43)
	os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600)
	var mu sync.Mutex
	got := map[string]string{} // "host path" -> the Authorization header that arrived
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got[r.Host+" "+r.URL.Path] = r.Header.Get("Authorization")
	}
	heard := func(hostPath string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		a, ok := got[hostPath]
		return a, ok
	}
	// The plain-http side of the same host: records what reaches it.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"origins":["registry.terraform.io"]}`)
	}))
	defer plain.Close()
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch host, _, _ := strings.Cut(r.Host, ":"); host {
		case "127.0.0.1":
			http.Redirect(w, r, plain.URL+"/airgap/v1/origins", http.StatusFound)
		case "appliance.test":
			http.Redirect(w, r, "https://sub.appliance.test/airgap/v1/origins", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"origins":["registry.terraform.io"]}`)
		}
	}))
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	// An HTTPS proxy that tunnels every CONNECT to the TLS server: how
	// appliance.test and its subdomain reach loopback.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.Dial("tcp", tlsSrv.Listener.Addr().String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(200)
		conn, buf, err := w.(http.Hijacker).Hijack()
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
	}))
	defer proxy.Close()
	env := append(harness.BaseEnv(), "SSL_CERT_FILE="+caFile, "HTTPS_PROXY="+proxy.URL, "NO_PROXY=127.0.0.1")
	clientConfig := func(url string) (string, error) {
		cmd := exec.Command(harness.Bin, "client-config", "--url", url, "--token-file", tokenFile)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// https on 127.0.0.1 redirects to http on 127.0.0.1 (another port).
	tlsHost := tlsSrv.Listener.Addr().String()
	out, err := clientConfig("https://" + tlsHost + "/")
	if _, ok := heard(tlsHost + " /airgap/v1/origins"); !ok {
		t.Fatalf("the appliance was not asked at all: %v\n%s", err, out)
	}
	if auth, ok := heard(plainHost + " /airgap/v1/origins"); ok {
		t.Errorf("client-config followed the redirect from https to http://%s (Authorization %q reached it)", plainHost, auth)
	}
	if err == nil || !strings.Contains(out, "plain http") || !strings.Contains(out, "hint:") {
		t.Errorf("client-config through a redirect to plain http: %v, want a refusal saying so, with a hint:\n%s", err, out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("the refusal prints the token:\n%s", out)
	}

	// https://appliance.test redirects to https://sub.appliance.test.
	out, err = clientConfig("https://appliance.test/")
	if auth, ok := heard("appliance.test /airgap/v1/origins"); !ok || auth != "Bearer "+secret {
		t.Fatalf("the appliance itself did not get the token (%q, asked: %v): %v\n%s", auth, ok, err, out)
	}
	auth, ok := heard("sub.appliance.test /airgap/v1/origins")
	if !ok {
		t.Fatalf("the redirect to the subdomain was not followed: %v\n%s", err, out)
	}
	if auth != "" {
		t.Errorf("client-config sent the token to the subdomain it was redirected to: Authorization %q", auth)
	}
}

// selfSignedTLS makes a self-signed certificate for names (DNS names or IP
// addresses) and writes it to dir/ca.pem for SSL_CERT_FILE.
func selfSignedTLS(t *testing.T, dir string, names ...string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caFile
}

// bombRSSLimit is the peak resident memory (KiB) export, verify and import
// may reach on the build-information bomb: the binary's own (about 35
// MiB), one Scanner (4 MiB) and one inflater per worker, buffers.
const bombRSSLimit = 256 << 10

// bombPlugins makes the plugin files of the build-information bomb, already
// deflated: each starts a Go build-information header that announces a
// module string of goinfo.MaxModInfo bytes and stops one byte short of it.
// The first 48 KiB after the header are random, different in every file
// (so 256 of them make a zip of about 13 MiB, within check.MaxZipRatio,
// that no compression of the bundle shrinks), the rest zeros: the zeros'
// deflate stream is made once and appended to each file's flushed head.
type bombPlugins struct {
	zeros    []byte // deflated zeros, the final block
	zerosCRC func(crc uint32) uint32
	prng     *bundletest.PRNG
}

func newBombPlugins() *bombPlugins {
	const noise = 48 << 10
	tail := make([]byte, goinfo.MaxModInfo-1-noise)
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestCompression)
	fw.Write(tail)
	fw.Close()
	return &bombPlugins{zeros: z.Bytes(), prng: bundletest.NewPRNG("bomb"),
		zerosCRC: func(crc uint32) uint32 { return crc32.Update(crc, crc32.IEEETable, tail) }}
}

// next is one more plugin file, deflated.
func (bp *bombPlugins) next() harness.RawDeflated {
	head := append([]byte{}, "\xff Go buildinf:"...)
	head = append(head, 8, 2)
	head = append(head, make([]byte, 16)...)
	head = binary.AppendUvarint(head, 8)
	head = append(head, "go1.22.5"...)
	head = binary.AppendUvarint(head, goinfo.MaxModInfo)
	noise := make([]byte, 48<<10)
	bp.prng.Read(noise)
	head = append(head, noise...)
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestSpeed)
	fw.Write(head)
	fw.Flush() // byte-aligned, not final: the zeros' blocks follow
	packed.Write(bp.zeros)
	return harness.RawDeflated{Packed: packed.Bytes(), CRC: bp.zerosCRC(crc32.ChecksumIEEE(head)), Size: len(head) + goinfo.MaxModInfo - 1 - len(noise)}
}

// TestHostileBuildInfoPerFile: the red team's build-information bomb. A
// provider version whose four 13 MiB packages each hold 256
// terraform-provider-* files, every one starting a build-information header
// that announces a 4 MiB module string and stopping one byte short. The
// scan kept one Scanner per file until the package ended: 1.6-1.8 GiB per
// package, one package per core (a 49 MiB bundle verified at 3.2 GB with 2
// cores, 6.0 GB with 4). Now it scans one file at a time: export (its h1
// pass over the downloads), verify and import of the bundle it writes each
// stay under bombRSSLimit with GOMAXPROCS=4, and the packages are recorded
// as having no readable build information.
func TestHostileBuildInfoPerFile(t *testing.T) {
	work := t.TempDir()
	in := registrytest.New(t)
	plugins := newBombPlugins()
	plats := []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64"}
	bp := harness.ZipProvider(t, filepath.Join(work, "bomb"), in.Publisher, "bomb", plats, func(zw *zip.Writer, plat string) {
		for i := range check.MaxZipEntries {
			harness.RawFile(t, zw, fmt.Sprintf("terraform-provider-bomb_%s_%03d", plat, i), plugins.next())
		}
	})
	in.AddBuiltProvider(bp)
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", keys, "--name", "Site Ops <ops@site.test>")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte(`platforms = ["darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64"]
provider "hashicorp/bomb" {
  versions = "1.0.0"
}
`), 0o644)
	env := append(harness.BaseEnv(), "GOMAXPROCS=4")
	online := append(append(env, in.Env()...), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))
	b := filepath.Join(work, "bomb.bundle")

	start := time.Now()
	out, code := harness.RunBoundedEnv(t, work, online, bombRSSLimit, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	if code != 0 {
		t.Fatalf("export (exit %d):\n%s", code, out)
	}
	t.Logf("export: %s", time.Since(start).Round(time.Millisecond))
	fi, _ := os.Stat(b)
	t.Logf("bundle: %d MiB", fi.Size()>>20)

	start = time.Now()
	out, code = harness.RunBoundedEnv(t, work, env, bombRSSLimit, "verify", "--keyring", keys+".pub.asc", b)
	if code != 0 || !strings.Contains(out, "(4 packages)") {
		t.Errorf("verify (exit %d):\n%s", code, out)
	}
	t.Logf("verify: %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	out, code = harness.RunBoundedEnv(t, work, env, bombRSSLimit, "import", "--keyring", keys+".pub.asc", "--store", filepath.Join(work, "store"), b)
	if code != 0 {
		t.Errorf("import (exit %d):\n%s", code, out)
	}
	t.Logf("import: %s", time.Since(start).Round(time.Millisecond))
}

// TestHostileNestedInventory: 'verify --against' given an inventory of
// 255 MiB (under store.MaxInventorySize) whose "maintenance" is one array
// nested 255 million levels deep. The reader skipped it token by token,
// and json.Decoder keeps a word per open level: 6-7 GB and 20-30 s before
// it was refused. Now every JSON reader has a depth bound
// (dist.JSONLimit): it is refused at the 17th level, within 1 s and
// 64 MiB, by verify --against and by export --have alike.
func TestHostileNestedInventory(t *testing.T) {
	work := t.TempDir()
	inv := filepath.Join(work, "have.json")
	f, err := os.Create(inv)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"format":2,"maintenance":`)
	chunk := bytes.Repeat([]byte("["), 1<<20)
	for range 255 {
		f.Write(chunk)
	}
	f.Close()
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte("provider \"hashicorp/random\" {}\n"), 0o644)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", filepath.Join(work, "site"))
	for _, c := range []struct {
		name string
		args []string
	}{
		{"verify --against", []string{"verify", "--keyring", "no-such.asc", "--against", inv, "no-such.bundle"}},
		{"export --have", []string{"export", "--manifest", "airgap.hcl", "--sign-key", "site.key.asc", "--have", inv, "--out", "x.bundle"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, code := harness.RunBoundedEnv(t, work, harness.BaseEnv(), 64<<10, c.args...)
			took := time.Since(start)
			if code == 0 || !strings.Contains(out, "nested over the depth limit") {
				t.Errorf("exit %d, want a refusal naming the depth:\n%s", code, out)
			}
			if took > time.Second {
				t.Errorf("refused after %s, want within 1 s", took.Round(time.Millisecond))
			}
			t.Logf("%s: refused in %s: %s", c.name, took.Round(time.Millisecond), strings.TrimSpace(out))
		})
	}
}

// TestShowReport: 'airgap show BUNDLE report' prints the gate reports a
// bundle carries, which verify only named by digest (the officer had to
// 'zstd -dc | tar -xO' the bundle): the list, a SARIF report as a table
// with every cell escaped, any other report as escaped text, --raw as the
// exact bytes. Each is checked against the bundle's signature and its
// signed digest first: a bundle whose report bytes were altered, or signed
// by a key not in the keyring, prints nothing of it.
func TestShowReport(t *testing.T) {
	t.Parallel()
	work, site, keyring, _, set := harness.TrustWorld(t)
	sarif := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"trivy"}},"results":[` +
		`{"ruleId":"AVD-AWS-0086","level":"error","message":{"text":"S3 bucket has no public access block \u001b[2J"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"modules/vpc/main.tf"},"region":{"startLine":12}}}]},` +
		`{"ruleId":"AVD-AWS-0089","message":{"text":"no logging"}}]}]}`
	set.AddGate(t, work, dist.Gate{Name: "trivy", For: dist.GateModules, Command: []string{"trivy", "config", "{dir}"}, Tool: "Version: 0.74.0"},
		dist.GateResult{Status: dist.GatePassed, Findings: &dist.GateFindings{Error: 1, Warning: 1}}, []byte(sarif))
	text := "checked 3 files\n\x1b]0;owned\x07all good\n"
	set.AddGate(t, work, dist.Gate{Name: "lint", For: dist.GateModules, Command: []string{"tflint", "{dir}"}, Tool: "tflint 0.50"},
		dist.GateResult{Status: dist.GatePassed}, []byte(text))
	path := filepath.Join(work, "gated.bundle")
	set.WriteBundleFile(t, path, site, bundle.CompressionNone)
	show := func(args ...string) (string, string, error) {
		cmd := exec.Command(harness.Bin, append([]string{"show", "--keyring", keyring, path}, args...)...)
		cmd.Env = harness.BaseEnv()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := show("report")
	if err != nil || !strings.Contains(out, "carries 2 gate reports") || !strings.Contains(out, "registry.terraform.io/example/vpc/aws@1.0.0  trivy: passed") ||
		!strings.Contains(out, "1 error, 1 warning") || !strings.Contains(out, "lint: passed") {
		t.Errorf("show report (the list): %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = show("report", "example/vpc/aws@1.0.0", "trivy")
	t.Logf("show report example/vpc/aws@1.0.0 trivy:\n%s", out)
	for _, want := range []string{"RULE", "LEVEL", "FILE:LINE", "MESSAGE", "AVD-AWS-0086", "error", "modules/vpc/main.tf:12",
		`S3 bucket has no public access block \x1b[2J`, "AVD-AWS-0089", "warning", "no logging", "checked against the bundle's signed manifest"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("show report … trivy lacks %q: %v\n%s%s", want, err, out, errOut)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("show printed a control character of the report:\n%q", out)
	}
	out, _, err = show("report", "registry.terraform.io/example/vpc/aws@1.0.0", "lint")
	if err != nil || !strings.Contains(out, `\x1b]0;owned\aall good`) && !strings.Contains(out, `\x1b]0;owned\x07all good`) || strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("show report … lint (text, escaped): %v\n%q", err, out)
	}
	out, _, err = show("report", "example/vpc/aws@1.0.0", "trivy", "--raw")
	if err != nil || out != sarif {
		t.Errorf("show --raw: %v, %d bytes, want the report's %d exact bytes", err, len(out), len(sarif))
	}
	if _, errOut, err = show("report", "example/vpc/aws@1.0.0", "--raw"); harness.ExitCode(err) != 2 || !strings.Contains(errOut, "name the GATE") {
		t.Errorf("--raw with two matching reports: %v\n%s", err, errOut)
	}
	if _, errOut, err = show("report", "example/vpc/aws@9.9.9"); err == nil || !strings.Contains(errOut, "no gate report") || !strings.Contains(errOut, "hint:") {
		t.Errorf("an entry the bundle lacks: %v\n%s", err, errOut)
	}

	// The report's bytes altered in the bundle (its signature intact):
	// refused, and nothing of the report printed.
	b, _ := os.ReadFile(path)
	i := bytes.Index(b, []byte("no public access block"))
	if i < 0 {
		t.Fatal("the report is not stored as is in an uncompressed bundle")
	}
	b[i] = 'N'
	tampered := filepath.Join(work, "tampered.bundle")
	os.WriteFile(tampered, b, 0o644)
	path = tampered
	out, errOut, err = show("report", "example/vpc/aws@1.0.0", "trivy")
	if err == nil || strings.Contains(out, "public access") || !strings.Contains(errOut, "digest") {
		t.Errorf("a bundle whose report was altered: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	// Signed by a key the keyring does not hold.
	other := filepath.Join(work, "other.pub.asc")
	bundletest.WriteFile(t, other, []byte(bundletest.Armor(t, bundletest.Key(t, "other"))))
	cmd := exec.Command(harness.Bin, "show", "--keyring", other, filepath.Join(work, "gated.bundle"), "report", "example/vpc/aws@1.0.0", "trivy")
	cmd.Env = harness.BaseEnv()
	if o, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(o), "AVD-AWS") {
		t.Errorf("a bundle signed by a key not in the keyring: %v\n%s", err, o)
	}
}

// TestVerifyEvidence: verify says why each entry is in the bundle (which
// only 'export --dry-run --json' told: that example/subnet/aws and
// hashicorp/null came in through the vpc module), that no scanner gate
// ran, and what each provider's plugins were built from, naming the
// plugins without Go build information; its checks line no longer says
// "N Go build information documents read again" when none of them had any,
// and it counts what the "build:" line counts, in its words.
// The why is recorded by export in the signed manifest (format 3).
func TestVerifyEvidence(t *testing.T) {
	t.Parallel()
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	keys := filepath.Join(work, "site")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", keys)
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte(harness.E2EManifest), 0o644)
	b := filepath.Join(work, "site.bundle")
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "airgap.hcl", "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))

	out := harness.MustRunStdout(t, work, "verify", "--keyring", keys+".pub.asc", b)
	t.Logf("verify:\n%s", out)
	for _, want := range []string{
		"gates:     no scanner gate ran",
		"Why they are in the bundle",
		"  airgap.hcl:4\n    provider registry.terraform.io/hashicorp/random 3.6.0, 3.6.2\n  airgap.hcl:8\n",
		"  airgap.hcl:11\n    module registry.terraform.io/example/vpc/aws 1.0.0\n    through registry.terraform.io/example/vpc/aws 1.0.0:\n",
		"      module registry.terraform.io/example/subnet/aws 2.1.0\n",
		"      provider registry.terraform.io/hashicorp/null 3.2.2\n",
		"Build information",
		"  registry.terraform.io/hashicorp/random 3.6.0\n    linux_amd64: go1.",
		"    ! terraform-provider-random_v3.6.0 (darwin_arm64), terraform-provider-random_v3.6.0.exe (windows_amd64): no Go build information found in the plugin binary\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify's review lacks %q", want)
		}
	}
	// The checks line and the "build:" line count the same plugins, and
	// say so the same way.
	if !strings.Contains(out, "build:     4 plugins carry Go build information, 7 do not") ||
		!strings.Contains(out, "11 plugins read again: 4 carry Go build information, 7 do not") {
		t.Errorf("the build line and the checks line disagree or do not say how many plugins have no Go build information")
	}
	var rep struct {
		Format    int `json:"format"`
		Providers []struct {
			Address     string `json:"address"`
			RequestedBy *struct {
				Where string   `json:"where"`
				Via   []string `json:"via"`
			} `json:"requested_by"`
			Build []struct {
				Platforms []string `json:"platforms"`
				None      string   `json:"none"`
				GoVersion string   `json:"go_version"`
				Modules   int      `json:"modules"`
			} `json:"build"`
		} `json:"providers"`
	}
	js := harness.MustRunStdout(t, work, "verify", "--json", "--keyring", keys+".pub.asc", b)
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Format != 3 {
		t.Errorf("the bundle's format is %d, want 3 (requested_by is a format-3 field)", rep.Format)
	}
	for _, p := range rep.Providers {
		if p.Address == "registry.terraform.io/hashicorp/null" {
			if p.RequestedBy == nil || p.RequestedBy.Where != "airgap.hcl:11" || strings.Join(p.RequestedBy.Via, ",") != "registry.terraform.io/example/vpc/aws 1.0.0" {
				t.Errorf("null's requested_by: %+v", p.RequestedBy)
			}
		}
		if p.RequestedBy == nil || len(p.Build) == 0 {
			t.Errorf("%s: requested_by %+v, build %+v", p.Address, p.RequestedBy, p.Build)
		}
	}
}

// TestHostileDeepModule: a registry module whose main.tf nests '[' deeper
// than any parser should recurse. HCL's parser recursed once per level and
// overflowed the Go stack: export died with a fatal error and a goroutine
// dump instead of a refusal. Now export refuses it, naming the module and
// the file, and writes nothing: 300,000 levels (within the token budget,
// dist.MaxHCLTokens) are refused by the nesting check; 4 MiB of '[' is
// refused before any lexing by the token budget (HCL's lexer holds about
// 350 bytes per token: 1.4 GB for that file before the budget, 38 MiB now).
func TestHostileDeepModule(t *testing.T) {
	for _, tc := range []struct {
		name, open, want string
		limit            int64 // KiB of peak memory
	}{
		{"deep", strings.Repeat("[", 300_000), "nested over the depth limit", 256 << 10},
		{"dense", strings.Repeat("[", 4<<20-100), "over the token limit", 128 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := registrytest.New(t)
			loc := in.AddArchive(t, "deep-1.0.0.tar.gz", map[string]string{"main.tf": "locals {\n  a = " + tc.open + "\n}\n"})
			in.AddModule("registry.terraform.io", "example", "deep", "aws", "1.0.0", loc)
			work := t.TempDir()
			os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte("module \"example/deep/aws\" {}\n"), 0o644)
			harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", filepath.Join(work, "site"))
			env := append(harness.BaseEnv(), append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))...)
			out, code := harness.RunBoundedEnv(t, work, env, tc.limit, "export", "--manifest", "airgap.hcl", "--sign-key", "site.key.asc", "--out", "deep.bundle", "--cache", "cache")
			if code != 1 || !strings.Contains(out, tc.want) || !strings.Contains(out, "main.tf") || strings.Contains(out, "goroutine") {
				t.Errorf("export of a module nested %d deep: exit %d\n%.2000s", len(tc.open), code, out)
			}
			if _, err := os.Stat(filepath.Join(work, "deep.bundle")); err == nil {
				t.Error("export left a bundle behind")
			}
		})
	}
}
