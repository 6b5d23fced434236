package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
)

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// TestCLIConfigAsTerraformReadsIt: the main file plus ~/.terraform.d/*.tfrc
// and *.tfrc.json (terraform login's credentials.tfrc.json) when
// TF_CLI_CONFIG_FILE is not set, only that file when it is; host blocks
// (relative service URLs resolved as discovery would), credentials, a
// versioned credentials helper (the newest wins), provider_installation
// methods and their patterns.
func TestCLIConfigAsTerraformReadsIt(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TF_CLI_CONFIG_FILE", "")
	t.Setenv("TERRAFORM_CONFIG", "")
	writeFile(t, filepath.Join(home, ".terraformrc"), `
host "registry.terraform.io" {
  services = {
    "providers.v1" = "https://proxy.corp.example/api/tf/v1/providers"
    "modules.v1"   = "/v1/modules/"
    "login.v1"     = {
      client      = "terraform-cli"
      grant_types = ["authz_code"]
      authz       = "https://proxy.corp.example/oauth/authorization"
      token       = "https://proxy.corp.example/oauth/token"
      ports       = [10000, 10010]
    }
  }
}
credentials "proxy.corp.example" {
  token = "main-token"
}
credentials_helper "corp" {
  args = ["--profile", "a b"]
}
provider_installation {
  network_mirror {
    url     = "https://mirror.corp.example/tf"
    include = ["hashicorp/*", "*/*/*"]
    exclude = ["registry.terraform.io/hashicorp/aws"]
  }
  filesystem_mirror {
    path = "/opt/mirror"
  }
  direct {}
}
`, 0o644)
	writeFile(t, filepath.Join(home, ".terraform.d", "credentials.tfrc.json"), `{"credentials": {"app.terraform.io": {"token": "login-token"}}}`, 0o600)
	writeFile(t, filepath.Join(home, ".terraform.d", "extra.tfrc"), "credentials \"Proxy.Corp.Example\" {\n  token = \"dir-token\"\n}\n", 0o644)
	plugins := filepath.Join(home, ".terraform.d", "plugins")
	writeFile(t, filepath.Join(plugins, "terraform-credentials-corp_v1.2.0"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(plugins, runtime.GOOS+"_"+runtime.GOARCH, "terraform-credentials-corp_v1.10.0_x5"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(plugins, "terraform-credentials-corp_v9.0.0"), "not executable", 0o644)

	cfg, err := LoadCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Files) != 3 {
		t.Errorf("files read: %v", cfg.Files)
	}
	hb := cfg.Hosts["registry.terraform.io"]
	if got := hb.Services["providers.v1"].String(); got != "https://proxy.corp.example/api/tf/v1/providers/" {
		t.Errorf("providers.v1 = %s", got)
	}
	if got := hb.Services["modules.v1"].String(); got != "https://registry.terraform.io/v1/modules/" {
		t.Errorf("a relative service URL resolves against the host: %s", got)
	}
	if _, ok := hb.Services["login.v1"]; ok || len(hb.Services) != 2 {
		t.Errorf("an object service (login.v1, single sign-on) is kept: %v", hb.Services)
	}
	if !strings.HasSuffix(hb.At, ".terraformrc:2") {
		t.Errorf("host block at %s", hb.At)
	}
	ctx := context.Background()
	for host, want := range map[string]string{"proxy.corp.example": "dir-token", "app.terraform.io": "login-token"} {
		if got, err := cfg.Credentials.Token(ctx, host); err != nil || got != want {
			t.Errorf("token for %s = %q %v, want %q (later files override, host names compared normalized)", host, got, err, want)
		}
	}
	h := cfg.Credentials.Helper()
	if h == nil || !strings.HasSuffix(h.Path, "terraform-credentials-corp_v1.10.0_x5") || strings.Join(h.Args, "|") != "--profile|a b" {
		t.Errorf("helper: %+v", h)
	}
	ms, err := cfg.Methods("")
	if err != nil || len(ms) != 3 || ms[0].Kind != MethodNetworkMirror || ms[0].URL.String() != "https://mirror.corp.example/tf/" || ms[1].Usable() || !ms[2].Usable() {
		t.Fatalf("methods: %+v %v", ms, err)
	}
	for addr, want := range map[string]bool{"hashicorp/random": true, "hashicorp/aws": false, "example.com/x/y": true} {
		p, _ := dist.ParseProviderSource(addr)
		if got := ms[0].Matches(p); got != want {
			t.Errorf("network_mirror matches %s = %v, want %v", addr, got, want)
		}
	}
	if ms, _ := cfg.Methods("https://m.example/x"); len(ms) != 1 || ms[0].URL.String() != "https://m.example/x/" || ms[0].At != "--provider-mirror" {
		t.Errorf("--provider-mirror: %+v", ms)
	}

	// TF_CLI_CONFIG_FILE: that file only (the config directory is not read).
	rc := filepath.Join(t.TempDir(), "only.tfrc")
	writeFile(t, rc, "credentials \"proxy.corp.example\" {\n  token = \"only\"\n}\n", 0o644)
	t.Setenv("TF_CLI_CONFIG_FILE", rc)
	cfg, err = LoadCLIConfig()
	if err != nil || len(cfg.Files) != 1 {
		t.Fatalf("%v %v", cfg.Files, err)
	}
	if tok, _ := cfg.Credentials.Token(ctx, "app.terraform.io"); tok != "" {
		t.Error("credentials.tfrc.json was read although TF_CLI_CONFIG_FILE names another file")
	}
	// A missing file is no error (Terraform only warns).
	t.Setenv("TF_CLI_CONFIG_FILE", filepath.Join(t.TempDir(), "none.tfrc"))
	if _, err := LoadCLIConfig(); err != nil {
		t.Errorf("a missing CLI config: %v", err)
	}
}

// TestCLIConfigMistakes: each is an error naming the file and line.
func TestCLIConfigMistakes(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for name, c := range map[string]struct{ body, want string }{
		"syntax":           {"host \"x\" {\n  services = {\n}\n", "bad.tfrc:"},
		"two helpers":      {"credentials_helper \"a\" {}\ncredentials_helper \"b\" {}\n", "bad.tfrc:2: a second credentials_helper block"},
		"two installs":     {"provider_installation {\n  direct {}\n}\nprovider_installation {\n  direct {}\n}\n", "bad.tfrc:4: a second provider_installation block"},
		"bad host":         {"host \"not a host\" {\n  services = {}\n}\n", "bad.tfrc:1: host block"},
		"services string":  {"host \"h.example\" {\n  services = \"x\"\n}\n", "services must be a map"},
		"service scheme":   {"host \"h.example\" {\n  services = { \"providers.v1\" = \"ftp://x/\" }\n}\n", "is not an http(s) URL"},
		"service userinfo": {"host \"h.example\" {\n  services = { \"providers.v1\" = \"https://u:p@x/\" }\n}\n", "a URL with credentials in it"},
		"mirror http":      {"provider_installation {\n  network_mirror {\n    url = \"http://m.example/\"\n  }\n}\n", "bad.tfrc:2: network_mirror: mirror URL"},
		"mirror no url":    {"provider_installation {\n  network_mirror {}\n}\n", "url is required"},
		"bad pattern":      {"provider_installation {\n  direct {\n    include = [\"*/aws\"]\n  }\n}\n", "a * namespace needs a * type"},
		"helper name":      {"credentials_helper \"../../bin/sh\" {}\n", "not a plain program name"},
		"helper missing":   {"credentials_helper \"nope\" {}\n", "no executable terraform-credentials-nope"},
		"token type":       {"credentials \"h.example\" {\n  token = 5\n}\n", "token must be a string"},
		"for expression":   {"credentials_helper \"a\" {\n  args = [for a in [1, 2] : [for b in [1, 2] : \"x\"]]\n}\n", "bad.tfrc:2:10: for expression not evaluated"},
	} {
		t.Run(name, func(t *testing.T) {
			rc := filepath.Join(t.TempDir(), "bad.tfrc")
			writeFile(t, rc, c.body, 0o644)
			t.Setenv("TF_CLI_CONFIG_FILE", rc)
			_, err := LoadCLIConfig()
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrCLIConfig) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestHostBlockToken: a host block's services get the host's token (over
// https only), and their answers must keep to the block's origins.
func TestHostBlockToken(t *testing.T) {
	c := New(Options{Credentials: Credentials{fromConfig: map[string]string{"registry.terraform.io": "T"}}})
	pu, _ := url.Parse("https://proxy.example:8443/api/v1/providers/")
	c.UseHostBlock("registry.terraform.io", HostBlock{Services: map[string]*url.URL{"providers.v1": pu}, At: "rc:3"})
	ctx := context.Background()
	for u, want := range map[string]string{
		"https://proxy.example:8443/api/v1/providers/x": "T",
		"https://registry.terraform.io/x":               "T",
		"https://proxy.example/x":                       "", // another port
		"http://proxy.example:8443/x":                   "", // never over http
		"https://evil.example/x":                        "",
	} {
		pu, _ := url.Parse(u)
		if got, _ := c.tokenFor(ctx, pu, "registry.terraform.io"); got != want {
			t.Errorf("token for %s = %q, want %q", u, got, want)
		}
	}
	if err := c.CheckProxied("registry.terraform.io", "x", "https://proxy.example:8443/dl/a.zip"); err != nil {
		t.Error(err)
	}
	for _, u := range []string{"https://releases.hashicorp.com/a.zip", "https://proxy.example/a.zip", "git::https://github.com/a/b?ref=v1", "git@github.com:a/b.git", "github.com/a/b"} {
		err := c.CheckProxied("registry.terraform.io", "provider x", u)
		if !errors.Is(err, ErrForeignURL) || !strings.Contains(err.Error(), "host block at rc:3") {
			t.Errorf("%s: %v", u, err)
		}
	}
	if err := c.CheckProxied("registry.opentofu.org", "x", "https://anywhere.example/a.zip"); err != nil {
		t.Errorf("a host without a host block is not a proxy: %v", err)
	}

	// Hosts the user allows besides the proxy: by name (any port) or
	// HOST:PORT (that port only), whatever the case; once per host, the
	// Notice says so. No other host is let through.
	var notices []string
	c.Notice = func(f string, a ...any) { notices = append(notices, fmt.Sprintf(f, a...)) }
	c.AllowDownloadHosts("GitHub.com", "git.example:8443")
	for u, ok := range map[string]bool{
		"git::https://github.com/a/b?ref=v1": true, "git@github.com:a/b.git": true, "https://GITHUB.COM:444/a.tgz": true,
		"https://git.example:8443/a.tgz": true, "https://git.example/a.tgz": false, "https://evil.github.com/a": false,
		"https://github.com.evil.example/a": false,
	} {
		if err := c.CheckProxied("registry.terraform.io", "module x", u); (err == nil) != ok {
			t.Errorf("%s with github.com and git.example:8443 allowed: %v", u, err)
		}
	}
	if len(notices) != 2 || !strings.Contains(notices[0]+notices[1], "allowed by --allow-download-host github.com") {
		t.Errorf("notices: %q", notices)
	}
	for h, ok := range map[string]bool{"github.com": true, "git.example:8443": true, "10.0.0.1": true, "[::1]:443": true,
		"": false, "https://github.com": false, "*.github.com": false, "github.com/x": false, "u@github.com": false,
		"github.com:0": false, "github.com:65536": false, "git hub.com": false, "github.com\n": false} {
		if err := CheckDownloadHost(h); (err == nil) != ok {
			t.Errorf("CheckDownloadHost(%q): %v", h, err)
		}
	}
}

// TestMirrorAnswers: a network mirror's answers are read as Terraform reads
// them and refused when hostile.
func TestMirrorAnswers(t *testing.T) {
	var doc, ctype string
	hs := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write([]byte(doc))
	})
	c := testClient(hs.srv.Client().Transport)
	base, _ := url.Parse(hs.srv.URL + "/m/")
	p := dist.Provider{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random"}
	ctx := context.Background()
	h1 := "h1:" + strings.Repeat("A", 43) + "="
	zh := "zh:" + strings.Repeat("a", 64)
	ctype, doc = "application/json", `{"versions":{"3.6.2":{},"3.6.0+evil":{},"v3.7.0":{}}}`
	if vs, err := c.MirrorVersions(ctx, base, p); err != nil || strings.Join(vs, " ") != "3.6.2 3.7.0" {
		t.Errorf("versions: %v %v", vs, err)
	}
	doc = `{"archives":{"linux_amd64":{"url":"../f/a.zip","hashes":["` + h1 + `","` + zh + `","h9:x"]}}}`
	as, err := c.MirrorArchives(ctx, base, p, "3.6.2")
	if err != nil || as["linux_amd64"].URL != hs.srv.URL+"/m/registry.terraform.io/hashicorp/f/a.zip" || len(as["linux_amd64"].Hashes) != 2 {
		t.Errorf("archives: %+v %v", as, err)
	}
	for name, c2 := range map[string]struct{ ctype, doc, want string }{
		"html":           {"text/html", `<html>login</html>`, "want application/json"},
		"foreign url":    {"application/json", `{"archives":{"linux_amd64":{"url":"https://evil.example/a.zip","hashes":[]}}}`, "gave \"https://evil.example/a.zip\""},
		"bad platform":   {"application/json", `{"archives":{"linux":{"url":"a.zip"}}}`, "not os_arch"},
		"control chars":  {"application/json", `{"archives":{"linux_amd64":{"url":"a\u001b[31m.zip"}}}`, "control characters"},
		"too many":       {"application/json", `{"archives":{"linux_amd64":{"url":"a.zip","hashes":[` + strings.Repeat(`"x",`, 20) + `"x"]}}}`, "hashes (at most"},
		"not json":       {"application/json", `{"archives":`, "invalid JSON"},
		"oversized body": {"application/json", `{"archives":{},"x":"` + strings.Repeat("a", MaxAPIDocumentSize) + `"}`, "too large"},
	} {
		ctype, doc = c2.ctype, c2.doc
		if _, err := c.MirrorArchives(ctx, base, p, "3.6.2"); err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%s: %v, want %q", name, err, c2.want)
		}
	}
	if _, err := c.MirrorVersions(ctx, base, dist.Provider{Host: "h.example:8443", Namespace: "a", Type: "b"}); err == nil || !strings.Contains(err.Error(), "port") {
		t.Errorf("a host with a port: %v", err)
	}
}
