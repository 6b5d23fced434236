package objstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/airgap/airgap/verify"
)

// Sender writes an import's new blobs to the bucket while the import is
// still reading and checking the rest of the bundle: each blob as soon as
// it is staged with its digest checked (store.ImportOptions.Staged), hashed
// again as it streams and written only if absent, putWorkers at a time,
// so that the upload overlaps the checks (unpacking every package for its
// h1) instead of following them. Publish then writes only what is left,
// and the index last. If the import fails or is refused, Abort deletes
// the blobs the Sender created (not those the bucket had), so the bucket
// is as it was; a killed import leaves them as objects no index refers
// to, which gc removes. Memory: a queue of at most senderQueue digests and
// putWorkers open files; the import waits when the queue is full.
type Sender struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	work   chan sendJob
	wg     sync.WaitGroup
	once   sync.Once

	mu      sync.Mutex
	sent    map[string]bool // hex: in the bucket now (created, or there already)
	created []string        // hex: created by this Sender
	bytes   int64
	failed  bool // a write failed: the rest is left to Publish
}

type sendJob struct{ hex, dir string }

const senderQueue = 256

// NewSender starts a Sender's workers; Finish or Abort stops them.
func NewSender(ctx context.Context, c *Client) *Sender {
	ctx, cancel := context.WithCancel(ctx)
	s := &Sender{c: c, ctx: ctx, cancel: cancel, work: make(chan sendJob, senderQueue), sent: map[string]bool{}}
	for range putWorkers {
		s.wg.Add(1)
		go s.run()
	}
	return s
}

// Staged queues blob d, staged at path (a file named by its hex digest),
// to be sent. It is store.ImportOptions.Staged, called only while the
// import runs (never after Finish or Abort).
func (s *Sender) Staged(d verify.Digest, path string) {
	hex := d.Hex()
	if !verify.IsHex64(hex) || filepath.Base(path) != hex {
		return
	}
	select {
	case s.work <- sendJob{hex: hex, dir: filepath.Dir(path)}:
	case <-s.ctx.Done():
	}
}

func (s *Sender) run() {
	defer s.wg.Done()
	for j := range s.work {
		s.mu.Lock()
		skip := s.failed || s.ctx.Err() != nil
		s.mu.Unlock()
		if skip {
			continue // (drained, so Staged never waits on a stopped Sender)
		}
		n, err := putBlobFile(s.ctx, s.c, j.dir, j.hex)
		s.mu.Lock()
		switch {
		case err != nil:
			// Publish sends it again and says what failed; a file gone
			// (the import ended) is not sent at all.
			s.failed = true
		case n < 0:
			s.sent[j.hex] = true
		default:
			s.sent[j.hex] = true
			s.created = append(s.created, j.hex)
			s.bytes += n
		}
		s.mu.Unlock()
	}
}

// Finish waits for the blobs queued so far to be sent and stops the
// workers; it says which blobs the bucket now has from this import
// (created, or there already), for Publish to skip.
func (s *Sender) Finish() map[string]bool {
	s.once.Do(func() {
		close(s.work)
		s.wg.Wait()
		s.cancel()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// Abort stops sending and deletes every blob this Sender created (an
// import that failed or was refused must leave the bucket as it was).
func (s *Sender) Abort() error {
	// Queued blobs are skipped, but a write in flight is left to finish
	// rather than cancelled: cancelled, the server may still have created
	// the object while this Sender saw only an error, and it would not be
	// deleted below (a refused import that changed the bucket).
	s.mu.Lock()
	s.failed = true
	s.mu.Unlock()
	s.Finish()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.mu.Lock()
	created := s.created
	s.created = nil
	s.mu.Unlock()
	var failed []string
	var first error
	for _, hex := range created {
		if err := s.c.Delete(ctx, BlobPrefix+hex); err != nil && !errors.Is(err, ErrNotFound) {
			failed = append(failed, hex)
			if first == nil {
				first = err
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of the %d blob(s) this import had already written to the bucket could not be deleted (%v); no index refers to them, and 'airgap gc' removes them", len(failed), len(created), first)
	}
	return nil
}
