package access

import (
	"sync"
	"testing"
	"time"
)

func TestURLKeysSharedAndRotated(t *testing.T) {
	dir := t.TempDir()
	// Replicas starting at once agree on one key.
	var wg sync.WaitGroup
	keys := make([]*urlKeys, 4)
	for i := range keys {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			k, err := openURLKeys(dir)
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = k
		}(i)
	}
	wg.Wait()
	a, b := keys[0], keys[1]
	for _, k := range keys[1:] {
		if k.cur.Load().Keys[0].ID != a.cur.Load().Keys[0].ID {
			t.Fatal("replicas made different keys")
		}
	}
	old := a.sign(macURL, "ci", "123", "/blobs/sha256/x")
	if !b.verify(old, macURL, "ci", "123", "/blobs/sha256/x") {
		t.Fatal("a replica does not verify another's signature")
	}
	for _, bad := range [][]string{{"ci", "124", "/blobs/sha256/x"}, {"cj", "123", "/blobs/sha256/x"}, {"ci", "123", "/blobs/sha256/y"}} {
		if b.verify(old, macURL, bad...) {
			t.Errorf("verified with %q", bad)
		}
	}
	if b.verify(old, macBearer, "ci", "123", "/blobs/sha256/x") {
		t.Error("a URL signature verifies as a bearer")
	}
	// Rotation: a signs with the new key once it reloads; b, not yet
	// reloaded, verifies it (an unknown key id makes it look again); the
	// old signature stays valid.
	if _, err := RotateURLKeys(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.reload(); err != nil || !changed {
		t.Fatalf("reload after rotation: %v %v", changed, err)
	}
	fresh := a.sign(macURL, "ci", "123", "/p")
	if fresh[:8] == old[:8] {
		t.Fatal("the rotated key does not sign")
	}
	if !b.verify(fresh, macURL, "ci", "123", "/p") || !b.verify(old, macURL, "ci", "123", "/blobs/sha256/x") || !a.verify(old, macURL, "ci", "123", "/blobs/sha256/x") {
		t.Fatal("after one rotation both keys must verify on every replica")
	}
	// A second rotation drops the oldest key.
	if _, err := RotateURLKeys(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	a.reload()
	if a.verify(old, macURL, "ci", "123", "/blobs/sha256/x") {
		t.Error("a key two rotations old still verifies")
	}
	if !a.verify(fresh, macURL, "ci", "123", "/p") {
		t.Error("the previous key stopped verifying after one rotation")
	}
}

func TestURLExpiryBuckets(t *testing.T) {
	ttl := 15 * time.Minute
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	e0 := urlExpiry(t0, ttl)
	if e1 := urlExpiry(t0.Add(59*time.Second), ttl); e1 != e0 {
		t.Errorf("one bucket, two expiries: %d %d", e0, e1)
	}
	if e2 := urlExpiry(t0.Add(60*time.Second), ttl); e2 != e0+60 {
		t.Errorf("next bucket: %d, want %d", e2, e0+60)
	}
	// Valid for at least the TTL and at most TTL + a bucket.
	for _, d := range []time.Duration{0, 30 * time.Second, 59 * time.Second} {
		left := time.Unix(urlExpiry(t0.Add(d), ttl), 0).Sub(t0.Add(d))
		if left < ttl || left > ttl+time.Minute {
			t.Errorf("issued at +%v: valid for %v", d, left)
		}
	}
	if b := urlBucket(2 * time.Second); b != 1 {
		t.Errorf("bucket for a 2 s TTL: %d", b)
	}
}
