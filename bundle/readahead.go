package bundle

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// readAhead reads a bundle file front to back from a goroutine of its
// own, aheadChunks chunks of aheadChunk bytes ahead of the reader, with
// O_DIRECT where the file system takes it: a bundle that arrived on a disk
// is not in the page cache, and reading it through the cache costs a copy
// of every byte that here took 13 % of an import's CPU (from pages just
// read from the disk), where O_DIRECT reads it into the chunk directly.
// Reads are of whole aligned chunks from offset 0; the first short read
// (the end of the file) turns O_DIRECT off, as does a read it refuses.
// Close stops the goroutine and closes the file.
type readAhead struct {
	f      *os.File
	direct bool
	ch     chan aheadChunkRead
	free   chan []byte
	cur    []byte // what is left of the chunk being read
	buf    []byte // its buffer, back to free once read
	err    error
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

type aheadChunkRead struct {
	b   []byte
	err error
}

func newReadAhead(f *os.File) *readAhead {
	r := &readAhead{f: f, ch: make(chan aheadChunkRead, aheadChunks), free: make(chan []byte, aheadChunks),
		stop: make(chan struct{}), done: make(chan struct{})}
	if off, err := f.Seek(0, io.SeekCurrent); err == nil && off%directAlign == 0 {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			r.direct = setDirect(f, true)
		}
	}
	for range aheadChunks {
		r.free <- aligned(aheadChunk)
	}
	go r.run()
	return r
}

func (r *readAhead) run() {
	defer close(r.done)
	defer close(r.ch)
	for {
		var b []byte
		select {
		case b = <-r.free:
		case <-r.stop:
			return
		}
		b = b[:cap(b)]
		n, err := r.f.Read(b)
		if r.direct && errors.Is(err, syscall.EINVAL) {
			r.undirect()
			n, err = r.f.Read(b)
		}
		if r.direct && n < len(b) {
			r.undirect() // the end of the file, at an unaligned offset
		}
		r.ch <- aheadChunkRead{b[:n], err}
		if err != nil {
			return
		}
	}
}

func (r *readAhead) undirect() {
	setDirect(r.f, false)
	r.direct = false
}

func (r *readAhead) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.buf != nil {
			r.free <- r.buf
			r.buf = nil
		}
		c, ok := <-r.ch
		if !ok {
			r.err = io.ErrClosedPipe
			continue
		}
		r.cur, r.buf, r.err = c.b, c.b, c.err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close stops the reading and closes the file.
func (r *readAhead) Close() error {
	r.once.Do(func() {
		close(r.stop)
		for range r.ch { // the goroutine may be sending: take it, let it end
		}
		<-r.done
	})
	return r.f.Close()
}
