package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/verify"
)

// partialWorld publishes example/big 1.0.0 (one 1 MiB linux_amd64 package).
func partialWorld(t *testing.T) (*registrytest.Internet, *export.Request, []byte, verify.Digest) {
	t.Helper()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "example", "big", "1.0.0", []string{"linux_amd64"}, 1<<20)
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nprovider \"example/big\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pk := bp.Packages[0]
	b, err := os.ReadFile(bp.Files[pk.Filename])
	if err != nil {
		t.Fatal(err)
	}
	return in, req, b, pk.Digest
}

func partials(t *testing.T, cache string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(cache, "partial"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestPartialResumeRules: a parked prefix is resumed with a Range request; a
// parked file over the limit is dropped and fetched afresh; a prefix that
// completes to the wrong digest is deleted, so the next run succeeds; a
// killed export's private partial is parked and resumed.
func TestPartialResumeRules(t *testing.T) {
	ctx := context.Background()
	site := bundletest.Key(t, "site")

	t.Run("prefix resumes", func(t *testing.T) {
		in, req, zip, d := partialWorld(t)
		cache := t.TempDir()
		bundletest.WriteFile(t, filepath.Join(cache, "partial", d.Hex()), zip[:len(zip)/2])
		if _, err := export.Run(ctx, req, options(t, in, cache, site)); err != nil {
			t.Fatal(err)
		}
		if in.RangeRequests.Load() != 1 {
			t.Errorf("%d range requests, want 1", in.RangeRequests.Load())
		}
		if p := partials(t, cache); len(p) != 0 {
			t.Errorf("left in partial/: %v", p)
		}
	})

	t.Run("over the limit is dropped", func(t *testing.T) {
		in, req, zip, d := partialWorld(t)
		cache := t.TempDir()
		bundletest.WriteFile(t, filepath.Join(cache, "partial", d.Hex()), make([]byte, 3<<20))
		opt := options(t, in, cache, site)
		opt.MaxPackageSize = 2 << 20
		if _, err := export.Run(ctx, req, opt); err != nil {
			t.Fatal(err)
		}
		if in.RangeRequests.Load() != 0 {
			t.Errorf("an over-limit partial was resumed")
		}
		got, _ := os.ReadFile(filepath.Join(cache, "blobs", "sha256", d.Hex()))
		if len(got) != len(zip) {
			t.Errorf("cached %d bytes, want %d", len(got), len(zip))
		}
	})

	t.Run("wrong prefix is fetched again from the start", func(t *testing.T) {
		in, req, zip, d := partialWorld(t)
		cache := t.TempDir()
		bad := append([]byte{}, zip[:len(zip)/2]...)
		bad[10] ^= 0xff
		bundletest.WriteFile(t, filepath.Join(cache, "partial", d.Hex()), bad)
		var logs []string
		opt := options(t, in, cache, site)
		opt.Log = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
		if _, err := export.Run(ctx, req, opt); err != nil {
			t.Fatalf("a wrong parked prefix failed the export: %v", err)
		}
		if n := in.Downloaded("terraform-provider-big_1.0.0_linux_amd64.zip"); n != 2 || in.RangeRequests.Load() != 1 {
			t.Errorf("%d downloads (%d with Range), want the resume and one fresh download", n, in.RangeRequests.Load())
		}
		if got, _ := os.ReadFile(filepath.Join(cache, "blobs", "sha256", d.Hex())); !bytes.Equal(got, zip) {
			t.Error("the cached package is not the published one")
		}
		if p := partials(t, cache); len(p) != 0 {
			t.Errorf("left in partial/: %v", p)
		}
		if !strings.Contains(strings.Join(logs, "\n"), "downloading it again from the start") {
			t.Errorf("no notice of the second download in %q", logs)
		}
	})

	t.Run("a tampered server fails after the one fresh retry", func(t *testing.T) {
		in, req, zip, d := partialWorld(t)
		cache := t.TempDir()
		bundletest.WriteFile(t, filepath.Join(cache, "partial", d.Hex()), zip[:len(zip)/2])
		in.Tamper.Store("terraform-provider-big_1.0.0_linux_amd64.zip")
		_, err := export.Run(ctx, req, options(t, in, cache, site))
		if !errors.Is(err, verify.ErrDigestMismatch) {
			t.Fatalf("err = %v, want a digest mismatch", err)
		}
		if n := in.Downloaded("terraform-provider-big_1.0.0_linux_amd64.zip"); n != 2 {
			t.Errorf("%d downloads, want 2 (the resume, then one from the start)", n)
		}
		if p := partials(t, cache); len(p) != 0 {
			t.Errorf("a complete file with the wrong digest was kept: %v", p)
		}
	})

	t.Run("a digest mismatch is not retried", func(t *testing.T) {
		in, req, _, _ := partialWorld(t)
		cache := t.TempDir()
		in.Tamper.Store("terraform-provider-big_1.0.0_linux_amd64.zip")
		_, err := export.Run(ctx, req, options(t, in, cache, site))
		if !errors.Is(err, verify.ErrDigestMismatch) {
			t.Fatalf("err = %v, want a digest mismatch", err)
		}
		if n := in.Downloaded("terraform-provider-big_1.0.0_linux_amd64.zip"); n != 1 {
			t.Errorf("%d downloads, want 1", n)
		}
		if p := partials(t, cache); len(p) != 0 {
			t.Errorf("a file with the wrong digest was kept: %v", p)
		}
	})

	t.Run("a killed export's partial resumes", func(t *testing.T) {
		in, req, zip, d := partialWorld(t)
		cache := t.TempDir()
		private := filepath.Join(cache, "partial", d.Hex()+".12345.part")
		bundletest.WriteFile(t, private, zip[:len(zip)/3])
		old := time.Now().Add(-2 * time.Hour)
		os.Chtimes(private, old, old)
		fresh := filepath.Join(cache, "partial", strings.Repeat("ab", 32)+".777.part") // a live download elsewhere
		bundletest.WriteFile(t, fresh, []byte("x"))
		if _, err := export.Run(ctx, req, options(t, in, cache, site)); err != nil {
			t.Fatal(err)
		}
		if in.RangeRequests.Load() != 1 {
			t.Errorf("%d range requests, want 1", in.RangeRequests.Load())
		}
		if p := partials(t, cache); len(p) != 1 || p[0] != filepath.Base(fresh) {
			t.Errorf("partial/ holds %v, want only the live download's %s", p, filepath.Base(fresh))
		}
		// A parked prefix of a package the cache already holds is removed.
		bundletest.WriteFile(t, filepath.Join(cache, "partial", d.Hex()), zip[:10])
		if _, err := export.Run(ctx, req, options(t, in, cache, site)); err != nil {
			t.Fatal(err)
		}
		if p := partials(t, cache); len(p) != 1 {
			t.Errorf("partial/ holds %v after a run with the package cached", p)
		}
	})

	t.Run("endless stream stops at the limit", func(t *testing.T) {
		in, req, _, _ := partialWorld(t)
		cache := t.TempDir()
		endless := registrytest.Endless()
		in.Handle(registrytest.PackageURL("registry.terraform.io", "big", "1.0.0", "terraform-provider-big_1.0.0_linux_amd64.zip"), endless)
		opt := options(t, in, cache, site)
		opt.MaxPackageSize = 4 << 20
		_, err := export.Run(ctx, req, opt)
		if !errors.Is(err, registry.ErrTooLarge) || !strings.Contains(err.Error(), "--max-package-size") {
			t.Fatalf("err = %v, want ErrTooLarge with a hint", err)
		}
		if p := partials(t, cache); len(p) != 0 {
			t.Errorf("left in partial/: %v", p)
		}
		if n := endless.Requests.Load(); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}
