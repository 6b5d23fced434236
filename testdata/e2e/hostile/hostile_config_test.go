package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// Finding 5 of issue 11, against the real binary: 'export --from' on a
// malformed lock file is an error at file:line:col (it panicked), and local
// module calls are not followed out of the project — nor out of a
// downloaded module's package.
func TestHostileConfiguration(t *testing.T) {
	t.Parallel()
	in := registrytest.New(t)
	in.AddModule("registry.terraform.io", "evil", "climb", "aws", "1.0.0", in.AddArchive(t, "climb-1.0.0.tar.gz", map[string]string{
		"main.tf": "module \"up\" {\n  source = \"../../../../outside\"\n}\n",
	}))
	top := t.TempDir()
	env := append(in.Env(), "HOME="+top, "TF_CLI_CONFIG_FILE="+filepath.Join(top, "none.tfrc"))
	for name, body := range map[string]string{
		// Would-be victims: configuration outside the project and the cache.
		"outside/main.tf":          "terraform {\n  required_providers {\n    leak = { source = \"evil/leak\" }\n  }\n}\n",
		"lock/main.tf":             "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\" }\n  }\n}\n",
		"lock/.terraform.lock.hcl": "# written by hand\nprovider \"registry.terraform.io/hashicorp/null\" {\n  version = 1\n}\n",
		"escape/main.tf":           "\n\nmodule \"up\" {\n  source = \"../../outside\"\n}\n",
		"escape2/main.tf":          "module \"v\" {\n  source = \"./vendored\"\n}\n",
		"registry.hcl":             "platforms = [\"linux_amd64\"]\nmodule \"evil/climb/aws\" {}\n",
	} {
		bundletest.WriteFile(t, filepath.Join(top, name), []byte(body))
	}
	if err := os.Symlink("../outside", filepath.Join(top, "escape2", "vendored")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"lock file version = 1", []string{"--from", "lock"}, []string{filepath.Join("lock", ".terraform.lock.hcl") + ":3:13: ", "version must be a string"}},
		{"../../ out of the project", []string{"--from", "escape"}, []string{filepath.Join("escape", "main.tf") + ":3: ", `module "up"`, `source "../../outside"`, "outside the project or module package", "hint:"}},
		{"a symlink out of the project", []string{"--from", "escape2"}, []string{filepath.Join("escape2", "main.tf") + ":1: ", `source "./vendored"`, "outside the project or module package", "hint:"}},
		{"a downloaded module climbing out of its package", []string{"--manifest", "registry.hcl", "--sign-key", "k.key.asc", "--out", "b.bundle"},
			[]string{"module registry.terraform.io/evil/climb/aws 1.0.0", "main.tf:1: ", `source "../../../../outside"`, "outside the project or module package"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.args[0] == "--manifest" {
				if _, err := os.Stat(filepath.Join(top, "k.key.asc")); err != nil {
					harness.MustRun(t, top, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k")
				}
			}
			args := append([]string{"export", "--cache", filepath.Join(top, "cache")}, c.args...)
			if c.args[0] == "--from" {
				args = append(args, "--dry-run")
			}
			out, err := harness.CmdRun(t, top, env, harness.Bin, args...)
			if harness.ExitCode(err) != 1 || strings.Contains(out, "panic") || strings.Contains(out, "goroutine") {
				t.Fatalf("exit %d, want 1 and no panic:\n%s", harness.ExitCode(err), out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "leak") {
				t.Errorf("read the configuration outside:\n%s", out)
			}
		})
	}
}
