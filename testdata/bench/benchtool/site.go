package main

// The real-site fixture of 'make bench': provider packages shaped like the
// big real ones (zips of a Go plugin binary as compressible as the AWS
// provider's, ~180 MB each, several versions x five platforms of four
// providers) and modules, served by the stand-in internet.

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/verify"
)

// sitePayload is the packed plugin binary every real-site package carries:
// real Go executable bytes, deflated once (the expensive part) and cached.
type sitePayload struct {
	Path   string `json:"-"`
	Source string `json:"source"`
	Size   int64  `json:"size"`   // unpacked
	Packed int64  `json:"packed"` // deflated
	CRC32  uint32 `json:"crc32"`
}

// payloadSources picks the real Go binaries a payload is cut from: the
// file in AIRGAP_BENCH_PLUGIN, else a real AWS provider binary if this
// machine has one in a plugin directory, else the Go toolchain's and
// terraform's own executables (real Go binaries, but less compressible
// than the AWS provider: about 3:1 against its 4.7:1).
func payloadSources() (string, []string) {
	if p := os.Getenv("AIRGAP_BENCH_PLUGIN"); p != "" {
		return "AIRGAP_BENCH_PLUGIN " + p, []string{p}
	}
	var best string
	var bestSize int64
	for _, dir := range []string{"/opt/tf-plugins", os.ExpandEnv("$HOME/.terraform.d/plugins"), "/usr/share/terraform/plugins"} {
		ms, _ := filepath.Glob(filepath.Join(dir, "registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*"))
		for _, m := range ms {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Size() > bestSize {
				best, bestSize = m, fi.Size()
			}
		}
	}
	if best != "" {
		return "the AWS provider binary " + best, []string{best}
	}
	var files []string
	if p, err := exec.LookPath("terraform"); err == nil {
		files = append(files, p)
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root := strings.TrimSpace(string(out))
		bins, _ := filepath.Glob(filepath.Join(root, "bin", "*"))
		tools, _ := filepath.Glob(filepath.Join(root, "pkg", "tool", "*", "*"))
		files = append(files, bins...)
		files = append(files, tools...)
	}
	return "Go executables (terraform, the Go toolchain; no AWS provider binary found)", files
}

// cyclic reads the files one after the other, starting over at the end.
type cyclic struct {
	files []string
	i     int
	f     *os.File
}

func (c *cyclic) Read(p []byte) (int, error) {
	for {
		if c.f == nil {
			f, err := os.Open(c.files[c.i%len(c.files)])
			if err != nil {
				return 0, err
			}
			c.f = f
		}
		n, err := c.f.Read(p)
		if n > 0 {
			return n, nil
		}
		c.f.Close()
		c.f = nil
		c.i++
		if err != io.EOF {
			return 0, err
		}
	}
}

// loadPayload returns a payload of unpacked bytes, from the cache under
// cacheDir when an earlier run made the same one.
func loadPayload(t *bundletest.Standalone, cacheDir string, unpacked int64) *sitePayload {
	desc, files := payloadSources()
	if len(files) == 0 {
		t.Fatal("no Go binary found to build the real-site payload from (install terraform or Go, or set AIRGAP_BENCH_PLUGIN)")
	}
	key := sha256.New()
	fmt.Fprintf(key, "v1 %d\n", unpacked)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(key, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
	}
	name := "payload-" + hex.EncodeToString(key.Sum(nil))[:16]
	os.MkdirAll(cacheDir, 0o755)
	p := &sitePayload{Path: filepath.Join(cacheDir, name+".deflate")}
	if b, err := os.ReadFile(filepath.Join(cacheDir, name+".json")); err == nil && json.Unmarshal(b, p) == nil {
		if fi, err := os.Stat(p.Path); err == nil && fi.Size() == p.Packed {
			return p
		}
	}
	start := time.Now()
	tmp, err := os.CreateTemp(cacheDir, name+".*.partial")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	// compress/flate at the default level: what Go's archive/zip (and so
	// goreleaser, which builds the HashiCorp provider zips) writes.
	fw, _ := flate.NewWriter(tmp, flate.DefaultCompression)
	crc := crc32.NewIEEE()
	if _, err := io.CopyN(io.MultiWriter(fw, crc), &cyclic{files: files}, unpacked); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ := tmp.Stat()
	tmp.Close()
	*p = sitePayload{Path: p.Path, Source: desc, Size: unpacked, Packed: fi.Size(), CRC32: crc.Sum32()}
	if err := os.Rename(tmp.Name(), p.Path); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	os.WriteFile(filepath.Join(cacheDir, name+".json"), b, 0o644)
	fmt.Fprintf(os.Stderr, "built the payload (%s unpacked from %s) in %s; cached in %s\n", dist.HumanSize(unpacked), desc, time.Since(start).Round(time.Second), cacheDir)
	return p
}

var siteTypes = []struct{ typ, major string }{{"aws", "5"}, {"azurerm", "4"}, {"google", "6"}, {"kubernetes", "2"}}

var sitePlatforms = []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"}

// writeSiteZip writes a provider zip as HashiCorp's are made: a license
// file and the plugin executable, deflated (the executable's deflate
// stream is the payload's, copied raw). It returns the zip's digest.
func writeSiteZip(path, typ, version, plat string, p *sitePayload) (verify.Digest, int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	dg := verify.NewDigester()
	zw := zip.NewWriter(io.MultiWriter(f, dg))
	mod := time.Date(2025, 6, 12, 0, 0, 0, 0, time.UTC)
	lh := &zip.FileHeader{Name: "LICENSE.txt", Method: zip.Deflate, Modified: mod}
	lh.SetMode(0o644)
	w, err := zw.CreateHeader(lh)
	if err != nil {
		return "", 0, err
	}
	fmt.Fprintf(w, "Copyright (c) HashiCorp, Inc. terraform-provider-%s %s %s\n\n", typ, version, plat)
	for i := 0; i < 200; i++ {
		fmt.Fprintf(w, "%d. The Covered Software is provided under this License on an \"as is\" basis, without warranty of any kind.\n", i+1)
	}
	name := fmt.Sprintf("terraform-provider-%s_v%s_x5", typ, version)
	if strings.HasPrefix(plat, "windows") {
		name += ".exe"
	}
	bh := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: mod, CRC32: p.CRC32,
		CompressedSize64: uint64(p.Packed), UncompressedSize64: uint64(p.Size)}
	bh.SetMode(0o755)
	rw, err := zw.CreateRaw(bh)
	if err != nil {
		return "", 0, err
	}
	src, err := os.Open(p.Path)
	if err != nil {
		return "", 0, err
	}
	defer src.Close()
	if _, err := io.Copy(rw, src); err != nil {
		return "", 0, err
	}
	if err := zw.Close(); err != nil {
		return "", 0, err
	}
	return dg.Digest(), dg.Size(), f.Close()
}

// siteModule is the text of a module's files: variables, resources and
// outputs in the shape of the big public modules, about size bytes.
func siteModule(name string, size int) map[string]string {
	var main, vars, outs bytes.Buffer
	for i := 0; main.Len()+vars.Len()+outs.Len() < size; i++ {
		fmt.Fprintf(&vars, "variable \"%s_setting_%d\" {\n  description = \"Settings for the %s resources (number %d): see the provider's documentation for every attribute.\"\n  type        = map(string)\n  default     = {}\n}\n\n", name, i, name, i)
		fmt.Fprintf(&main, "resource \"aws_ssm_parameter\" \"%s_%d\" {\n  count = var.create ? 1 : 0\n\n  name  = \"/${var.name}/%s/%d\"\n  type  = \"String\"\n  value = jsonencode(var.%s_setting_%d)\n\n  tags = merge(var.tags, { \"Module\" = \"%s\", \"Index\" = \"%d\" })\n}\n\n", name, i, name, i, name, i, name, i)
		fmt.Fprintf(&outs, "output \"%s_%d_arn\" {\n  description = \"The ARN of parameter %d\"\n  value       = try(aws_ssm_parameter.%s_%d[0].arn, null)\n}\n\n", name, i, i, name, i)
	}
	return map[string]string{
		"main.tf":      "variable \"create\" {\n  type    = bool\n  default = true\n}\nvariable \"name\" {\n  type = string\n}\nvariable \"tags\" {\n  type    = map(string)\n  default = {}\n}\n\n" + main.String(),
		"variables.tf": vars.String(),
		"outputs.tf":   outs.String(),
		"README.md":    "# " + name + "\n\nA module of the bench's real-site fixture.\n",
	}
}

// siteInfo is DIR/site.json: what the fixture holds.
type siteInfo struct {
	Payload   sitePayload `json:"payload"`
	Packages  int         `json:"packages"`
	Bytes     int64       `json:"bytes"` // provider zips
	Modules   int         `json:"modules"`
	Versions  int         `json:"versions"` // per provider type
	Platforms []string    `json:"platforms"`
}

// site writes the real-site fixture under DIR (provider zips of about
// total bytes in all, whose plugin binary unpacks to unpacked bytes, and
// modules) and serves it on a stand-in internet until SIGTERM, writing
// DIR/env, DIR/airgap.hcl, DIR/tf/vN/main.tf (one Terraform project per
// version round: a configuration selects one version of each provider) and
// DIR/site.json.
func site(t *bundletest.Standalone, dir, cacheDir string, total, unpacked int64, modules int) {
	p := loadPayload(t, cacheDir, unpacked)
	if p.Packed < 12<<20 {
		// Every package carries the same payload: zstd (8 MiB window)
		// would find each small zip's twin in the zip before it.
		fmt.Fprintf(os.Stderr, "warning: packages of %s are within zstd's window of each other; the bundle size against zstd means nothing (use -unpacked of at least 48 MiB)\n", dist.HumanSize(p.Packed))
	}
	in := registrytest.New(t)
	info := siteInfo{Payload: *p, Platforms: sitePlatforms}
	files := filepath.Join(dir, "files")
	var hcl strings.Builder
	fmt.Fprintf(&hcl, "platforms = [\"%s\"]\n", strings.Join(sitePlatforms, `", "`))
	for round := 0; info.Bytes < total; round++ {
		var tf strings.Builder
		tf.WriteString("terraform {\n  required_providers {\n")
		for _, ty := range siteTypes {
			if info.Bytes >= total {
				break
			}
			version := fmt.Sprintf("%s.%d.0", ty.major, 90+round)
			bp := siteProvider(t, filepath.Join(files, ty.typ, version), ty.typ, version, p, in)
			for _, pk := range bp.Packages {
				info.Packages++
				info.Bytes += pk.Size
			}
			in.AddBuiltProvider(bp)
			fmt.Fprintf(&tf, "    %s = { source = \"hashicorp/%s\", version = \"%s\" }\n", ty.typ, ty.typ, version)
			if round == 0 {
				fmt.Fprintf(&hcl, "provider \"hashicorp/%s\" {\n  all = true\n}\n", ty.typ)
			}
		}
		tf.WriteString("  }\n}\n")
		d := filepath.Join(dir, "tf", fmt.Sprintf("v%02d", round))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "main.tf"), []byte(tf.String()), 0o644)
		info.Versions = round + 1
	}
	for i := 0; i < modules; i++ {
		name := fmt.Sprintf("m%02d", i)
		loc := in.AddArchive(t, name+"-1.0.0.tar.gz", siteModule(name, 64<<10<<(i%4)))
		in.AddModule("registry.terraform.io", "bench", name, "aws", "1.0.0", loc)
		fmt.Fprintf(&hcl, "module \"bench/%s/aws\" {\n  versions = \"1.0.0\"\n}\n", name)
		info.Modules++
	}
	os.WriteFile(filepath.Join(dir, "airgap.hcl"), []byte(hcl.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "env"), []byte(strings.Join(in.Env(), "\n")+"\n"), 0o644)
	b, _ := json.MarshalIndent(info, "", " ")
	os.WriteFile(filepath.Join(dir, "site.json"), b, 0o644)
	os.WriteFile(filepath.Join(dir, "summary"), []byte(fmt.Sprintf("%d packages (%.2f:1), %d modules",
		info.Packages, float64(p.Size)/float64(p.Packed), info.Modules)), 0o644)
	fmt.Printf("%d packages (%s, plugin %s unpacked, %.2f:1, from %s), %d modules\n", info.Packages, dist.HumanSize(info.Bytes),
		dist.HumanSize(p.Size), float64(p.Size)/float64(p.Packed), p.Source, info.Modules)
	fmt.Println("ready")
	waitForSignal()
	t.Close()
}

// siteProvider writes one provider version (five platform zips, its
// SHA256SUMS and the publisher's signature) into dir.
func siteProvider(t *bundletest.Standalone, dir, typ, version string, p *sitePayload, in *registrytest.Internet) *bundletest.BuiltProvider {
	os.MkdirAll(dir, 0o755)
	bp := &bundletest.BuiltProvider{Dir: dir, Files: map[string]string{}}
	pv := dist.ProviderVersion{Host: "registry.terraform.io", Namespace: "hashicorp", Type: typ, Version: version, Protocols: []string{"5.0"}}
	var sums bytes.Buffer
	plats := append([]string(nil), sitePlatforms...)
	sort.Strings(plats)
	for _, plat := range plats {
		osName, arch, _ := strings.Cut(plat, "_")
		fn := dist.ProviderPackageName(typ, version, osName, arch)
		path := filepath.Join(dir, fn)
		d, size, err := writeSiteZip(path, typ, version, plat, p)
		if err != nil {
			t.Fatal(err)
		}
		pv.Packages = append(pv.Packages, dist.Package{OS: osName, Arch: arch, Filename: fn, Digest: d, Size: size})
		fmt.Fprintf(&sums, "%s  %s\n", d.Hex(), fn)
		bp.Files[fn] = path
	}
	pv.ShasumsName = dist.ProviderShasumsName(typ, version)
	sumsPath := filepath.Join(dir, pv.ShasumsName)
	bundletest.WriteFile(t, sumsPath, sums.Bytes())
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, in.Publisher, bytes.NewReader(sums.Bytes()), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	bundletest.WriteFile(t, sumsPath+".sig", sig.Bytes())
	pv.Shasums, pv.ShasumsSig = verify.DigestBytes(sums.Bytes()), verify.DigestBytes(sig.Bytes())
	pv.SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(in.Publisher), ASCIIArmor: bundletest.Armor(t, in.Publisher)}}
	bp.Files[pv.ShasumsName] = sumsPath
	bp.Files[pv.ShasumsName+".sig"] = sumsPath + ".sig"
	bp.ProviderVersion = pv
	return bp
}
