package bundle

import (
	"archive/tar"
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

// Compression of a bundle stream.
type Compression string

const (
	CompressionZstd Compression = "zstd"
	CompressionNone Compression = "none"
)

// ParseCompression reads a --compression value.
func ParseCompression(s string) (Compression, error) {
	switch Compression(s) {
	case CompressionZstd, "":
		return CompressionZstd, nil
	case CompressionNone:
		return CompressionNone, nil
	}
	return "", fmt.Errorf("unknown compression %q (want zstd or none)", s)
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
	// (CheckOptions.SignedAt).
	SignTime time.Time
}

// Writer writes a bundle. The manifest and its signature are written by
// NewWriter; then every carried blob must be written with WriteBlob, in the
// manifest's order; Close finishes the stream (it does not close the
// underlying writer).
type Writer struct {
	tw      *tar.Writer
	zw      *zstd.Encoder
	blobs   []Blob
	next    int
	modTime time.Time
	err     error
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
	bw := &Writer{blobs: m.Carried(), modTime: opt.ModTime}
	if bw.modTime.IsZero() {
		bw.modTime = time.Unix(0, 0)
	}
	out := w
	if opt.Compression != CompressionNone {
		// One fixed encoder configuration, so output depends only on input.
		bw.zw, err = zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(2), zstd.WithWindowSize(8<<20))
		if err != nil {
			return nil, err
		}
		out = bw.zw
	}
	bw.tw = tar.NewWriter(out)
	if err := bw.entry(ManifestName, int64(len(data)), bytes.NewReader(data), nil); err != nil {
		return nil, err
	}
	if err := bw.entry(SignatureName, int64(sig.Len()), &sig, nil); err != nil {
		return nil, err
	}
	return bw, nil
}

func (bw *Writer) entry(name string, size int64, r io.Reader, d *verify.Digester) error {
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
	src := r
	if d != nil {
		src = io.TeeReader(r, d)
	}
	n, err := io.Copy(bw.tw, io.LimitReader(src, size))
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("writing %s: %w: source gave %d bytes, want %d", name, verify.ErrSizeMismatch, n, size)
	}
	return nil
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
	if err := bw.entry(EntryName(d), b.Size, r, dg); err != nil {
		bw.err = err
		return err
	}
	// The source must end where the blob ends.
	if n, _ := io.CopyN(io.Discard, r, 1); n != 0 {
		bw.err = fmt.Errorf("blob %s: %w: source is longer than %d bytes", d.Short(), verify.ErrSizeMismatch, b.Size)
		return bw.err
	}
	if err := dg.Check(d, b.Size); err != nil {
		bw.err = fmt.Errorf("blob %s (%s): %w", d.Short(), b.Role, err)
		return bw.err
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
			return fmt.Errorf("blob %s (%s): no file given for it", b.Digest.Short(), b.Role)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
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
// carried blob was written.
func (bw *Writer) Close() error {
	if bw.err != nil {
		return bw.err
	}
	if bw.next != len(bw.blobs) {
		return fmt.Errorf("bundle incomplete: %d of %d blobs written", bw.next, len(bw.blobs))
	}
	err := bw.tw.Close()
	if bw.zw != nil {
		err = errors.Join(err, bw.zw.Close())
	}
	return err
}
