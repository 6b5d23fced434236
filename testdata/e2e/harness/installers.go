package harness

import "testing"

// The installer libraries the CLI release tests drive, built from their Go
// modules into the test cache once, each as a small program around the
// library's own install call.
const (
	HCInstallVersion = "0.10.0"
	TofuDLVersion    = "0.0.1"
)

// hcInstallMain installs terraform VERSION into DIR with hashicorp/hc-install
// from the releases at BASE (ApiBaseURL), its SHA256SUMS signature checked
// against the armored key in KEYFILE, and prints the binary's path.
const hcInstallMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hc-install/product"
	"github.com/hashicorp/hc-install/releases"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: hc-install BASE KEYFILE VERSION DIR")
		os.Exit(2)
	}
	key, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ev := &releases.ExactVersion{Product: product.Terraform, Version: version.Must(version.NewVersion(os.Args[3])),
		ApiBaseURL: os.Args[1], ArmoredPublicKey: string(key), InstallDir: os.Args[4]}
	p, err := ev.Install(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "hc-install:", err)
		os.Exit(1)
	}
	fmt.Println(p)
}
`

// tofuDLMain downloads tofu VERSION with opentofu/tofudl from the mirror at
// BASE (api.json and vVERSION/ARTIFACT), the SHA256SUMS signature checked
// against the armored key in KEYFILE, and writes the binary to OUT.
const tofuDLMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/opentofu/tofudl"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: tofudl BASE KEYFILE VERSION OUT")
		os.Exit(2)
	}
	key, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	base := os.Args[1]
	dl, err := tofudl.New(tofudl.ConfigAPIURL(base+"/api.json"), tofudl.ConfigDownloadMirrorURLTemplate(base+"/v{{ .Version }}/{{ .Artifact }}"), tofudl.ConfigGPGKey(string(key)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tofudl:", err)
		os.Exit(1)
	}
	bin, err := dl.Download(context.Background(), tofudl.DownloadOptVersion(tofudl.Version(os.Args[3])))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tofudl:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[4], bin, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// HCInstallBin is a program around hashicorp/hc-install (hcInstallMain).
func HCInstallBin(t *testing.T) string {
	t.Helper()
	bin, errText := BuildFromModule("github.com/hashicorp/hc-install", HCInstallVersion, ".", "hc-install-"+HCInstallVersion, hcInstallMain)
	if errText != "" {
		t.Fatalf("hc-install %s is required by the CLI release tests and could not be built: %s", HCInstallVersion, errText)
	}
	return bin
}

// TofuDLBin is a program around opentofu/tofudl (tofuDLMain).
func TofuDLBin(t *testing.T) string {
	t.Helper()
	bin, errText := BuildFromModule("github.com/opentofu/tofudl", TofuDLVersion, ".", "tofudl-"+TofuDLVersion, tofuDLMain)
	if errText != "" {
		t.Fatalf("tofudl %s is required by the CLI release tests and could not be built: %s", TofuDLVersion, errText)
	}
	return bin
}
