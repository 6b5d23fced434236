package protocol

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
)

// BenchmarkUsageCount is what counting one completed download costs the
// request: one mutex-guarded map update (the key already present, as it is
// after a version's first download), from both cores at once.
func BenchmarkUsageCount(b *testing.B) {
	u := StartUsage(b.TempDir(), UsageOptions{Interval: time.Hour, Log: slog.New(slog.DiscardHandler)})
	defer u.Close()
	dl := &access.Download{Kind: "provider", Address: "registry.terraform.io/hashicorp/random", Version: "3.6.0", Platform: "linux_amd64", Role: dist.RoleProviderPackage}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var keys [1]store.UsageKey
		for pb.Next() {
			keys[0] = usageKey(dl)
			u.count(keys[:], time.Now())
		}
	})
}

// TestUsagePendingBounded: counts between two flushes hold at most the
// bound's keys whatever is counted; beyond, counts are dropped and the
// drop is logged at the next flush.
func TestUsagePendingBounded(t *testing.T) {
	if maxPendingUsage > 1<<20 {
		t.Errorf("maxPendingUsage %d: the bound stated is 1<<20 entries", maxPendingUsage)
	}
	var logs bytes.Buffer
	u := &Usage{root: t.TempDir(), pending: map[store.UsageKey]store.UsageCount{}, max: 1000,
		opt: UsageOptions{Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: time.Now}}
	u.file.Store(&store.Usage{Counts: map[store.UsageKey]store.UsageCount{}})
	for i := 0; i < 1010; i++ {
		u.count([]store.UsageKey{{Kind: "module", Address: "a.example/n/m/s", Version: fmt.Sprint(i)}}, time.Now())
	}
	if len(u.pending) != 1000 || u.dropped != 10 {
		t.Errorf("%d pending, %d dropped; want 1000 and 10", len(u.pending), u.dropped)
	}
	// A key already held still counts.
	k := store.UsageKey{Kind: "module", Address: "a.example/n/m/s", Version: "0"}
	u.count([]store.UsageKey{k}, time.Now())
	if u.pending[k].Downloads != 2 {
		t.Errorf("a held key: %d downloads, want 2", u.pending[k].Downloads)
	}
	u.flush()
	if !strings.Contains(logs.String(), "download counts dropped") || !strings.Contains(logs.String(), "dropped=10") {
		t.Errorf("the drop was not logged:\n%s", logs.String())
	}
	if c, _ := store.ReadUsage(u.root); len(c.Counts) != 1000 {
		t.Errorf("%d entries written, want 1000", len(c.Counts))
	}
}
