package journey

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// constProject's module sources and versions come from const variables and
// locals (Terraform 1.15; OpenTofu evaluates them too): a version from
// -var, a source built in a local, a local module picked by a variable
// with a default and its own registry call's version passed in by the
// caller, and a version from terraform.tfvars. Addresses name their hosts,
// so that both clients mean the same modules, and all are on
// registry.terraform.io (Terraform cannot use registry.opentofu.org's
// module answers online).
var constProject = map[string]string{
	"main.tf": `variable "env" {
  type    = string
  const   = true
  default = "dev"
}

variable "sub_version" {
  type  = string
  const = true
}

variable "old_version" {
  type  = string
  const = true
}

locals {
  registry = "registry.terraform.io"
  sub      = "${local.registry}/example/sub/aws"
}

module "sub" {
  source  = local.sub
  version = var.sub_version
}

module "app" {
  source         = "./modules/${var.env}"
  subnet_version = "~> 2.0"
}

module "old" {
  source  = "${local.registry}/example/subnet/aws"
  version = var.old_version
}
`,
	"terraform.tfvars": "old_version = \"1.0.0\"\n",
	"modules/dev/main.tf": `variable "subnet_version" {
  type  = string
  const = true
}

module "subnet" {
  source  = "registry.terraform.io/example/subnet/aws"
  version = var.subnet_version
}
`,
	"modules/prod/main.tf": `module "never" {
  source = "registry.terraform.io/example/vpc/aws"
}
`,
}

// TestConstModuleSourcesJourney: 'airgap export --from' a project whose
// module sources and versions are const expressions exports exactly the
// modules the clients will ask for; offline, terraform 1.15.9 and tofu
// 1.12.6 install the project from the appliance with the same -var, and
// their modules are those they install online. Without the value export
// fails the way terraform does, at the line, naming the variable.
func TestConstModuleSourcesJourney(t *testing.T) {
	t.Parallel()
	clients := []harness.MatrixClient{
		{Tool: "terraform", Version: harness.TerraformNewVersion, Bin: harness.TerraformNewBin(t)},
		{Tool: "tofu", Version: harness.TofuNewVersion, Bin: harness.TofuBinVersion(t, harness.TofuNewVersion)},
	}
	in := registrytest.World(t)
	work := t.TempDir()
	project := filepath.Join(work, "project")
	for name, body := range constProject {
		os.MkdirAll(filepath.Dir(filepath.Join(project, name)), 0o755)
		os.WriteFile(filepath.Join(project, name), []byte(body), 0o644)
	}
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.rc"), "SOURCE_DATE_EPOCH=1767225600")

	// Without sub_version, export refuses as terraform init would.
	out, err := harness.CmdRun(t, work, online, harness.Bin, "export", "--from", project, "--dry-run", "--cache", filepath.Join(work, "cache"))
	for _, want := range []string{`main.tf:24:13: module "sub": version = var.sub_version: not known at init: var.sub_version has no value`, "hint: give the variable a value as for terraform init"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("export without -var (err %v) lacks %q:\n%s", err, want, out)
		}
	}
	for _, c := range clients {
		if out, err := harness.CmdRun(t, project, online, c.Bin, "init", "-input=false", "-no-color", "-backend=false"); err == nil || !strings.Contains(out, `"sub_version"`) {
			t.Errorf("%s init without -var (err %v):\n%s", c, err, out)
		}
		os.RemoveAll(filepath.Join(project, ".terraform"))
	}

	// With it (terraform's single-dash spelling works too), export
	// carries exactly the evaluated modules.
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	b := filepath.Join(work, "const.bundle")
	out, stderr, code := harness.RunSplit(t, work, online, "export", "--from", project, "-var", "sub_version=2.0.0", "--sign-key", "k/site.key.asc", "--out", b, "--cache", filepath.Join(work, "cache"), "--json")
	if code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, stderr, out)
	}
	var sum struct {
		Plan []struct {
			Kind, Address, Version string
		} `json:"plan"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("export --json: %v\n%s", err, out)
	}
	var planned []string
	for _, p := range sum.Plan {
		planned = append(planned, p.Address+" "+p.Version)
	}
	sort.Strings(planned)
	if want := "registry.terraform.io/example/sub/aws 2.0.0|registry.terraform.io/example/subnet/aws 1.0.0|registry.terraform.io/example/subnet/aws 2.1.0"; strings.Join(planned, "|") != want || len(sum.Warnings) != 0 {
		t.Errorf("exported %s (warnings %v), want %s", strings.Join(planned, "|"), sum.Warnings, want)
	}
	store := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store, b)
	srv := harness.StartServe(t, store)
	base, caFile := srv.Base, srv.CAFile

	for _, c := range clients {
		t.Run(c.String(), func(t *testing.T) {
			want := constModules(t, c, project, online)
			rc := filepath.Join(t.TempDir(), "client.rc")
			os.WriteFile(rc, []byte(harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base, "--tool", c.Tool)), 0o644)
			offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
				"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
			if got := constModules(t, c, project, offline); got != want {
				t.Errorf("offline %s installed\n%s\nonline\n%s", c, got, want)
			}
		})
	}
}

// constModules runs 'init -var sub_version=2.0.0' on a copy of project and
// returns the modules it installed (key, source, version), one a line.
func constModules(t *testing.T, c harness.MatrixClient, project string, env []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	harness.CopyTree(t, project, dir)
	harness.MustRun(t, dir, env, c.Bin, "init", "-input=false", "-no-color", "-backend=false", "-var", "sub_version=2.0.0")
	b, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "modules.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mods struct {
		Modules []struct{ Key, Source, Version string }
	}
	if err := json.Unmarshal(b, &mods); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range mods.Modules {
		if m.Key != "" {
			out = append(out, m.Key+" "+m.Source+" "+m.Version)
		}
	}
	sort.Strings(out)
	if len(out) != 4 {
		t.Errorf("%s installed %d modules, want sub, app, app.subnet and old:\n%s", c, len(out), b)
	}
	return strings.Join(out, "\n")
}
