package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/verify"
	"github.com/klauspost/compress/zstd"
)

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxTrailing bounds the zero padding accepted after the end of the archive
// (tar implementations pad to a 10 KiB record; we allow more, not unbounded).
const maxTrailing = 1 << 20

// Reader reads a bundle, checking it as it goes. See the package doc.
type Reader struct {
	tr         *tar.Reader
	zr         *zstd.Decoder
	raw        *countingReader // the uncompressed tar stream
	manifest   *Manifest
	manifestB  []byte
	sigB       []byte
	signer     verify.Signer
	signedAt   time.Time
	keyring    openpgp.EntityList
	carried    []Blob
	next       int
	cur        *blobReader
	dataEnd    int64 // raw offset where the last entry's data ended
	dataSize   int64
	done       bool
	compressed bool
}

// NewReader reads the manifest and signature from r and checks the signature
// against keyring. It returns an error, and hands out nothing, unless the
// signature is good and the manifest valid.
func NewReader(r io.Reader, keyring openpgp.EntityList) (*Reader, error) {
	br2, err := openStream(r)
	if err != nil {
		return nil, err
	}
	mdata, err := br2.readSmall(ManifestName, MaxManifestSize)
	if err != nil {
		br2.Close()
		return nil, err
	}
	sig, err := br2.readSmall(SignatureName, MaxSignatureSize)
	if err != nil {
		br2.Close()
		if errors.Is(err, errMissing) {
			return nil, fmt.Errorf("%w: the bundle carries no %s\nhint: bundles must be written by 'airgap export' with --sign-key", verify.ErrUnsigned, SignatureName)
		}
		return nil, err
	}
	checked, err := verify.CheckSignature(keyring, bytes.NewReader(mdata), sig)
	if err != nil {
		br2.Close()
		switch {
		case errors.Is(err, verify.ErrUnknownSigner):
			return nil, fmt.Errorf("manifest signature: %w\nhint: add the exporting site's public key (its .pub.asc) to the keyring, after checking its fingerprint with the sender", err)
		case errors.Is(err, verify.ErrKeyRevoked):
			return nil, fmt.Errorf("manifest signature: %w\nhint: the site key that signed the bundle has been revoked; have it exported again with the site's current key", err)
		case errors.Is(err, verify.ErrKeyExpired):
			return nil, fmt.Errorf("manifest signature: %w\nhint: the bundle was signed after the site key expired; have it exported again with a current key (or extend the key's expiry and give this side the re-published key)", err)
		}
		return nil, fmt.Errorf("manifest signature: %w\nhint: the bundle was altered or damaged after it was signed; get a fresh copy", err)
	}
	m, err := ParseManifest(mdata)
	if err != nil {
		br2.Close()
		if errors.Is(err, ErrManifest) {
			err = fmt.Errorf("%w%s", err, HintInconsistent)
		}
		return nil, err
	}
	br2.manifest, br2.manifestB, br2.sigB, br2.signer, br2.signedAt, br2.keyring = m, mdata, sig, checked.Signer, checked.Created, keyring
	br2.carried = m.Carried()
	return br2, nil
}

var errMissing = errors.New("missing entry")

// openStream detects compression and sets up the tar reader.
func openStream(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	head, err := br.Peek(4)
	if err != nil && len(head) == 0 {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty", ErrTruncated)
		}
		return nil, err
	}
	br2 := &Reader{}
	var tarStream io.Reader = br
	if bytes.Equal(head, zstdMagic) {
		br2.zr, err = zstd.NewReader(br, zstd.WithDecoderConcurrency(2),
			zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderMaxMemory(1<<40), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
		tarStream = br2.zr
		br2.compressed = true
	}
	br2.raw = &countingReader{r: tarStream}
	br2.tr = tar.NewReader(br2.raw)
	return br2, nil
}

func (br *Reader) readSmall(name string, limit int64) ([]byte, error) {
	hdr, err := br.tr.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: %w: %s", ErrFormat, errMissing, name)
	}
	if err != nil {
		return nil, br.streamErr(err, "reading "+name)
	}
	if err := checkHeader(hdr); err != nil {
		return nil, err
	}
	if hdr.Name != name {
		if name == SignatureName && strings.HasPrefix(hdr.Name, blobPrefix) {
			return nil, fmt.Errorf("%w: %w: %s", ErrFormat, errMissing, name)
		}
		return nil, fmt.Errorf("%w: entry %q where %s was expected", ErrFormat, hdr.Name, name)
	}
	if hdr.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", ErrFormat, name, hdr.Size, limit)
	}
	data := make([]byte, hdr.Size)
	if _, err := io.ReadFull(br.tr, data); err != nil {
		return nil, br.streamErr(err, "reading "+name)
	}
	br.dataEnd, br.dataSize = br.raw.n, hdr.Size
	return data, nil
}

// checkHeader refuses anything but a plain regular file with a clean name.
func checkHeader(h *tar.Header) error {
	if h.Name == "" || strings.HasPrefix(h.Name, "/") || path.Clean(h.Name) != h.Name ||
		strings.Contains(h.Name, "\\") || h.Name == ".." || strings.HasPrefix(h.Name, "../") || strings.Contains(h.Name, "/../") {
		return fmt.Errorf("%w: unsafe entry name %q", ErrFormat, h.Name)
	}
	switch h.Typeflag {
	case tar.TypeReg:
	case tar.TypeSymlink, tar.TypeLink:
		return fmt.Errorf("%w: entry %q is a link (to %q); bundles hold only regular files", ErrFormat, h.Name, h.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return fmt.Errorf("%w: entry %q is a device or fifo; bundles hold only regular files", ErrFormat, h.Name)
	case tar.TypeDir:
		return fmt.Errorf("%w: entry %q is a directory; bundles hold only regular files", ErrFormat, h.Name)
	default:
		return fmt.Errorf("%w: entry %q has unsupported type %q", ErrFormat, h.Name, h.Typeflag)
	}
	if h.Size < 0 {
		return fmt.Errorf("%w: entry %q has a negative size", ErrFormat, h.Name)
	}
	return nil
}

func (br *Reader) streamErr(err error, what string) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: the stream ended early\nhint: the copy is incomplete; copy the bundle again and compare its size", ErrTruncated, what)
	}
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrInsecurePath) {
		return fmt.Errorf("%w: %s: %v", ErrFormat, what, err)
	}
	if br.compressed && strings.HasPrefix(err.Error(), "zstd") || errors.Is(err, zstd.ErrMagicMismatch) ||
		errors.Is(err, zstd.ErrCRCMismatch) {
		return fmt.Errorf("%w: %s: corrupt compressed stream: %v\nhint: the file was damaged in transit; copy it again", ErrFormat, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Manifest returns the checked manifest.
func (br *Reader) Manifest() *Manifest { return br.manifest }

// ManifestBytes returns the manifest exactly as signed.
func (br *Reader) ManifestBytes() []byte { return br.manifestB }

// SignatureBytes returns manifest.json.sig exactly as it came (what a
// store keeps, with the manifest, for the bundle's chain of custody).
func (br *Reader) SignatureBytes() []byte { return br.sigB }

// ID is the bundle's identity: the digest of its manifest.
func (br *Reader) ID() verify.Digest { return verify.DigestBytes(br.manifestB) }

// Signer is the key that signed the manifest.
func (br *Reader) Signer() verify.Signer { return br.signer }

// SignedAt is the creation time of the manifest's signature, as the
// signature says (the exporting machine's clock; see check.Options).
func (br *Reader) SignedAt() time.Time { return br.signedAt }

// Keyring is the keyring the manifest's signature was checked against (the
// keys trusted to sign bundles).
func (br *Reader) Keyring() openpgp.EntityList { return br.keyring }

// Compressed reports whether the stream was zstd-compressed.
func (br *Reader) Compressed() bool { return br.compressed }

// Next returns the next carried blob and a reader of its bytes, which checks
// size and digest and returns an error instead of io.EOF if they are wrong.
// If the previous blob was not read to its end, Next reads (and checks) the
// rest first. After the last blob Next checks the end of the stream and
// returns io.EOF.
func (br *Reader) Next() (Blob, io.Reader, error) {
	if br.cur != nil {
		if _, err := io.Copy(io.Discard, br.cur); err != nil {
			return Blob{}, nil, err
		}
		br.cur = nil
	}
	if br.done {
		return Blob{}, nil, io.EOF
	}
	if br.next == len(br.carried) {
		if err := br.finish(); err != nil {
			return Blob{}, nil, err
		}
		br.done = true
		return Blob{}, nil, io.EOF
	}
	want := br.carried[br.next]
	hdr, err := br.tr.Next()
	if err == io.EOF {
		return Blob{}, nil, fmt.Errorf("%w: the stream ends after %d of %d blobs; missing %s (%s)\nhint: the copy is incomplete or the bundle was cut; copy it again",
			ErrTruncated, br.next, len(br.carried), want.Digest.Short(), want.Role)
	}
	if err != nil {
		return Blob{}, nil, br.streamErr(err, "reading blob "+want.Digest.Short())
	}
	if err := checkHeader(hdr); err != nil {
		return Blob{}, nil, err
	}
	if hdr.Name != EntryName(want.Digest) {
		return Blob{}, nil, br.unexpected(hdr.Name, want)
	}
	if hdr.Size != want.Size {
		return Blob{}, nil, fmt.Errorf("%w: blob %s (%s) is %d bytes in the tar, %d in the manifest", ErrFormat, want.Digest.Short(), want.Role, hdr.Size, want.Size)
	}
	br.next++
	br.cur = &blobReader{br: br, blob: want, d: verify.NewDigester()}
	return want, br.cur, nil
}

func (br *Reader) unexpected(name string, want Blob) error {
	if h, ok := strings.CutPrefix(name, blobPrefix); ok {
		for i, b := range br.carried {
			if b.Digest.Hex() != h {
				continue
			}
			if i < br.next {
				return fmt.Errorf("%w: blob %s appears twice", ErrFormat, b.Digest.Short())
			}
			return fmt.Errorf("%w: blob %s (%s) is missing or out of order (found %s)", ErrFormat, want.Digest.Short(), want.Role, b.Digest.Short())
		}
		return fmt.Errorf("%w: entry %q is not in the manifest", ErrFormat, name)
	}
	if name == ManifestName || name == SignatureName {
		return fmt.Errorf("%w: a second %s", ErrFormat, name)
	}
	return fmt.Errorf("%w: unexpected entry %q", ErrFormat, name)
}

// finish checks that the archive ends properly after the last blob, with
// nothing but zero padding after it.
func (br *Reader) finish() error {
	hdr, err := br.tr.Next()
	if err == nil {
		if strings.HasPrefix(hdr.Name, blobPrefix) {
			return br.unexpected(hdr.Name, Blob{})
		}
		return fmt.Errorf("%w: unexpected extra entry %q after the last blob", ErrFormat, hdr.Name)
	}
	if err != io.EOF {
		return br.streamErr(err, "reading the end of the archive")
	}
	pad := (512 - br.dataSize%512) % 512
	if br.raw.n-(br.dataEnd+pad) < 1024 {
		return fmt.Errorf("%w: the end-of-archive marker is missing", ErrTruncated)
	}
	var buf [4096]byte
	var total int64
	for {
		n, err := br.raw.Read(buf[:])
		for _, c := range buf[:n] {
			if c != 0 {
				return fmt.Errorf("%w: data after the end of the archive", ErrFormat)
			}
		}
		total += int64(n)
		if total > maxTrailing {
			return fmt.Errorf("%w: more than %d bytes after the end of the archive", ErrFormat, maxTrailing)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return br.streamErr(err, "reading the end of the archive")
		}
	}
}

// Close releases the decompressor. It does not close the underlying reader.
func (br *Reader) Close() {
	if br.zr != nil {
		br.zr.Close()
	}
}

type blobReader struct {
	br   *Reader
	blob Blob
	d    *verify.Digester
	err  error
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.br.tr.Read(p)
	b.d.Write(p[:n])
	if err == io.EOF {
		b.br.dataEnd, b.br.dataSize = b.br.raw.n, b.blob.Size
		if cerr := b.d.Check(b.blob.Digest, b.blob.Size); cerr != nil {
			b.err = fmt.Errorf("blob %s (%s): %w\nhint: the bundle was altered or damaged after it was signed; get a fresh copy", b.blob.Digest.Short(), b.br.manifest.Describe(b.blob.Digest), cerr)
			return n, b.err
		}
		b.err = io.EOF
		return n, io.EOF
	}
	if err != nil {
		b.err = b.br.streamErr(err, fmt.Sprintf("reading blob %s (%s)", b.blob.Digest.Short(), b.blob.Role))
		return n, b.err
	}
	return n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
