package dist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// tokenDepth is the depth of a valid JSON text by json.Decoder.Token: what
// checkJSONDepth must agree with.
func tokenDepth(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		t, err := dec.Token()
		if err != nil {
			return deepest
		}
		if d, ok := t.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
				deepest = max(deepest, depth)
			} else {
				depth--
			}
		}
	}
}

func TestJSONLimit(t *testing.T) {
	l := JSONLimit{MaxBytes: 64, MaxDepth: 3}
	var v any
	for _, c := range []struct {
		doc  string
		want error
	}{
		{`[[[1]]]`, nil},
		{`[[[[1]]]]`, ErrJSONTooDeep},
		{`{"a":{"b":{"c":{}}}}`, ErrJSONTooDeep},
		{`["[[[[[", "\"[[[[", {"}}}": "\\"}]`, nil}, // brackets in strings, escaped quotes
		{strings.Repeat(" ", 65), ErrJSONTooLarge},
	} {
		if err := l.Unmarshal([]byte(c.doc), &v); !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.doc, err, c.want)
		}
	}
	for _, bad := range []string{`[1] [2]`, `[1`, `{"a":}`, ``} {
		if err := l.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var s struct{ A int }
	if err := (JSONLimit{MaxBytes: 64, MaxDepth: 3, Strict: true}).Unmarshal([]byte(`{"A":1,"B":2}`), &s); err == nil {
		t.Error("Strict accepted an unknown key")
	}
	if err := l.Decode(strings.NewReader(`[`+strings.Repeat(" ", 100)+`]`), &v); !errors.Is(err, ErrJSONTooLarge) {
		t.Errorf("Decode of 102 bytes with a 64-byte limit: %v", err)
	}
}

// TestJSONStream: the stream refuses the first level too deep, also in a
// value it skips or decodes whole, and refusing 64 MiB of '[' costs next
// to no memory (json.Decoder alone keeps a word per open level: 512 MiB
// for this one, 2 GiB for 255 MiB).
func TestJSONStream(t *testing.T) {
	l := JSONLimit{MaxBytes: 1 << 30, MaxDepth: 4}
	read := func(doc string) error {
		js := l.Stream(strings.NewReader(doc))
		err := js.Object(func(key string) error {
			if key == "decode" {
				var v any
				return js.Decode(&v)
			}
			return js.Skip()
		})
		if err == nil {
			err = js.End()
		}
		return err
	}
	for doc, want := range map[string]error{
		`{"skip":[[[1]]]}`:          nil,
		`{"skip":[[[[1]]]]}`:        ErrJSONTooDeep,
		`{"decode":[[[1]]]}`:        nil,
		`{"decode":[[[{"a":1}]]]}`:  ErrJSONTooDeep,
		`{"decode":1} 2`:            errors.New("data after"),
		`{"skip":"[[[[[[[[[[[[[["}`: nil,
	} {
		err := read(doc)
		if want == nil && err != nil || want != nil && (err == nil || !errors.Is(err, want) && !strings.Contains(err.Error(), want.Error())) {
			t.Errorf("%s: %v, want %v", doc, err, want)
		}
	}
	small := JSONLimit{MaxBytes: 10, MaxDepth: 4}.Stream(strings.NewReader(`{"a":"0123456789"}`))
	if err := small.Object(func(string) error { return small.Skip() }); !errors.Is(err, ErrJSONTooLarge) || !small.Over() {
		t.Errorf("a 20-byte document with a 10-byte limit: %v (over %v)", err, small.Over())
	}

	bomb := io.MultiReader(strings.NewReader(`{"x":`), bytes.NewReader(bytes.Repeat([]byte("["), 64<<20)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	js := JSONLimit{MaxBytes: 256 << 20, MaxDepth: 16}.Stream(bomb)
	err := js.Object(func(string) error { return js.Skip() })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrJSONTooDeep) {
		t.Errorf("64 MiB of '[': %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("refusing 64 MiB of '[' allocated %d MiB", grew>>20)
	}
}

// FuzzJSONLimit: on any input, checkJSONDepth agrees with json.Decoder's
// tokens on valid JSON, and Unmarshal within the limit decodes what
// json.Unmarshal decodes.
func FuzzJSONLimit(f *testing.F) {
	for _, s := range []string{`[[1]]`, `{"a":["\"[",{"b":null}]}`, `"\\\\"`, `[1] x`, `{"a":[[[[[[[]]]]]]]}`, `[`} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, depth int) {
		depth = depth%40 + 1
		if depth < 1 {
			depth += 40
		}
		var got, want any
		err := JSONLimit{MaxBytes: 1 << 20, MaxDepth: depth}.Unmarshal(data, &got)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			checkJSONDepth(data, depth) // any bytes: no panic
			return
		}
		d := tokenDepth(data)
		if (checkJSONDepth(data, depth) == nil) != (d <= depth) {
			t.Fatalf("%q: depth %d by tokens, limit %d: %v", data, d, depth, checkJSONDepth(data, depth))
		}
		if d > depth {
			if !errors.Is(err, ErrJSONTooDeep) {
				t.Fatalf("%q nested %d deep, limit %d: %v", data, d, depth, err)
			}
			return
		}
		if json.Unmarshal(data, &want) != nil {
			return // valid but not decodable here (e.g. a number out of range)
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: %v %v, json.Unmarshal %v", data, got, err, want)
		}
	})
}

// BenchmarkJSONDepth: the depth pass JSONLimit makes (json.Valid and a
// bracket count) against one with json.Decoder.Token, on a manifest-like
// document.
func BenchmarkJSONDepth(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"format":2,"catalog":{"providers":[`)
	for i := range 20000 {
		if i > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, `{"host":"registry.terraform.io","namespace":"hashicorp","type":"t%05d","version":"1.0.%d","packages":[{"os":"linux","arch":"amd64","filename":"terraform-provider-t_1.0.0_linux_amd64.zip","digest":"sha256:%064d","size":123456,"h1":"h1:abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG="}]}`, i, i, i)
	}
	doc.WriteString(`]}}`)
	data := doc.Bytes()
	b.Run("valid+count", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if !json.Valid(data) || checkJSONDepth(data, 32) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("count", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if checkJSONDepth(data, 32) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("Decoder.Token", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if tokenDepth(data) > 32 {
				b.Fatal("refused")
			}
		}
	})
}
