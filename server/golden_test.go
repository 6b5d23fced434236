package server_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenResponses pins the exact JSON clients receive for each protocol
// document (the test server's address is replaced by APPLIANCE, and key
// material and digests, which differ per run, by placeholders).
func TestGoldenResponses(t *testing.T) {
	e := setup(t)
	cases := map[string]string{
		"discovery":         "/.well-known/terraform.json",
		"origin-discovery":  "/origin/registry.terraform.io/.well-known/terraform.json",
		"provider-versions": "/v1/providers/hashicorp/random/versions",
		"provider-download": "/origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.0/download/linux/amd64",
		"module-versions":   "/v1/modules/example/vpc/aws/versions",
		"module-download":   "/v1/modules/example/vpc/aws/1.0.0/download",
		"mirror-index":      "/mirror/registry.terraform.io/hashicorp/random/index.json",
		"mirror-version":    "/mirror/registry.terraform.io/hashicorp/random/3.6.0.json",
		"not-found":         "/v1/providers/hashicorp/nope/versions",
	}
	repl := []string{e.ts.URL, "https://APPLIANCE"}
	for _, p := range e.set.Catalog.Providers {
		repl = append(repl, p.Shasums.Hex(), "SHASUMS-DIGEST", p.ShasumsSig.Hex(), "SIG-DIGEST")
		for _, pk := range p.Packages {
			repl = append(repl, pk.Digest.Hex(), "ZIP-"+pk.Platform(), pk.H1, "H1-"+pk.Platform())
		}
		for _, k := range p.SigningKeys {
			repl = append(repl, k.KeyID, "KEYID")
			b, _ := json.Marshal(k.ASCIIArmor)
			repl = append(repl, strings.Trim(string(b), `"`), "ARMOR")
		}
	}
	for _, m := range e.set.Catalog.Modules {
		repl = append(repl, m.Archive.Hex(), "ARCHIVE")
	}
	r := strings.NewReplacer(repl...)
	for name, path := range cases {
		resp, body := e.get(t, path)
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, body, "", "  "); err != nil {
			t.Fatalf("%s: not JSON: %s", name, body)
		}
		got := r.Replace(resp.Status+" "+resp.Header.Get("Content-Type")+" X-Terraform-Get="+resp.Header.Get("X-Terraform-Get")+"\n"+pretty.String()) + "\n"
		file := filepath.Join("testdata", "golden", name+".json")
		if *update {
			os.MkdirAll(filepath.Dir(file), 0o755)
			os.WriteFile(file, []byte(got), 0o644)
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./server -run Golden -update)", name, err)
		}
		if got != string(want) {
			t.Errorf("%s: response differs from %s:\n%s", name, file, got)
		}
	}
}
