package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// KnownGood names the servers known to honour the conditional writes the
// store needs (each checked as CheckConditional does).
const KnownGood = "AWS S3, SeaweedFS, versitygw 1.8"

// probePrefix starts the name of CheckConditional's probe object.
const probePrefix = "probe-"

// ProbeStale is the age past which gc deletes a probe object: one left by
// a check that was killed before its clean-up.
const ProbeStale = time.Hour

// CheckConditional checks that the server honours the conditional writes
// the store's guarantees rest on, with a probe object of its own under
// the prefix (deleted after): a second write-if-absent (If-None-Match: *)
// must be refused, and so must a write with a stale If-Match and one with
// an If-Match on a missing object, while a write with the current ETag
// must succeed. It refuses, naming what failed and the servers known to
// work, on a server that accepts either. At most 6 requests.
func (c *Client) CheckConditional(ctx context.Context) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	name := probePrefix + hex.EncodeToString(rnd[:])
	defer c.Delete(context.WithoutCancel(ctx), name)
	refuse := func(what string) error {
		return fmt.Errorf("store %s: the server does not honour conditional writes: %s, so two writers could both win and lose an import\nhint: use a server known to honour them (%s), or a directory store", c.addr, what, KnownGood)
	}
	etag, err := c.PutBytes(ctx, name, "", []byte("airgap conditional-write probe 1\n"))
	if err != nil {
		return fmt.Errorf("store %s: checking the server: %w", c.addr, err)
	}
	switch _, err := c.PutBytes(ctx, name, "", []byte("airgap conditional-write probe 2\n")); {
	case err == nil:
		return refuse("a second write-if-absent (If-None-Match: *) of one key was accepted")
	case !errors.Is(err, ErrPrecondition):
		return fmt.Errorf("store %s: checking the server: %w", c.addr, err)
	}
	if etag == "" {
		return refuse("a write was answered with no ETag")
	}
	switch _, err := c.PutBytes(ctx, name, `"00000000000000000000000000000000"`, []byte("airgap conditional-write probe 3\n")); {
	case err == nil:
		return refuse("a write with a stale If-Match was accepted")
	case !errors.Is(err, ErrPrecondition):
		return fmt.Errorf("store %s: checking the server: %w", c.addr, err)
	}
	switch _, err := c.PutBytes(ctx, name+"-absent", etag, []byte("airgap conditional-write probe 4\n")); {
	case err == nil:
		c.Delete(context.WithoutCancel(ctx), name+"-absent")
		return refuse("a write with If-Match on a missing object was accepted")
	case !errors.Is(err, ErrPrecondition) && !errors.Is(err, ErrNotFound):
		return fmt.Errorf("store %s: checking the server: %w", c.addr, err)
	}
	if _, err := c.PutBytes(ctx, name, etag, []byte("airgap conditional-write probe 5\n")); err != nil {
		if errors.Is(err, ErrPrecondition) {
			return refuse("a write with the object's current ETag in If-Match was refused")
		}
		return fmt.Errorf("store %s: checking the server: %w", c.addr, err)
	}
	return nil
}
