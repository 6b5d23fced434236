package docs

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// awsLikeDocs writes, into work, a provider repository the size of the AWS
// provider's documentation today: 1,450 resource pages, 570 data sources,
// 25 guides, 6 ephemeral resources and 5 functions (2,056 pages, about 38
// MiB of markdown of the registry's shape: front matter, headings, HCL
// examples, argument lists), 12 images, and 40 MiB of Go code beside
// them that the docs fetch must not download. version changes some
// pages (a release's edits) and adds some.
func awsLikeDocs(t *testing.T, work string, release int) {
	t.Helper()
	words := strings.Fields("bucket instance policy the of to a in is for and name arn tags optional required string list map block argument attribute " +
		"configuration resource data source provider region id value default see example import timeouts create update delete " +
		"lifecycle versioning encryption server side kms key replication logging website cors acl grant owner account")
	r := rand.New(rand.NewPCG(33, 1)) // reseeded per page: a page's text is a function of its name
	para := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	page := func(kind, name string, size int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "---\nsubcategory: %q\nlayout: \"aws\"\npage_title: \"AWS: aws_%s\"\ndescription: |-\n  %s\n---\n\n# %s: aws_%s\n\n%s.\n\n## Example Usage\n\n```terraform\nresource \"aws_%s\" \"example\" {\n  name = \"example\"\n  tags = {\n    Name = \"example\"\n  }\n}\n```\n\n## Argument Reference\n\n",
			strings.ToUpper(name[:1])+strings.SplitN(name, "_", 2)[0][1:], name, para(12), kind, name, para(40), name)
		for b.Len() < size {
			fmt.Fprintf(&b, "* `%s` - (Optional) %s.\n", strings.ReplaceAll(para(2), " ", "_"), para(18))
			if r.IntN(12) == 0 {
				fmt.Fprintf(&b, "\n### %s\n\n%s.\n\n", para(3), para(60))
			}
		}
		fmt.Fprintf(&b, "\n## Import\n\n```console\n%% terraform import aws_%s.example example\n```\n", name)
		return b.String()
	}
	write := func(rel, s string) {
		p := filepath.Join(work, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int { return 4<<10 + r.IntN(29<<10) } // 4–33 KiB, about 18.5 on average
	for _, c := range []struct {
		dir, kind string
		n         int
	}{{"resources", "Resource", 1450}, {"data-sources", "Data Source", 570}, {"guides", "Guide", 25}, {"ephemeral-resources", "Ephemeral", 6}, {"functions", "Function", 5}} {
		for i := range c.n {
			name := fmt.Sprintf("%s_%s_%d", words[i%len(words)], words[(i/len(words))%len(words)], i)
			r = rand.New(rand.NewPCG(33, uint64(len(c.dir))<<32|uint64(i)))
			s := page(c.kind, name, size())
			if release > 0 && i%25 == 0 { // a release edits one page in 25
				s += fmt.Sprintf("\n## Changes in release %d\n\n%s.\n", release, para(30))
			}
			write(filepath.Join("docs", c.dir, name+".md"), s)
		}
	}
	for i := range release * 3 { // and adds a few
		r = rand.New(rand.NewPCG(34, uint64(i)))
		write(fmt.Sprintf("docs/resources/new_%d.md", i), page("Resource", fmt.Sprintf("new_%d", i), size()))
	}
	write("docs/index.md", "---\npage_title: \"Provider: AWS\"\n---\n\n# AWS Provider\n\n"+para(400)+"\n")
	img := rand.New(rand.NewPCG(1, 1))
	for i := range 12 {
		b := make([]byte, 40<<10)
		for j := range b {
			b[j] = byte(img.Uint32())
		}
		write(fmt.Sprintf("docs/images/figure-%d.png", i), string(b))
	}
	for i := range 400 {
		var b strings.Builder
		fmt.Fprintf(&b, "package service%d\n\n", i)
		for b.Len() < 100<<10 {
			fmt.Fprintf(&b, "func %s() { _ = %q }\n", strings.ReplaceAll(para(3), " ", "_"), para(8))
		}
		write(fmt.Sprintf("internal/service/s%03d/code.go", i), b.String())
	}
}

// TestDocsLargeProvider measures the docs of a provider as large as AWS's
// (awsLikeDocs, two releases): export time against the same export with
// --no-docs in the same run, the sizes of the docs, the bundle and the
// store, and serve's time for the list of pages and a page. It holds them
// to bounds a site can live with; the figures are in docs/documentation.md.
//
// It is a measurement (about 5 minutes on a loaded 2-core machine), run by
// 'make bench-docs' (AIRGAP_BENCH_DOCS=1), not by every test run.
func TestDocsLargeProvider(t *testing.T) {
	if os.Getenv("AIRGAP_BENCH_DOCS") == "" {
		t.Skip("a measurement: run it with 'make bench-docs' (AIRGAP_BENCH_DOCS=1)")
	}
	in := registrytest.New(t)
	plats := []string{"linux_amd64"}
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "aws", "5.79.0", plats, 4<<10)
	in.AddProvider(t, "registry.terraform.io", "hashicorp", "aws", "5.80.0", plats, 4<<10)
	in.SetProviderSource("registry.terraform.io", "hashicorp", "aws", "https://github.com/hashicorp/terraform-provider-aws")
	gen := time.Now()
	in.AddTaggedRepo(t, "hashicorp/terraform-provider-aws", []registrytest.Release{{Tag: "v5.79.0"}, {Tag: "v5.80.0"}}, func(work, tag string) {
		awsLikeDocs(t, work, map[string]int{"v5.79.0": 0, "v5.80.0": 1}[tag])
	})
	t.Logf("synthetic repository made in %v", time.Since(gen))
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"hashicorp/aws\" {\n  all = true\n}\n"), 0o644)
	export := func(name string, extra ...string) (time.Duration, int64, string) {
		b := filepath.Join(work, name)
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
		start := time.Now()
		cmd := exec.Command(harness.Bin, append([]string{"export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--out", b, "--cache", filepath.Join(work, "cache-"+name)}, extra...)...)
		cmd.Dir, cmd.Env = work, append(harness.BaseEnv(), online...)
		outb, err := cmd.CombinedOutput()
		out, took := string(outb), time.Since(start)
		if err != nil {
			t.Fatalf("export %s: %v\n%s", name, err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
		cpu := func(r *syscall.Rusage) time.Duration {
			return time.Duration(r.Utime.Nano() + r.Stime.Nano())
		}
		// The stand-in git server's processes (git http-backend and its
		// pack-objects, children of this test) are the rest of the
		// children's CPU time.
		t.Logf("export %s: the stand-in git server's processes used %v CPU", name, (cpu(&after) - cpu(&before) - cmd.ProcessState.UserTime() - cmd.ProcessState.SystemTime()).Round(time.Millisecond))
		fi, _ := os.Stat(b)
		t.Logf("export %s: %v wall, %v CPU (airgap and its git processes: user %v, system %v), peak RSS %d MiB, bundle %d bytes",
			name, took.Round(time.Millisecond), (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(time.Millisecond),
			cmd.ProcessState.UserTime().Round(time.Millisecond), cmd.ProcessState.SystemTime().Round(time.Millisecond), ru.Maxrss>>10, fi.Size())
		return took, fi.Size(), out
	}
	base, baseSize, _ := export("nodocs.bundle", "--no-docs")
	with, withSize, out := export("docs.bundle")
	t.Logf("docs export:\n%s", out)
	re := regexp.MustCompile(`fetched docs of provider registry.terraform.io/hashicorp/aws (5\.\d+\.0): ([\d,]+) pages, ([\d.]+ MiB)`)
	got := re.FindAllStringSubmatch(out, -1)
	if len(got) != 2 {
		t.Fatalf("export did not fetch both versions' docs:\n%s", out)
	}
	for _, g := range got {
		t.Logf("docs of %s: %s pages, %s", g[1], g[2], g[3])
	}
	vout := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", filepath.Join(work, "docs.bundle"))
	for _, l := range strings.Split(vout, "\n") {
		if strings.Contains(l, "docs:") {
			t.Logf("verify: %s", strings.TrimSpace(l))
		}
	}
	t.Logf("export time with docs %v, without %v (ratio %.1f); bundle %s with docs, %s without (+%s for two versions)",
		with, base, float64(with)/float64(base), mib(withSize), mib(baseSize), mib(withSize-baseSize))
	if with-base > 3*time.Minute {
		t.Errorf("the docs of two AWS-sized versions took %v to export: over the bound (3 min)", with-base)
	}
	store := filepath.Join(work, "store")
	start := time.Now()
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store, filepath.Join(work, "docs.bundle"))
	t.Logf("import: %v; store blobs %s", time.Since(start), mib(dirSize(t, filepath.Join(store, "blobs"))))

	srv2 := harness.StartServe(t, store)
	srv, caFile := srv2.Base, srv2.CAFile
	get := docsClient(t, caFile)
	timed := func(what, u string) {
		start := time.Now()
		code, body, _ := get(u, "")
		took := time.Since(start)
		t.Logf("serve %s: %d, %d bytes in %v", what, code, len(body), took)
		if code != 200 || took > 5*time.Second {
			t.Errorf("serve %s: %d in %v (bound 5 s)", what, code, took)
		}
	}
	ui := srv + "ui/providers/registry.terraform.io/hashicorp/aws/5.80.0/docs/"
	timed("the list of pages (first: reads every page's front matter)", ui)
	timed("the list of pages (again)", ui)
	timed("a resource page (first: renders)", ui+"resources/bucket_bucket_0")
	timed("a resource page (again)", ui+"resources/bucket_bucket_0")
	timed("a search", srv+"ui/docs/search?q=aws_policy")
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
