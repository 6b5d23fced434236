package store

import (
	"os"
	"sync"
)

// syncer makes staged blobs durable off the stream: the import writes a
// blob and hands its open file over, and the syncer fsyncs it, makes it
// read-only and closes it, one after the other, while the import goes on
// with the next blob (and the disk writes one back while the CPU unpacks
// another for its h1). wait returns once every file handed over is synced:
// the import calls it before anything is committed, so what the package doc says
// holds (every staged blob is on disk before the index that names it).
// At most syncQueue files wait, so the open files stay bounded.
type syncer struct {
	files chan *os.File
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	err   error
}

const syncQueue = 16

func newSyncer() *syncer {
	s := &syncer{files: make(chan *os.File, syncQueue), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *syncer) run() {
	defer close(s.done)
	for f := range s.files {
		err := f.Sync()
		if err == nil {
			err = f.Chmod(0o444)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
		}
	}
}

// add hands over a written file; it returns an earlier file's failure, if
// any (f is then closed and not synced).
func (s *syncer) add(f *os.File) error {
	if err := s.failed(); err != nil {
		f.Close()
		return err
	}
	s.files <- f
	return nil
}

func (s *syncer) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// wait syncs and closes every file handed over and returns the first
// failure. The syncer takes no more files after it.
func (s *syncer) wait() error {
	s.once.Do(func() { close(s.files) })
	<-s.done
	return s.failed()
}
