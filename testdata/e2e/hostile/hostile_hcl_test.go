package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// denseRSSLimit is the peak resident memory, in KiB, an export of hostile
// modules may reach: the binary's own (about 35 MiB), the parse of the
// files being parsed at once (dist.MaxHCLTokensParsing tokens: 150-230 MiB
// measured at the parser's peak) and the export's buffers, with room for
// a loaded machine; under the 512 MiB stated for the worst case.
const denseRSSLimit = 448 << 10

// denseAttrs is a valid file of about tokens tokens in one of the
// costliest shapes the token limit allows: top-level arguments, each a
// template (eight tokens a line).
func denseAttrs(tokens int) string {
	var b strings.Builder
	for i := 0; i < tokens/8; i++ {
		fmt.Fprintf(&b, "a%d=\"${a}\"\n", i)
	}
	return b.String()
}

func TestHostileDenseModule(t *testing.T) {
	in := registrytest.New(t)
	tarGz := func(name string, files map[string]string) string {
		var es []registrytest.Entry
		for n, body := range files {
			es = append(es, registrytest.Entry{Name: n, Body: body})
		}
		return in.AddRawArchive(t, name+".tar.gz", registrytest.TarGz(t, es))
	}
	lines := strings.Repeat("a\n", tfconfig.MaxFileSize/2)
	in.AddModule("registry.terraform.io", "evil", "dense", "aws", "1.0.0", tarGz("dense", map[string]string{"main.tf": lines}))
	in.AddModule("registry.terraform.io", "evil", "densejson", "aws", "1.0.0", tarGz("densejson", map[string]string{
		"main.tf.json": `{"locals":{"a":[` + strings.Repeat("1,", tfconfig.MaxFileSize/2-16) + `1]}}`}))
	// Only the docs read modules/x (no call leads there); they leave out
	// a submodule they cannot read.
	in.AddModule("registry.terraform.io", "evil", "docs", "aws", "1.0.0", tarGz("docs", map[string]string{
		"main.tf": "variable \"x\" {}\n", "modules/x/main.tf": lines}))
	var near []string
	for i := range 6 {
		name := fmt.Sprintf("near%d", i)
		in.AddModule("registry.terraform.io", "evil", name, "aws", "1.0.0", tarGz(name, map[string]string{
			"main.tf": denseAttrs(dist.MaxHCLTokens - 64), "modules/sub/main.tf": denseAttrs(dist.MaxHCLTokens - 64)}))
		near = append(near, "evil/"+name+"/aws")
	}
	in.AddModule("registry.terraform.io", "real", "policy", "aws", "1.0.0", tarGz("policy", map[string]string{
		"main.tf":        string(registrytest.IAMPolicyTF(3 << 19)),
		"policy.tf.json": string(registrytest.IAMPolicyJSON(7 << 19)),
		"variables.tf":   "variable \"team\" {\n  description = \"The team the policy is for.\"\n  type        = string\n}\n"}))

	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	export := func(t *testing.T, procs int, modules ...string) (string, int) {
		t.Helper()
		manifest := filepath.Join(t.TempDir(), "m.hcl")
		m := "platforms = [\"linux_amd64\"]\n"
		for _, mod := range modules {
			m += "module \"" + mod + "\" {}\n"
		}
		os.WriteFile(manifest, []byte(m), 0o644)
		env := append(append(harness.BaseEnv(), in.Env()...), "HOME="+work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), fmt.Sprintf("GOMAXPROCS=%d", procs))
		return harness.RunBoundedEnv(t, work, env, denseRSSLimit, "export", "--manifest", manifest, "--sign-key", "k/site.key.asc",
			"--out", filepath.Join(t.TempDir(), "b.bundle"), "--cache", filepath.Join(t.TempDir(), "cache"))
	}
	for _, m := range []string{"evil/dense/aws", "evil/densejson/aws"} {
		t.Run("refused/"+m, func(t *testing.T) {
			out, code := export(t, 2, m)
			t.Logf("%s", out)
			if code == 0 || !strings.Contains(out, "main.tf") || !strings.Contains(out, "over the limit of") || !strings.Contains(out, "hint:") {
				t.Errorf("export of %s (exit %d) did not refuse the dense file with a hint:\n%s", m, code, out)
			}
		})
	}
	for _, procs := range []int{2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			out, code := export(t, procs, append(near, "evil/docs/aws", "real/policy/aws")...)
			if code != 0 {
				t.Fatalf("export failed (exit %d):\n%s", code, out)
			}
			if strings.Contains(out, "no docs carried") {
				t.Errorf("a module lost its docs:\n%s", out)
			}
		})
	}
}

// TestDenseSiteFiles: the site's own HCL files (here the export manifest)
// pass the same bounds: a manifest of one-byte tokens is refused before it
// is parsed, and a deeply nested one with an error rather than a stack
// overflow (HCL's parser recursed with no bound there: a fatal error).
func TestDenseSiteFiles(t *testing.T) {
	work := t.TempDir()
	for name, body := range map[string]string{
		"dense.hcl": strings.Repeat("a\n", tfconfig.MaxFileSize/2),
		"deep.hcl":  "platforms = " + strings.Repeat("[", 200_000) + "\n",
	} {
		os.WriteFile(filepath.Join(work, name), []byte(body), 0o644)
		out, code := harness.RunBoundedEnv(t, work, harness.BaseEnv(), denseRSSLimit, "export", "--manifest", name, "--dry-run")
		want := "over the limit of"
		if name == "deep.hcl" {
			want = "nested over the depth limit"
		}
		if code != 1 || !strings.Contains(out, name) || !strings.Contains(out, want) {
			t.Errorf("%s (exit %d): want %q:\n%.2000s", name, code, want, out)
		}
	}
}
