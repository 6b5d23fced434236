package registry

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzHelperOutput: whatever a credentials helper prints gives a token that
// can go into a header as it is (or none), or an error — never a panic.
func FuzzHelperOutput(f *testing.F) {
	for _, s := range []string{`{"token":"abc"}`, `{}`, `{"token":5}`, `{"token":"a\nb"}`, "token=x", `[1]`, `null`, `{"token":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		tok, err := parseHelperOutput("h", out)
		if err != nil {
			return
		}
		for i := 0; i < len(tok); i++ {
			if tok[i] <= ' ' || tok[i] >= 0x7f {
				t.Fatalf("token %q accepted", tok)
			}
		}
	})
}

// FuzzMirrorArchives: a mirror's version document gives archives on the
// mirror's own origin with well-formed hashes only, or an error.
func FuzzMirrorArchives(f *testing.F) {
	f.Add([]byte(`{"archives":{"linux_amd64":{"url":"../f/a.zip","hashes":["zh:` + strings.Repeat("a", 64) + `"]}}}`))
	f.Add([]byte(`{"archives":{"linux_amd64":{"url":"//evil.example/a.zip"}}}`))
	f.Add([]byte(`{"archives":{"linux_amd64":{"url":"https://m.example:443/a.zip"}}}`))
	base, _ := url.Parse("https://m.example/mirror/")
	final, _ := url.Parse("https://m.example/mirror/registry.terraform.io/h/x/1.0.0.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc mirrorVersionDoc
		if json.Unmarshal(data, &doc) != nil {
			return
		}
		as, err := doc.archives(base, final, "x")
		if err != nil {
			return
		}
		for plat, a := range as {
			u, err := url.Parse(a.URL)
			if err != nil || origin(u.Scheme, u.Host) != "https://m.example:443" || !strings.Contains(plat, "_") {
				t.Fatalf("%s: %q accepted", plat, a.URL)
			}
			for _, h := range a.Hashes {
				if !reMirrorH1.MatchString(h) && !reMirrorZH.MatchString(h) {
					t.Fatalf("hash %q accepted", h)
				}
			}
		}
	})
}

// FuzzCLIConfig: any CLI configuration text is read or refused, never a
// panic; a host block's services are absolute http(s) URLs ending in "/".
func FuzzCLIConfig(f *testing.F) {
	f.Add([]byte("host \"h.example\" {\n  services = { \"providers.v1\" = \"/p\" }\n}\ncredentials \"h.example\" {\n  token = \"x\"\n}\n"))
	f.Add([]byte("provider_installation {\n  network_mirror {\n    url = \"https://m.example/\"\n    include = [\"*/*\"]\n  }\n  direct {}\n}\n"))
	f.Add([]byte("credentials_helper \"x\" {\n  args = [\"a\"]\n}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg := &CLIConfig{Credentials: Credentials{fromConfig: map[string]string{}}, Hosts: map[string]HostBlock{}}
		if _, err := cfg.readFile(filepath.Join(dir, "c.tfrc"), src); err != nil {
			return
		}
		for _, hb := range cfg.Hosts {
			for _, u := range hb.Services {
				if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(u.Path, "/") || u.User != nil {
					t.Fatalf("service %s accepted", u)
				}
			}
		}
		if cfg.Installation != nil {
			for _, m := range cfg.Installation.Methods {
				if m.Kind == MethodNetworkMirror && (m.URL == nil || m.URL.Scheme != "https") {
					t.Fatalf("mirror %v accepted", m.URL)
				}
			}
		}
	})
}
