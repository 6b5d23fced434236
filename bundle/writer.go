package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/verify"
	"github.com/klauspost/compress/zstd"
)

// Compression of a bundle stream (see the package doc).
type Compression string

const (
	// CompressionAuto compresses what compresses (the manifest,
	// SHA256SUMS, text: anything whose first MiB zstd shrinks by at least
	// a 32nd) and stores the rest (zips, gzip tarballs) as raw zstd
	// blocks: about zstd's size at the speed of a copy.
	CompressionAuto Compression = "auto"
	// CompressionZstd compresses the whole stream as one zstd frame.
	CompressionZstd Compression = "zstd"
	// CompressionNone writes the plain tar stream.
	CompressionNone Compression = "none"
)

// ParseCompression reads a --compression value ("" is auto).
func ParseCompression(s string) (Compression, error) {
	switch Compression(s) {
	case CompressionAuto, "":
		return CompressionAuto, nil
	case CompressionZstd:
		return CompressionZstd, nil
	case CompressionNone:
		return CompressionNone, nil
	}
	return "", fmt.Errorf("unknown compression %q (want auto, zstd or none)", s)
}

// newEncoder is the one zstd encoder configuration bundles are written
// with, so that output depends only on input.
func newEncoder(w io.Writer) (*zstd.Encoder, error) {
	return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(2), zstd.WithWindowSize(8<<20))
}

// Auto's decision: an entry is compressed when zstd at its fastest level
// makes the first sampleSize bytes at least a 32nd smaller. Deflated zips
// and gzip tarballs gain nothing (measured: 0.005% on provider zips);
// text gains 70-90%, a zip of stored binaries about half.
const sampleSize = 1 << 20

var sampler, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))

func compressible(sample []byte) bool {
	if len(sample) == 0 {
		return true
	}
	out := sampler.EncodeAll(sample, make([]byte, 0, len(sample)))
	return len(out) <= len(sample)-len(sample)/32
}

// WriterOptions configure NewWriter.
type WriterOptions struct {
	Compression Compression
	// ModTime is written into every tar header and is the signature time;
	// zero means the Unix epoch in headers and "now" for the signature.
	// Exports set it from SOURCE_DATE_EPOCH.
	ModTime time.Time
	// SignTime, if set, is the signature time instead of ModTime. Export
	// sets it to the later of ModTime and the newest SHA256SUMS signature
	// it carries: a bundle's signature may not predate what it carries
	// (check.Options.SignedAt).
	SignTime time.Time
}

// Writer writes a bundle. The manifest and its signature are written by
// NewWriter; then every carried blob must be written with WriteBlob, in the
// manifest's order; Close finishes the stream (it does not close the
// underlying writer). It writes to the underlying writer in chunks of
// 1 MiB.
type Writer struct {
	tw   *tar.Writer
	zw   *zstd.Encoder // CompressionZstd
	enc  *zstd.Encoder // zw's or fr's, if any
	fr   *frames       // CompressionAuto
	out  *aheadWriter
	head *bufio.Reader // the sample auto decides by
	buf  []byte        // copy buffer
	// hashBufs are copyHashing's buffers, made at its first call.
	hashBufs [][]byte
	blobs    []Blob
	next     int
	modTime  time.Time
	err      error
}

// NewWriter writes the manifest, signed by signer, and returns a Writer for
// the blobs. m is normalized and validated first.
func NewWriter(w io.Writer, m *Manifest, signer *openpgp.Entity, opt WriterOptions) (*Writer, error) {
	m.Normalize()
	if m.Format == 0 {
		m.Format = FormatVersion
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	data, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("manifest is %d bytes, over the %d-byte limit", len(data), MaxManifestSize)
	}
	at := opt.SignTime
	if at.IsZero() {
		at = opt.ModTime
	}
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, signer, bytes.NewReader(data), at); err != nil {
		return nil, err
	}
	comp, err := ParseCompression(string(opt.Compression))
	if err != nil {
		return nil, err
	}
	bw := &Writer{blobs: m.Carried(), modTime: opt.ModTime, buf: make([]byte, 1<<20)}
	if bw.modTime.IsZero() {
		bw.modTime = time.Unix(0, 0)
	}
	var enc *zstd.Encoder
	if comp != CompressionNone {
		if enc, err = newEncoder(nil); err != nil {
			return nil, err
		}
	}
	bw.enc = enc
	bw.out = newAheadWriter(w)
	var tarOut io.Writer = bw.out
	switch comp {
	case CompressionZstd:
		enc.Reset(bw.out)
		bw.zw, tarOut = enc, enc
	case CompressionAuto:
		bw.fr = newFrames(bw.out, enc)
		bw.head = bufio.NewReaderSize(nil, sampleSize)
		tarOut = bw.fr
	}
	bw.tw = tar.NewWriter(tarOut)
	if err := bw.entry(ManifestName, int64(len(data)), bytes.NewReader(data), nil); err != nil {
		bw.out.abort()
		return nil, err
	}
	if err := bw.entry(SignatureName, int64(sig.Len()), &sig, nil); err != nil {
		bw.out.abort()
		return nil, err
	}
	return bw, nil
}

// failed records the writer's first error and stops writing.
func (bw *Writer) failed(err error) error {
	if bw.err == nil {
		bw.err = err
		if bw.enc != nil {
			// The encoder writes to out from goroutines of its own:
			// they end before out is dropped (Reset waits for them).
			bw.enc.Reset(io.Discard)
		}
		bw.out.abort()
	}
	return bw.err
}

// entry writes one tar entry of size bytes from r, into the kind of zstd
// frame its bytes call for (auto).
func (bw *Writer) entry(name string, size int64, r io.Reader, d *verify.Digester) error {
	if bw.fr != nil {
		if r != io.Reader(bw.head) {
			bw.head.Reset(r)
			r = bw.head
		}
		sample, err := bw.head.Peek(int(min(size, sampleSize)))
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if err := bw.fr.open(compressible(sample)); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Size:     size,
		Mode:     0o444,
		ModTime:  bw.modTime,
	}
	if err := bw.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	var n int64
	var err error
	if d != nil {
		n, err = bw.copyHashing(io.LimitReader(r, size), d)
	} else {
		n, err = io.CopyBuffer(bw.tw, io.LimitReader(r, size), bw.buf)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("writing %s: %w: source gave %d bytes, want %d", name, verify.ErrSizeMismatch, n, size)
	}
	return nil
}

// hashBufs is how many copy buffers copyHashing rotates: one being
// hashed, one being written, one being read.
const hashBufs = 3

// copyHashing copies r into the tar stream and hashes into d exactly the
// bytes it writes, the hashing on a goroutine of its own: each buffer is
// read, handed to the hasher and written (both only read it), and filled
// again only once the hasher has handed it back. On two cores a blob is
// then copied in the time of the slower of hashing and copying rather
// than of their sum (sha256 was four fifths of the copying goroutine's
// time in a warm export). Memory: hashBufs copy buffers.
func (bw *Writer) copyHashing(r io.Reader, d *verify.Digester) (n int64, err error) {
	if bw.hashBufs == nil {
		for range hashBufs {
			bw.hashBufs = append(bw.hashBufs, make([]byte, len(bw.buf)))
		}
	}
	free := make(chan []byte, hashBufs)
	for _, b := range bw.hashBufs {
		free <- b
	}
	work := make(chan []byte, hashBufs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range work {
			d.Write(b)
			free <- b[:cap(b)]
		}
	}()
	defer func() {
		close(work)
		<-done // the hasher is done with d and the buffers
	}()
	for {
		b := <-free
		m, rerr := r.Read(b)
		if m > 0 {
			work <- b[:m]
			if _, werr := bw.tw.Write(b[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
		} else {
			free <- b
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// WriteBlob writes the next carried blob from r, which must give exactly the
// blob's bytes; the digest is checked while copying.
func (bw *Writer) WriteBlob(d verify.Digest, r io.Reader) error {
	if bw.err != nil {
		return bw.err
	}
	if bw.next >= len(bw.blobs) {
		return fmt.Errorf("blob %s: every blob in the manifest is already written", d.Short())
	}
	b := bw.blobs[bw.next]
	if b.Digest != d {
		return fmt.Errorf("blob %s written out of order: next is %s", d.Short(), b.Digest.Short())
	}
	dg := verify.NewDigester()
	if bw.fr != nil {
		// entry reads r through the sampling buffer, so the end of r is
		// checked there too.
		bw.head.Reset(r)
		r = bw.head
	}
	if err := bw.entry(EntryName(d), b.Size, r, dg); err != nil {
		return bw.failed(err)
	}
	// The source must end where the blob ends.
	if n, _ := io.CopyN(io.Discard, r, 1); n != 0 {
		return bw.failed(fmt.Errorf("blob %s: %w: source is longer than %d bytes", d.Short(), verify.ErrSizeMismatch, b.Size))
	}
	if err := dg.Check(d, b.Size); err != nil {
		return bw.failed(fmt.Errorf("blob %s (%s): %w", d.Short(), b.Role, err))
	}
	bw.next++
	return nil
}

// WriteFiles writes every carried blob not yet written from the file
// files[digest]: the sugar for callers whose blobs are on disk.
func (bw *Writer) WriteFiles(files map[verify.Digest]string) error {
	for _, b := range bw.Remaining() {
		path, ok := files[b.Digest]
		if !ok {
			return bw.failed(fmt.Errorf("blob %s (%s): no file given for it", b.Digest.Short(), b.Role))
		}
		f, err := os.Open(path)
		if err != nil {
			return bw.failed(err)
		}
		err = bw.WriteBlob(b.Digest, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Remaining lists the carried blobs not yet written.
func (bw *Writer) Remaining() []Blob { return bw.blobs[bw.next:] }

// Close ends the tar stream and the compression, after checking that every
// carried blob was written, and writes out what is buffered.
func (bw *Writer) Close() error {
	if bw.err != nil {
		return bw.err
	}
	if bw.next != len(bw.blobs) {
		return bw.failed(fmt.Errorf("bundle incomplete: %d of %d blobs written", bw.next, len(bw.blobs)))
	}
	if bw.fr != nil {
		// The end-of-archive marker compresses.
		if err := bw.fr.open(true); err != nil {
			return err
		}
	}
	err := bw.tw.Close()
	if bw.zw != nil {
		err = errors.Join(err, bw.zw.Close())
	}
	if bw.fr != nil {
		err = errors.Join(err, bw.fr.Close())
	}
	return errors.Join(err, bw.out.Close())
}
