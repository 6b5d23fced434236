package dist

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// H1 inflates with another library than dirhash.HashZip: it must give the
// same hash, and refuse the same damaged zips, on every shape of zip.
func TestH1MatchesDirhash(t *testing.T) {
	dir := t.TempDir()
	rnd := rand.New(rand.NewPCG(1, 2))
	text := bytes.Repeat([]byte("resource \"aws_instance\" \"x\" { ami = var.ami }\n"), 20000)
	noise := make([]byte, 3<<20)
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	type entry struct {
		name   string
		method uint16
		data   []byte
	}
	cases := map[string][]entry{
		"deflated binary and license": {{"terraform-provider-x_v1.0.0_x5", zip.Deflate, append(append([]byte{}, noise[:1<<20]...), text...)}, {"LICENSE.txt", zip.Deflate, text[:5000]}},
		"stored":                      {{"terraform-provider-x", zip.Store, noise}},
		"empty file":                  {{"empty", zip.Deflate, nil}, {"a", zip.Deflate, []byte("a")}},
		"directory entry":             {{"dir/", zip.Store, nil}, {"dir/f", zip.Deflate, text[:100]}},
		"duplicate names":             {{"x", zip.Deflate, []byte("first")}, {"x", zip.Deflate, []byte("second")}},
		"many small files":            nil,
	}
	for i := 0; i < 300; i++ {
		cases["many small files"] = append(cases["many small files"], entry{fmt.Sprintf("f%03d", i), zip.Deflate, text[:rnd.IntN(4000)]})
	}
	refused := 0
	for name, entries := range cases {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		for _, e := range entries {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
			if err != nil {
				t.Fatal(err)
			}
			w.Write(e.data)
		}
		zw.Close()
		good := filepath.Join(dir, "good.zip")
		os.WriteFile(good, b.Bytes(), 0o644)
		want, err := dirhash.HashZip(good, dirhash.Hash1)
		if err != nil {
			t.Fatal(name, err)
		}
		got, err := H1(good)
		if err != nil || got != want {
			t.Errorf("%s: H1 = %q, %v; dirhash.HashZip = %q", name, got, err, want)
		}
		// Damage a byte in the first entry's data: both must refuse it
		// (CRC-32 or a corrupt deflate stream) or, where the byte does not
		// matter, agree.
		if len(entries[0].data) == 0 {
			continue
		}
		bad := bytes.Clone(b.Bytes())
		bad[30+len(entries[0].name)+2] ^= 0x55
		os.WriteFile(good, bad, 0o644)
		wh, werr := dirhash.HashZip(good, dirhash.Hash1)
		gh, gerr := H1(good)
		if (werr == nil) != (gerr == nil) || gh != wh {
			t.Errorf("%s, damaged: H1 = %q, %v; dirhash.HashZip = %q, %v", name, gh, gerr, wh, werr)
		}
		if werr != nil {
			refused++
		}
	}
	if refused < 3 { // a damaged first "x" of the duplicates is never read, by either
		t.Errorf("only %d damaged zips were refused: the damage misses the data", refused)
	}
}

// H1Tap gives the h1 of H1 and shows each file's tap exactly the file's
// bytes (the Go build information scan reads the plugin through it).
func TestH1TapSeesEveryByte(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	files := map[string][]byte{"terraform-provider-x_v1.0.0": make([]byte, 5<<20), "LICENSE": []byte("license\n"), "docs/empty": nil}
	for i := range files["terraform-provider-x_v1.0.0"] {
		files["terraform-provider-x_v1.0.0"][i] = byte(rnd.Uint32() % 7) // compressible, as binaries are
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, data := range files {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		w.Write(data)
	}
	zw.Close()
	p := filepath.Join(t.TempDir(), "p.zip")
	os.WriteFile(p, b.Bytes(), 0o644)
	seen := map[string]*bytes.Buffer{}
	got, err := H1Tap(p, func(name string) io.Writer {
		if name == "LICENSE" {
			return nil // not tapped
		}
		seen[name] = &bytes.Buffer{}
		return seen[name]
	})
	want, _ := H1(p)
	if err != nil || got != want {
		t.Fatalf("H1Tap = %q, %v; H1 = %q", got, err, want)
	}
	if len(seen) != 2 || !bytes.Equal(seen["terraform-provider-x_v1.0.0"].Bytes(), files["terraform-provider-x_v1.0.0"]) || seen["docs/empty"].Len() != 0 {
		t.Fatalf("taps saw %d files, the plugin's %d bytes of %d", len(seen), seen["terraform-provider-x_v1.0.0"].Len(), len(files["terraform-provider-x_v1.0.0"]))
	}
}
