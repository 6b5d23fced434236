package bundle

import (
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
)

// frames writes the zstd stream of a CompressionAuto bundle: a sequence of
// standard zstd frames (RFC 8878), each either compressed by the encoder
// (what compresses: the manifest, SHA256SUMS, text) or made of
// raw blocks, the bytes as they are behind a 3-byte block header every
// 128 KiB (what does not: zips and gzip tarballs, on which zstd spends
// about 1 s of CPU per GiB for 0.2 %). Any zstd decoder
// reads the result as one stream, so the bundle is still "a tar stream,
// zstd-compressed" to every reader, airgap's old ones and 'zstd -d'
// included.
//
// klauspost/compress's encoder has no stored mode (it falls back to raw
// blocks only after trying to compress each one), so raw frames are
// written here: a frame header of magic number, descriptor and window
// size, then raw blocks, the last one flagged (RFC 8878 sections 3.1.1.1
// and 3.1.1.2). No content checksum: every blob carries its own sha256,
// checked by the reader.
type frames struct {
	w   io.Writer
	enc *zstd.Encoder
	raw bool   // a raw frame is open
	zst bool   // a compressed frame is open
	blk []byte // 3 bytes of block header, then the pending block
	n   int    // bytes pending in blk[3:]
	err error
}

// maxRawBlock is the block size of raw frames: the largest zstd allows,
// and their window size (rawWindowDescriptor), so a decoder needs no more
// memory for them than for one block.
const maxRawBlock = 128 << 10

// rawFrameHeader is the zstd magic number, a frame header descriptor of 0
// (no content size, not single-segment, no checksum, no dictionary) and a
// window descriptor of 128 KiB (exponent 7: 1 << (10+7)).
var rawFrameHeader = []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3}

func newFrames(w io.Writer, enc *zstd.Encoder) *frames {
	return &frames{w: w, enc: enc, blk: make([]byte, 3+maxRawBlock)}
}

// Write writes p into the open frame (open chooses its kind).
func (f *frames) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !f.raw && !f.zst {
		f.err = errors.New("internal error: bundle frame written before it was opened")
		return 0, f.err
	}
	if f.zst {
		n, err := f.enc.Write(p)
		f.err = err
		return n, err
	}
	total := len(p)
	for len(p) > 0 {
		if f.n == maxRawBlock {
			if f.err = f.block(false); f.err != nil {
				return total - len(p), f.err
			}
		}
		c := copy(f.blk[3+f.n:], p)
		f.n += c
		p = p[c:]
	}
	return total, nil
}

// open makes the open frame one of the given kind (compressed or raw),
// ending the open one if it is of the other kind.
func (f *frames) open(compressed bool) error {
	if f.err != nil {
		return f.err
	}
	if f.raw || f.zst {
		if compressed == f.zst {
			return nil
		}
		if f.err = f.end(); f.err != nil {
			return f.err
		}
	}
	if compressed {
		f.enc.Reset(f.w)
		f.zst = true
		return nil
	}
	if _, f.err = f.w.Write(rawFrameHeader); f.err != nil {
		return f.err
	}
	f.raw, f.n = true, 0
	return nil
}

// block writes the pending raw block.
func (f *frames) block(last bool) error {
	h := uint32(f.n)<<3 | 0<<1 // block type 0: raw
	if last {
		h |= 1
	}
	f.blk[0], f.blk[1], f.blk[2] = byte(h), byte(h>>8), byte(h>>16)
	_, err := f.w.Write(f.blk[:3+f.n])
	f.n = 0
	return err
}

// end ends the open frame, if any.
func (f *frames) end() error {
	switch {
	case f.zst:
		f.zst = false
		return f.enc.Close()
	case f.raw:
		f.raw = false
		return f.block(true)
	}
	return nil
}

// Close ends the last frame. It does not close the underlying writer.
func (f *frames) Close() error {
	if f.err != nil {
		return f.err
	}
	f.err = f.end()
	return f.err
}
