package registrytest

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// AddDeltaBomb publishes https://github.com/<name>.git: a repository whose
// one commit holds base.tf (64 KiB of zeros) and big.tf, stored in the
// pack as a delta of base.tf that copies it size/64Ki times. The pack is a
// few KB whatever size is; a client resolving the delta (git index-pack,
// during the clone) must allocate size bytes. The pack and its index are
// written directly, so the stand-in never resolves the delta itself.
func (in *Internet) AddDeltaBomb(t testing.TB, name string, size int64) string {
	t.Helper()
	if err := writeDeltaBomb(filepath.Join(in.GitRoot, name+".git"), int(size/(64<<10))); err != nil {
		t.Fatal(err)
	}
	return "https://github.com/" + name + ".git"
}

type packObject struct {
	id       [20]byte
	data     []byte // the entry as the pack holds it
	off, crc uint32
}

// packHeader is a pack entry's type and size header.
func packHeader(typ int, size uint64) []byte {
	b := []byte{byte(typ<<4) | byte(size&15)}
	for size >>= 4; size > 0; size >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
	}
	return b
}

func deflate(p []byte) []byte {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	w.Write(p)
	w.Close()
	return b.Bytes()
}

func gitObjectID(typ string, body []byte) [20]byte {
	return sha1.Sum(append([]byte(fmt.Sprintf("%s %d\x00", typ, len(body))), body...))
}

// deltaVarint is a size in a delta's header: 7 bits a byte, low first.
func deltaVarint(n uint64) []byte {
	var b []byte
	for ; n >= 0x80; n >>= 7 {
		b = append(b, byte(n&0x7f)|0x80)
	}
	return append(b, byte(n))
}

func writeDeltaBomb(bare string, chunks int) error {
	const baseSize = 64 << 10
	base := make([]byte, baseSize)
	baseID := gitObjectID("blob", base)
	size := uint64(chunks) * baseSize
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	for i := 0; i < chunks; i++ {
		h.Write(base)
	}
	var bigID [20]byte
	copy(bigID[:], h.Sum(nil))
	// The delta: source size, result size, then one byte per 64 KiB: a
	// copy instruction with no offset or size bytes (offset 0, size 0x10000).
	delta := append(deltaVarint(baseSize), deltaVarint(size)...)
	delta = append(delta, bytes.Repeat([]byte{0x80}, chunks)...)
	var tree bytes.Buffer
	fmt.Fprintf(&tree, "100644 base.tf\x00%s", baseID[:])
	fmt.Fprintf(&tree, "100644 big.tf\x00%s", bigID[:])
	treeID := gitObjectID("tree", tree.Bytes())
	commit := []byte(fmt.Sprintf("tree %x\nauthor a <a@a> 1 +0000\ncommitter a <a@a> 1 +0000\n\nx\n", treeID))
	commitID := gitObjectID("commit", commit)
	objs := []*packObject{
		{id: baseID, data: append(packHeader(3, baseSize), deflate(base)...)},
		{id: bigID, data: append(append(packHeader(7, uint64(len(delta))), baseID[:]...), deflate(delta)...)}, // REF_DELTA
		{id: treeID, data: append(packHeader(2, uint64(tree.Len())), deflate(tree.Bytes())...)},
		{id: commitID, data: append(packHeader(1, uint64(len(commit))), deflate(commit)...)},
	}
	var pack bytes.Buffer
	pack.WriteString("PACK")
	binary.Write(&pack, binary.BigEndian, [2]uint32{2, uint32(len(objs))})
	for _, o := range objs {
		o.off, o.crc = uint32(pack.Len()), crc32.ChecksumIEEE(o.data)
		pack.Write(o.data)
	}
	packSum := sha1.Sum(pack.Bytes())
	pack.Write(packSum[:])
	// The pack index, version 2: fan-out, sorted names, CRCs, offsets.
	sorted := append([]*packObject(nil), objs...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i].id[:], sorted[j].id[:]) < 0 })
	var idx bytes.Buffer
	idx.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	for b := 0; b < 256; b++ {
		n := uint32(0)
		for _, o := range sorted {
			if int(o.id[0]) <= b {
				n++
			}
		}
		binary.Write(&idx, binary.BigEndian, n)
	}
	for _, o := range sorted {
		idx.Write(o.id[:])
	}
	for _, o := range sorted {
		binary.Write(&idx, binary.BigEndian, o.crc)
	}
	for _, o := range sorted {
		binary.Write(&idx, binary.BigEndian, o.off)
	}
	idx.Write(packSum[:])
	idxSum := sha1.Sum(idx.Bytes())
	idx.Write(idxSum[:])
	name := filepath.Join(bare, "objects", "pack", fmt.Sprintf("pack-%x", packSum))
	for path, body := range map[string][]byte{
		name + ".pack": pack.Bytes(), name + ".idx": idx.Bytes(),
		filepath.Join(bare, "HEAD"):               []byte("ref: refs/heads/main\n"),
		filepath.Join(bare, "config"):             []byte("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"),
		filepath.Join(bare, "refs/heads/main"):    []byte(fmt.Sprintf("%x\n", commitID)),
		filepath.Join(bare, "refs/tags/.keep"):    nil,
		filepath.Join(bare, "objects/info/.keep"): nil,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
