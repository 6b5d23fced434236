package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist/osfile"
)

func provKey(addr, ver, plat string) store.UsageKey {
	return store.UsageKey{Kind: store.UsageProvider, Address: addr, Version: ver, Platform: plat}
}

// TestAddUsageWritersLoseNothing: writers adding at once (each its own
// open of the lock, as replicas are) lose none of each other's counts,
// and the latest time wins.
func TestAddUsageWritersLoseNothing(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	k := provKey("registry.terraform.io/hashicorp/random", "3.6.0", "linux_amd64")
	const writers, rounds = 6, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				at := t0.Add(time.Duration(w*rounds+i) * time.Second)
				own := provKey("registry.terraform.io/hashicorp/random", "3.6.0", fmt.Sprintf("linux_w%d", w))
				if _, err := store.AddUsage(root, map[store.UsageKey]store.UsageCount{k: {Downloads: 1, Last: at}, own: {Downloads: 2, Last: at}}, t0, 30*time.Second); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	u, err := store.ReadUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Counts[k]; got.Downloads != writers*rounds || !got.Last.Equal(t0.Add((writers*rounds-1)*time.Second)) {
		t.Errorf("shared key: %+v, want %d downloads, last %v", got, writers*rounds, t0.Add((writers*rounds-1)*time.Second))
	}
	for w := 0; w < writers; w++ {
		if got := u.Counts[provKey("registry.terraform.io/hashicorp/random", "3.6.0", fmt.Sprintf("linux_w%d", w))]; got.Downloads != 2*rounds {
			t.Errorf("writer %d's own key: %d downloads, want %d", w, got.Downloads, 2*rounds)
		}
	}
	if !u.Since.Equal(t0) {
		t.Errorf("since %v, want %v", u.Since, t0)
	}
	fi, err := os.Stat(store.UsageDir(root))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("usage dir: %v %v, want mode 0700", fi.Mode(), err)
	}
	fi, err = os.Stat(store.UsageFile(root))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("usage file: %v %v, want mode 0600", fi.Mode(), err)
	}
}

// TestAddUsageWaitsForTheLock: a writer holding the lock makes another
// wait, and give up after its wait with nothing written.
func TestAddUsageWaitsForTheLock(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	if _, err := store.AddUsage(root, nil, now, time.Second); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(store.UsageFile(root))
	lf, err := os.OpenFile(filepath.Join(store.UsageDir(root), "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := osfile.Lock(lf); err != nil {
		t.Fatal(err)
	}
	d := map[store.UsageKey]store.UsageCount{provKey("a.example/n/t", "1.0.0", "linux_amd64"): {Downloads: 1, Last: now}}
	start := time.Now()
	if u, err := store.AddUsage(root, d, now, 300*time.Millisecond); !errors.Is(err, store.ErrUsageBusy) || u != nil {
		t.Errorf("under another writer's lock: %v, %v; want ErrUsageBusy", u, err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("gave up after %v, before its 300ms wait", el)
	}
	if after, _ := os.ReadFile(store.UsageFile(root)); !bytes.Equal(before, after) {
		t.Error("the file changed although the lock was not taken")
	}
	osfile.Unlock(lf)
	if _, err := store.AddUsage(root, d, now, time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestUsageCrashLeftovers: a writer that died between its temporary file
// and the rename leaves the file whole; the next writer removes the
// temporary file.
func TestUsageCrashLeftovers(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	k := provKey("a.example/n/t", "1.0.0", "linux_amd64")
	if _, err := store.AddUsage(root, map[store.UsageKey]store.UsageCount{k: {Downloads: 3, Last: now}}, now, time.Second); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(store.UsageDir(root), ".usage.json.123456")
	os.WriteFile(tmp, []byte(`{"format":1,"since":"2020-01-01T00:00:00Z","entries":[{"kind":"provi`), 0o600)
	u, err := store.ReadUsage(root)
	if err != nil || u.Counts[k].Downloads != 3 {
		t.Fatalf("read beside a torn temporary file: %v %v", u, err)
	}
	if _, err := store.AddUsage(root, map[store.UsageKey]store.UsageCount{k: {Downloads: 1, Last: now}}, now, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the dead writer's temporary file is still there: %v", err)
	}
	if u, _ := store.ReadUsage(root); u.Counts[k].Downloads != 4 {
		t.Errorf("%d downloads, want 4", u.Counts[k].Downloads)
	}
}

// TestReadUsageRefusesHostile: a usage file that is not what serve
// writes is refused with a hint, whatever it holds.
func TestReadUsageRefusesHostile(t *testing.T) {
	entry := func(kind, addr, ver, plat string, n int) string {
		return fmt.Sprintf(`{"format":1,"since":"2026-01-01T00:00:00Z","entries":[{"kind":%q,"address":%q,"version":%q,"platform":%q,"downloads":%d,"last_fetched_at":"2026-01-02T00:00:00Z"}]}`, kind, addr, ver, plat, n)
	}
	cases := map[string]string{
		"not JSON":            "{",
		"format 2":            `{"format":2,"since":"2026-01-01T00:00:00Z","entries":[]}`,
		"unknown field":       `{"format":1,"since":"2026-01-01T00:00:00Z","entries":[],"x":1}`,
		"negative":            entry("provider", "a.example/n/t", "1.0.0", "linux_amd64", -1),
		"unknown kind":        entry("plugin", "a.example/n/t", "1.0.0", "linux_amd64", 1),
		"module with a plat":  entry("module", "a.example/n/m/s", "1.0.0", "linux_amd64", 1),
		"provider, no plat":   entry("provider", "a.example/n/t", "1.0.0", "", 1),
		"control characters":  entry("provider", "a.example/n/t\x1b[2J", "1.0.0", "linux_amd64", 1),
		"no address":          entry("module", "", "1.0.0", "", 1),
		"long version":        entry("module", "a.example/n/m/s", strings.Repeat("9", 600), "", 1),
		"larger than 32 MiB":  `{"format":1,"since":"2026-01-01T00:00:00Z","entries":[` + strings.Repeat(" ", 32<<20) + `]}`,
		"a second document":   `{"format":1,"since":"2026-01-01T00:00:00Z","entries":[]}{"format":1}`,
		"entries not a list":  `{"format":1,"since":"2026-01-01T00:00:00Z","entries":{}}`,
		"downloads as string": `{"format":1,"since":"2026-01-01T00:00:00Z","entries":[{"kind":"module","address":"a/b/c/d","version":"1","downloads":"1"}]}`,
	}
	// Not a regular file: a FIFO (which would block a reader) or a link.
	for name, mk := range map[string]func(string) error{
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"symlink": func(p string) error { return os.Symlink("/etc/hostname", p) },
	} {
		root := t.TempDir()
		os.MkdirAll(store.UsageDir(root), 0o700)
		if err := mk(store.UsageFile(root)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := store.ReadUsage(root); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, store.ErrUsage) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want ErrUsage: not a regular file", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadUsage blocked", name)
		}
	}
	for name, text := range cases {
		root := t.TempDir()
		os.MkdirAll(store.UsageDir(root), 0o700)
		os.WriteFile(store.UsageFile(root), []byte(text), 0o600)
		_, err := store.ReadUsage(root)
		if !errors.Is(err, store.ErrUsage) || !strings.Contains(err.Error(), "hint: move it aside") {
			t.Errorf("%s: %v, want ErrUsage with a hint", name, err)
			continue
		}
		// A writer refuses it too, and leaves it as it was.
		if u, err := store.AddUsage(root, map[store.UsageKey]store.UsageCount{provKey("a.example/n/t", "1.0.0", "linux_amd64"): {Downloads: 1}}, time.Now(), time.Second); u != nil || !errors.Is(err, store.ErrUsage) {
			t.Errorf("%s: AddUsage over it: %v %v", name, u, err)
		}
		if got, _ := os.ReadFile(store.UsageFile(root)); string(got) != text {
			t.Errorf("%s: the file was changed", name)
		}
	}
}

// FuzzReadUsage: whatever the file holds, reading it returns counts or an
// error, never panics, and what it returns is written and read back the
// same.
func FuzzReadUsage(f *testing.F) {
	f.Add([]byte(`{"format":1,"since":"2026-01-01T00:00:00Z","entries":[{"kind":"provider","address":"registry.terraform.io/hashicorp/random","version":"3.6.0","platform":"linux_amd64","downloads":3,"last_fetched_at":"2026-01-02T00:00:00Z"},{"kind":"module","address":"registry.terraform.io/example/vpc/aws","version":"1.0.0","downloads":1,"last_fetched_at":"2026-01-02T00:00:00Z"}]}`))
	f.Add([]byte(`{"format":1,"since":"2026-01-01T00:00:00Z","entries":[]}`))
	f.Add([]byte(`{"format":1,"entries":[{"kind":"module","address":"a","version":"1","downloads":9223372036854775807},{"kind":"module","address":"a","version":"1","downloads":9}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := store.DecodeUsage(data)
		if err != nil {
			if !errors.Is(err, store.ErrUsage) {
				t.Fatalf("an error that is not ErrUsage: %v", err)
			}
			return
		}
		b, err := store.EncodeUsage(u)
		if err != nil {
			t.Fatalf("writing back what was read: %v", err)
		}
		again, err := store.DecodeUsage(b)
		if err != nil {
			t.Fatalf("reading back what was written: %v\n%s", err, b)
		}
		if len(again.Counts) != len(u.Counts) || !again.Since.Equal(u.Since) {
			t.Fatalf("%d entries since %v read back, %d since %v written", len(again.Counts), again.Since, len(u.Counts), u.Since)
		}
		for k, c := range u.Counts {
			if g := again.Counts[k]; g.Downloads != c.Downloads || !g.Last.Equal(c.Last) {
				t.Fatalf("%v: %+v read back, %+v written", k, g, c)
			}
		}
	})
}

// TestPruneUnusedFor: --unused-for removes what was neither imported nor
// downloaded in the window (the later of the two counts), keeps what was
// imported recently though nobody could fetch it yet, and refuses when
// the counts do not reach back that far, or do not exist.
func TestPruneUnusedFor(t *testing.T) {
	f := newFixture(t)
	// Imports check signature times against the clock: the store is made
	// now, and pruned 200 days from now.
	day := 24 * time.Hour
	base := time.Now().UTC().Truncate(time.Second)
	now := base.Add(200 * day)
	rfc := func(t time.Time) string { return t.Format(time.RFC3339) }
	root := filepath.Join(t.TempDir(), "store")
	// random 3.6.0, null 3.2.2 and the vpc module, imported 200 days ago
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring, Now: func() time.Time { return base }}); err != nil {
		t.Fatal(err)
	}
	opt := store.PruneOptions{ByUse: true, UnusedFor: 90 * day, DryRun: true, Now: func() time.Time { return now }}

	// No counts at all: refused, nothing changed.
	before := snapshot(t, root)
	if _, err := store.Prune(root, opt); !errors.Is(err, store.ErrUsageWindow) || !strings.Contains(err.Error(), "hint:") {
		t.Errorf("without counts: %v, want ErrUsageWindow with a hint", err)
	}
	// Counted for 60 days only: 90 days cannot be judged.
	if _, err := store.AddUsage(root, nil, now.Add(-60*day), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Prune(root, opt); !errors.Is(err, store.ErrUsageWindow) || !strings.Contains(err.Error(), "since "+rfc(now.Add(-60*day))) {
		t.Errorf("counts of 60 days for --unused-for 90d: %v", err)
	}
	os.RemoveAll(store.StateDir(root))
	sameTree(t, before, snapshot(t, root))

	// Counted for 150 days: random fetched 10 days ago (one platform),
	// the module 100 days ago, null never.
	if _, err := store.AddUsage(root, map[store.UsageKey]store.UsageCount{
		provKey("registry.terraform.io/hashicorp/random", "3.6.0", "darwin_arm64"):                    {Downloads: 2, Last: now.Add(-10 * day)},
		{Kind: store.UsageModule, Address: "registry.terraform.io/example/vpc/aws", Version: "1.0.0"}: {Downloads: 7, Last: now.Add(-100 * day)},
	}, now.Add(-150*day), time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := store.Prune(root, opt)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(res.Removed, "\n")
	want := "provider registry.opentofu.org/hashicorp/null 3.2.2\nmodule registry.terraform.io/example/vpc/aws 1.0.0"
	if got != want {
		t.Errorf("--unused-for 90d would remove:\n%s\nwant:\n%s", got, want)
	}
	if len(res.Unused) != 2 || res.Unused[1].Downloads != 7 || res.Unused[1].LastFetchedAt != rfc(now.Add(-100*day)) || res.Unused[0].LastFetchedAt != "" ||
		res.Unused[0].ImportedAt != rfc(base) || res.UsageSince != rfc(now.Add(-150*day)) {
		t.Errorf("the explanation: %+v since %s", res.Unused, res.UsageSince)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	for _, w := range []string{
		"would remove provider registry.opentofu.org/hashicorp/null 3.2.2 (last imported " + rfc(base) + ", not downloaded since counting began)",
		"would remove module registry.terraform.io/example/vpc/aws 1.0.0 (last imported " + rfc(base) + ", 7 download(s), the last " + rfc(now.Add(-100*day)) + ")",
		"counted since " + rfc(now.Add(-150*day)),
	} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("the text lacks %q:\n%s", w, text.String())
		}
	}

	// A version imported recently is kept though never fetched: tls
	// 4.0.5, imported yesterday.
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(t.TempDir(), "p"), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "tls", Version: "4.0.5",
		Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"),
	}))
	var tlsBundle bytes.Buffer
	set.WriteBundle(t, &tlsBundle, f.signer, bundle.CompressionZstd)
	if _, err := store.Import(root, &tlsBundle, store.ImportOptions{Keyring: f.keyring, Now: func() time.Time { return now.Add(-1 * day) }}); err != nil {
		t.Fatal(err)
	}
	opt.DryRun = false
	if res, err = store.Prune(root, opt); err != nil || len(res.Removed) != 2 {
		t.Fatalf("prune --unused-for: %v %v", res, err)
	}
	inv, err := store.LoadInventory(root)
	if err != nil {
		t.Fatal(err)
	}
	ix := inv.Index
	var left []string
	for _, p := range ix.Catalog.Providers {
		left = append(left, p.String())
	}
	if strings.Join(left, ",") != "registry.terraform.io/hashicorp/random 3.6.0,registry.terraform.io/hashicorp/tls 4.0.5" || len(ix.Catalog.Modules) != 0 {
		t.Errorf("left after the prune: %v and %d modules", left, len(ix.Catalog.Modules))
	}
	if m := ix.Maintenance[len(ix.Maintenance)-1]; m.Policy != "--unused-for 2160h0m0s" {
		t.Errorf("history: %+v", m)
	}
	// The counts are serve's: prune leaves them.
	if u, _ := store.ReadUsage(root); len(u.Counts) != 2 {
		t.Errorf("prune changed the counts: %v", u.Counts)
	}
}

// TestUsageReleaseRoundTrip: a release's count is written as a provider
// entry under cli.airgap.invalid (what an older reader accepts) and read
// back as the release's; a "release" kind in the file is refused.
func TestUsageReleaseRoundTrip(t *testing.T) {
	root := t.TempDir()
	k := store.UsageKey{Kind: store.UsageRelease, Address: "terraform", Version: "1.14.3", Platform: "linux_amd64"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := store.AddUsage(root, map[store.UsageKey]store.UsageCount{k: {Downloads: 3, Last: at}}, at, time.Second); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(store.UsageFile(root))
	if !bytes.Contains(raw, []byte(`{"kind":"provider","address":"cli.airgap.invalid/terraform","version":"1.14.3","platform":"linux_amd64","downloads":3`)) {
		t.Errorf("the file does not spell the release as a provider entry under cli.airgap.invalid:\n%s", raw)
	}
	u, err := store.ReadUsage(root)
	if err != nil {
		t.Fatal(err)
	}
	if c := u.Counts[k]; c.Downloads != 3 || len(u.Counts) != 1 {
		t.Errorf("read back %v, want 3 downloads of %v", u.Counts, k)
	}
	bad := bytes.Replace(raw, []byte(`"kind":"provider","address":"cli.airgap.invalid/terraform"`), []byte(`"kind":"release","address":"terraform"`), 1)
	os.WriteFile(store.UsageFile(root), bad, 0o600)
	if _, err := store.ReadUsage(root); err == nil || !strings.Contains(err.Error(), "hint:") {
		t.Errorf("a release kind in the file: %v, want refused with a hint", err)
	}
}
