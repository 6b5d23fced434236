package bundle

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// aheadWriter writes to w from a goroutine of its own, in chunks of
// aheadChunk bytes, so that the bundle writer's goroutine reads and hashes
// the next chunk of a blob while this one is written: on two cores a
// bundle is written in the time of the slower of the two, not of their
// sum. When w is a regular file at an aligned offset (a new bundle file),
// the chunks are written with O_DIRECT (setDirect), from the buffer to the
// disk with no copy into the page cache, the last partial chunk without it;
// where O_DIRECT is refused, through the page cache, with the write-back of
// every aheadWriteback bytes started as they are written (startWriteback:
// sync_file_range on Linux). Either way the disk writes while the CPU works
// and the fsync at the end (CreateAtomic) finds little left. Memory:
// aheadChunks chunks.
type aheadWriter struct {
	w      io.Writer
	file   *os.File // w, if a regular file
	direct bool     // file is in O_DIRECT mode
	cur    []byte
	full   chan []byte
	free   chan []byte
	done   chan struct{}
	once   sync.Once

	mu  sync.Mutex
	err error

	written, synced int64 // by the goroutine
	directBytes     int64 // of written, with O_DIRECT
}

const (
	aheadChunk     = 1 << 20
	aheadChunks    = 4
	aheadWriteback = 32 << 20
)

func newAheadWriter(w io.Writer) *aheadWriter {
	a := &aheadWriter{w: w, full: make(chan []byte, aheadChunks), free: make(chan []byte, aheadChunks), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			a.file = f
			if off, err := f.Seek(0, io.SeekCurrent); err == nil {
				a.written, a.synced = off, off
				a.direct = off%directAlign == 0 && setDirect(f, true)
			}
		}
	}
	for range aheadChunks - 1 {
		a.free <- aligned(aheadChunk)[:0]
	}
	a.cur = aligned(aheadChunk)[:0]
	go a.run()
	return a
}

func (a *aheadWriter) run() {
	defer close(a.done)
	for b := range a.full {
		if a.failed() == nil {
			if err := a.write(b); err != nil {
				a.fail(err)
			} else if a.file != nil && !a.direct {
				if a.written-a.synced >= aheadWriteback {
					startWriteback(a.file, a.synced, a.written-a.synced)
					a.synced = a.written
				}
			}
		}
		a.free <- b[:0]
	}
}

// write writes one chunk: with O_DIRECT while chunks are whole (a short
// one is the last), and through the page cache from the first write
// O_DIRECT refuses on.
func (a *aheadWriter) write(b []byte) error {
	if a.direct && len(b)%directAlign != 0 {
		a.undirect()
	}
	n, err := a.w.Write(b)
	if a.direct && err == nil {
		a.directBytes += int64(n)
	}
	if a.direct && errors.Is(err, syscall.EINVAL) {
		a.undirect()
		var m int
		m, err = a.w.Write(b[n:])
		n += m
	}
	a.written += int64(n)
	return err
}

func (a *aheadWriter) undirect() {
	setDirect(a.file, false)
	a.direct = false
}

func (a *aheadWriter) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *aheadWriter) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

// Write copies p into chunks and hands the full ones to the goroutine; it
// returns the goroutine's first write error, if any.
func (a *aheadWriter) Write(p []byte) (int, error) {
	if err := a.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		c := copy(a.cur[len(a.cur):cap(a.cur)], p)
		a.cur = a.cur[:len(a.cur)+c]
		p = p[c:]
		if len(a.cur) == cap(a.cur) {
			a.full <- a.cur
			a.cur = <-a.free
		}
	}
	return n, nil
}

// Close writes what is left and waits for every write; it returns the
// first error. It does not close w.
func (a *aheadWriter) Close() error {
	a.once.Do(func() {
		if len(a.cur) > 0 {
			a.full <- a.cur
			a.cur = nil
		}
		close(a.full)
		<-a.done
	})
	return a.failed()
}

// abort stops the goroutine without writing what is pending (the bundle
// failed).
func (a *aheadWriter) abort() {
	a.fail(errors.New("bundle writer aborted"))
	a.cur = nil
	a.Close()
}

// copyBufs are the 1 MiB buffers of Copy.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// Copy copies r to w through a 1 MiB buffer, for the large sequential
// reads and writes of blobs (io.Copy would use 32 KiB, as os.File's
// ReadFrom does from anything but a file).
func Copy(w io.Writer, r io.Reader) (int64, error) {
	b := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(b)
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *b)
}
