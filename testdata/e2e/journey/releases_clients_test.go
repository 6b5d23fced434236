package journey

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// servedReleases exports, imports and serves the release manifest; it
// returns the journey, the appliance and the offline environment a
// consumer runs in (the appliance's CA trusted by Go and curl, every
// proxy pointing nowhere, so that nothing but the appliance is reached).
func servedReleases(t *testing.T) (*releaseJourney, *harness.Served, []string) {
	t.Helper()
	j := newReleaseJourney(t)
	j.exportVerifyImport(t)
	s := harness.StartServe(t, j.store)
	env := append(harness.BaseEnv(), "SSL_CERT_FILE="+s.CAFile, "CURL_CA_BUNDLE="+s.CAFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "http_proxy=http://127.0.0.1:9",
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1")
	return j, s, env
}

// runsVersion runs bin version and wants its first line.
func runsVersion(t *testing.T, bin, want string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), want+"\n") {
		t.Errorf("%s version: %v\n%s\nwant %q", bin, err, out, want)
	}
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestReleasesServedLayouts: the appliance answers the publishers'
// layouts under /releases/ with the types the consumers demand, GET and
// HEAD, and the bytes it serves are the publisher's.
func TestReleasesServedLayouts(t *testing.T) {
	t.Parallel()
	j, s, _ := servedReleases(t)
	cl := harness.CAFileClient(t, s.CAFile)
	base := s.Base + "releases/"
	get := func(path, wantType string) []byte {
		t.Helper()
		for _, method := range []string{"HEAD", "GET"} {
			req, _ := http.NewRequest(method, base+path, nil)
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != wantType {
				t.Errorf("%s %s: %d %q, want 200 %q\n%s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), wantType, body.String())
			}
			if method == "GET" {
				return body.Bytes()
			}
		}
		return nil
	}
	list := string(get("terraform/", "text/html; charset=utf-8"))
	for _, v := range []string{"1.14.2", "1.14.3"} {
		if !strings.Contains(list, `<a href="/releases/terraform/`+v+`/">terraform_`+v+`</a>`) {
			t.Errorf("the HTML list lacks terraform_%s:\n%s", v, list)
		}
	}
	if strings.Contains(list, "1.13.5") || strings.Contains(list, "1.14.0") {
		t.Errorf("the HTML list names releases the store does not hold:\n%s", list)
	}
	var idx struct {
		Versions map[string]struct {
			Builds []struct{ OS, Arch, Filename, URL string }
		}
	}
	if err := json.Unmarshal(get("terraform/index.json", "application/json"), &idx); err != nil || len(idx.Versions) != 2 {
		t.Fatalf("index.json: %v %+v", err, idx)
	}
	var one struct {
		Version string
		Builds  []struct{ OS, Arch, Filename, URL string }
	}
	json.Unmarshal(get("terraform/1.14.3/index.json", "application/json"), &one)
	if one.Version != "1.14.3" || len(one.Builds) != 2 {
		t.Fatalf("1.14.3/index.json: %+v", one)
	}
	for _, b := range one.Builds {
		if want := base + "terraform/1.14.3/" + b.Filename; b.URL != want {
			t.Errorf("build URL %s, want %s (on the appliance)", b.URL, want)
		}
		zip := get("terraform/1.14.3/"+b.Filename, "application/zip")
		orig, _ := os.ReadFile(filepath.Join(j.in.Dir, "cli", "terraform", "1.14.3", b.Filename))
		if !bytes.Equal(zip, orig) {
			t.Errorf("%s: the appliance serves other bytes than the publisher's", b.Filename)
		}
	}
	for _, f := range []string{"terraform_1.14.3_SHA256SUMS.sig", "terraform_1.14.3_SHA256SUMS.72D7468F.sig"} {
		orig, _ := os.ReadFile(filepath.Join(j.in.Dir, "cli", "terraform", "1.14.3", f))
		if got := get("terraform/1.14.3/"+f, "application/octet-stream"); !bytes.Equal(got, orig) {
			t.Errorf("%s differs from the publisher's", f)
		}
	}
	get("terraform/1.14.3/terraform_1.14.3_SHA256SUMS", "text/plain; charset=utf-8")
	var api struct {
		Versions []struct {
			ID    string   `json:"id"`
			Files []string `json:"files"`
		} `json:"versions"`
	}
	json.Unmarshal(get("tofu/api.json", "application/json"), &api)
	if len(api.Versions) != 1 || api.Versions[0].ID != "1.11.2" || !strings.Contains(strings.Join(api.Versions[0].Files, " "), "tofu_1.11.2_linux_amd64.zip") {
		t.Errorf("api.json: %+v", api)
	}
	get("tofu/v1.11.2/tofu_1.11.2_linux_amd64.zip", "application/zip")
	get("tofu/v1.11.2/tofu_1.11.2_SHA256SUMS.gpgsig", "application/octet-stream")
	if key := string(get("terraform/publisher-key.asc", "application/pgp-keys")); !strings.Contains(key, "BEGIN PGP PUBLIC KEY BLOCK") {
		t.Errorf("publisher-key.asc: %s", key)
	}
	get("tofu/publisher-key.asc", "application/pgp-keys")
	req, _ := http.NewRequest("GET", base+"terraform/1.14.3/index.json", nil)
	req.Host = "bad_host.example"
	if resp, err := cl.Do(req); err != nil || resp.StatusCode != 404 {
		t.Errorf("a Host that is not a host name: %v %v, want 404 (the builds' URLs would name it)", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, p := range []string{"terraform/1.14.0/index.json", "tofu/v1.11.2/tofu_1.11.2_darwin_arm64.zip", "packer/index.json", "terraform/1.14.3/terraform_1.14.3_windows_amd64.zip", "tofu/1.11.2/tofu_1.11.2_linux_amd64.zip"} {
		resp, _ := harness.HTTPGet(t, cl, base+p)
		if resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestReleasesCatalogAndAccess: the catalog's releases page lists what
// the store holds with its signer, and with an access file /releases/ and
// the page need a token like every catalog path.
func TestReleasesCatalogAndAccess(t *testing.T) {
	t.Parallel()
	j := newReleaseJourney(t)
	j.exportVerifyImport(t)
	access := filepath.Join(t.TempDir(), "access.hcl")
	tok := harness.CreateToken(t, access, "ci", "**")
	s := harness.StartServe(t, j.store, "--access", access)
	cl := harness.CAFileClient(t, s.CAFile)
	for _, p := range []string{"releases/terraform/index.json", "releases/tofu/api.json", "releases/terraform/1.14.3/terraform_1.14.3_linux_amd64.zip", "ui/releases"} {
		if resp, _ := harness.HTTPGet(t, cl, s.Base+p); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /%s without a token: %d, want 401", p, resp.StatusCode)
		}
		if resp, _ := harness.HTTPGet(t, cl, s.Base+p, "Authorization", "Bearer "+tok); resp.StatusCode != 200 {
			t.Errorf("GET /%s with a token: %d, want 200", p, resp.StatusCode)
		}
	}
	_, page := harness.HTTPGet(t, cl, s.Base+"ui/releases", "Authorization", "Bearer "+tok)
	fp := verify.GroupFingerprint(verify.Fingerprint(j.rel.HashiCorp))
	for _, want := range []string{"terraform 1.14.3", "tofu 1.11.2", fp, `href="/releases/terraform/1.14.3/terraform_1.14.3_linux_amd64.zip"`,
		`href="/releases/tofu/v1.11.2/tofu_1.11.2_SHA256SUMS.gpgsig"`, "pinned by the export manifest"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the releases page lacks %q:\n%s", want, page)
		}
	}
	if _, index := harness.HTTPGet(t, cl, s.Base, "Authorization", "Bearer "+tok); !strings.Contains(string(index), `href="/ui/releases"`) {
		t.Errorf("the catalog does not link its releases page")
	}
}

// TestReleasesTfenv: tfenv installs terraform from the appliance
// (TFENV_REMOTE), its signature checked by gpgv against the stand-in key,
// and the installed binary runs.
func TestReleasesTfenv(t *testing.T) {
	t.Parallel()
	j, s, env := servedReleases(t)
	tfenv := harness.TfenvCopy(t)
	conf := t.TempDir()
	var kr bytes.Buffer
	if err := j.rel.HashiCorp.Serialize(&kr); err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(conf, "hashicorp.gpg")
	os.WriteFile(keyring, kr.Bytes(), 0o644)
	os.WriteFile(filepath.Join(conf, "use-gpgv"), []byte("binary: gpgv --keyring "+keyring+"\n"), 0o644)
	env = append(env, "TFENV_REMOTE="+s.Base+"releases", "TFENV_CONFIG_DIR="+conf, "HOME="+conf)
	list := runIn(t, conf, env, tfenv, "list-remote")
	if !strings.Contains(list, "1.14.3") || !strings.Contains(list, "1.14.2") {
		t.Errorf("tfenv list-remote:\n%s", list)
	}
	out := runIn(t, conf, env, tfenv, "install", "1.14.3")
	t.Logf("tfenv install:\n%s", out)
	runsVersion(t, filepath.Join(conf, "versions", "1.14.3", "terraform"), "Terraform v1.14.3")
}

// TestReleasesTfswitch: tfswitch installs terraform and tofu from the
// appliance (--mirror, --mirror-download), and they run.
func TestReleasesTfswitch(t *testing.T) {
	t.Parallel()
	j, s, env := servedReleases(t)
	tfswitch := harness.TfswitchBin(t)
	home := t.TempDir()
	env = append(env, "HOME="+home)
	// tfswitch 1.19 fetches HashiCorp's key from www.hashicorp.com (or
	// keybase.io) on every install, with no setting to point it elsewhere:
	// offline, the site's proxy answers that one URL with the key the
	// appliance hands out (docs/cli-releases.md). The stand-in internet
	// plays that proxy here; everything else goes to the appliance
	// (NO_PROXY), and the zips are counted there.
	cl := harness.CAFileClient(t, s.CAFile)
	_, key := harness.HTTPGet(t, cl, s.Base+"releases/terraform/publisher-key.asc")
	j.in.Handle(registrytest.HashiCorpWWWHost+"/.well-known/pgp-key.txt", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(key) }))
	cas := filepath.Join(home, "cas.pem")
	a, _ := os.ReadFile(s.CAFile)
	b, _ := os.ReadFile(j.in.CAFile)
	os.WriteFile(cas, append(append(a, '\n'), b...), 0o644)
	env = append(env, registrytest.ProxyEnv(j.in.Proxy.URL)...)
	env = append(env, "SSL_CERT_FILE="+cas)
	bin := filepath.Join(home, "bin", "terraform")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	out := runIn(t, home, env, tfswitch, "--mirror", s.Base+"releases/terraform/index.json", "--mirror-download", s.Base+"releases/terraform",
		"--bin", bin, "--install", home, "--log-level", "INFO", "1.14.3")
	t.Logf("tfswitch:\n%s", out)
	runsVersion(t, bin, "Terraform v1.14.3")

	_, tofuKey := harness.HTTPGet(t, cl, s.Base+"releases/tofu/publisher-key.asc")
	j.in.Handle(registrytest.TofuGetHost+"/opentofu.asc", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(tofuKey) }))
	tofu := filepath.Join(home, "bin", "tofu")
	out = runIn(t, home, env, tfswitch, "--product", "opentofu", "--mirror", s.Base+"releases/tofu/api.json", "--mirror-download", s.Base+"releases/tofu",
		"--bin", tofu, "--install", home, "--log-level", "INFO", "1.11.2")
	t.Logf("tfswitch --product opentofu:\n%s", out)
	runsVersion(t, tofu, "OpenTofu v1.11.2")
	for _, zip := range []string{"terraform_1.14.3_linux_amd64.zip", "tofu_1.11.2_linux_amd64.zip"} {
		if n := j.in.Downloaded(zip); n != 1 {
			t.Errorf("%s was fetched %d times from the stand-in internet, want once (by export): the consumer must get it from the appliance", zip, n)
		}
	}
}

// TestReleasesTenv: with the settings 'airgap client-config --releases'
// prints, sourced as they are, tenv installs terraform (TFENV_REMOTE) and
// tofu (its mirror settings) from the appliance, checking their signatures
// against the publisher keys the appliance hands out, and they run.
func TestReleasesTenv(t *testing.T) {
	t.Parallel()
	_, s, env := servedReleases(t)
	tenv := harness.TenvBin(t)
	root := t.TempDir()
	script := harness.MustRun(t, root, []string{"SSL_CERT_FILE=" + s.CAFile}, harness.Bin, "client-config", "--url", s.Base, "--releases")
	os.WriteFile(filepath.Join(root, "airgap-releases.sh"), []byte(script), 0o644)
	env = append(env, "HOME="+root, "TENV_ROOT="+filepath.Join(root, "tenv"), "TENV_LOG=info", "TENV="+tenv)
	out := runIn(t, root, env, "sh", "-ec", `. ./airgap-releases.sh; "$TENV" tf install 1.14.3; "$TENV" tofu install 1.11.2`)
	t.Logf("tenv:\n%s", out)
	for _, want := range []string{"terraform_1.14.3_SHA256SUMS.sig", "tofu_1.11.2_SHA256SUMS.gpgsig"} {
		if !strings.Contains(out, want) {
			t.Errorf("tenv did not fetch %s (its signature check):\n%s", want, out)
		}
	}
	runsVersion(t, filepath.Join(root, "tenv", "Terraform", "1.14.3", "terraform"), "Terraform v1.14.3")
	runsVersion(t, filepath.Join(root, "tenv", "OpenTofu", "1.11.2", "tofu"), "OpenTofu v1.11.2")
	// Signatures on: with the other publisher's key, tenv refuses.
	if out, err := runMaybe(root, env, "sh", "-ec", `. ./airgap-releases.sh; export TFENV_HASHICORP_PGP_KEY="$AIRGAP_KEYS/tofu-publisher.asc"; "$TENV" tf install 1.14.2`); err == nil {
		t.Errorf("tenv installed terraform with the wrong publisher key:\n%s", out)
	}
}

// TestReleasesInstallerLibraries: hashicorp/hc-install (ApiBaseURL) and
// opentofu/tofudl (API URL and mirror URL template), built from their Go
// modules, install from the appliance with their signature checks on, and
// the binaries run.
func TestReleasesInstallerLibraries(t *testing.T) {
	t.Parallel()
	hc, tofudl := harness.HCInstallBin(t), harness.TofuDLBin(t)
	j, s, env := servedReleases(t)
	dir := t.TempDir()
	out := strings.TrimSpace(runIn(t, dir, env, hc, s.Base+"releases", j.rel.HashiCorpKey, "1.14.2", dir))
	runsVersion(t, out, "Terraform v1.14.2")
	tofu := filepath.Join(dir, "tofu")
	runIn(t, dir, env, tofudl, s.Base+"releases/tofu", j.rel.OpenTofuKey, "1.11.2", tofu)
	runsVersion(t, tofu, "OpenTofu v1.11.2")
	// Signatures on: with the other publisher's key, both refuse.
	if _, err := runMaybe(dir, env, hc, s.Base+"releases", j.rel.OpenTofuKey, "1.14.3", t.TempDir()); err == nil {
		t.Errorf("hc-install installed terraform with the wrong publisher key")
	}
	if _, err := runMaybe(dir, env, tofudl, s.Base+"releases/tofu", j.rel.HashiCorpKey, "1.11.2", filepath.Join(t.TempDir(), "tofu")); err == nil {
		t.Errorf("tofudl downloaded tofu with the wrong publisher key")
	}
}

func runMaybe(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
