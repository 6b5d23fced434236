package dist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSONLimit bounds a JSON document of untrusted input: at most MaxBytes
// bytes, values nested at most MaxDepth arrays and objects deep. Every
// reader of JSON that crossed the gap or came from a registry goes through
// one (Unmarshal, Decode, or Stream for a document too large to hold),
// and states its bound where it is declared.
//
// Why a bound on depth: json.Decoder.Token keeps a word per open array or
// object and has no limit of its own, so a stream reader given 255 MiB of
// '[' held 2 GiB in its stack of open values (6-7 GB at its peak, 20-30 s)
// before it found the document was not what it wanted. json.Unmarshal
// stops at 10,000 levels, but a reader should refuse what it cannot mean
// at the first level too deep, not decode ten thousand.
//
// How: a count of the brackets outside strings finds the depth
// (checkJSONDepth, about 1 GB/s), the standard library checks the syntax
// (json.Valid: constant memory per level, no allocation), then
// encoding/json decodes. A pre-pass with json.Decoder.Token would do the
// same with an allocation per string and number token, several times the
// cost on a 64 MiB manifest (BenchmarkJSONDepth).
type JSONLimit struct {
	MaxBytes int64
	MaxDepth int
	// Strict refuses object keys the destination does not have
	// (json.Decoder.DisallowUnknownFields).
	Strict bool
}

// Errors of a document over its JSONLimit.
var (
	ErrJSONTooLarge = errors.New("JSON document over its size limit")
	ErrJSONTooDeep  = errors.New("JSON values nested over the depth limit")
)

// Unmarshal checks data against l (size, syntax, depth) and decodes it
// into v; nothing but white space may follow the one value.
func (l JSONLimit) Unmarshal(data []byte, v any) error {
	if err := l.Check(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if l.Strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// Check checks data against l without decoding it: its size, its syntax
// and its depth (for a caller that decodes it more than once).
func (l JSONLimit) Check(data []byte) error {
	if int64(len(data)) > l.MaxBytes {
		return fmt.Errorf("%w: %d bytes, over %d", ErrJSONTooLarge, len(data), l.MaxBytes)
	}
	if err := checkJSONDepth(data, l.MaxDepth); err != nil {
		return err
	}
	if !json.Valid(data) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil { // the standard library's message
			return err
		}
		return errors.New("invalid JSON")
	}
	return nil
}

// Decode reads r to its end, at most l.MaxBytes (ErrJSONTooLarge for
// more, without reading past it), and Unmarshals it into v.
func (l JSONLimit) Decode(r io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, l.MaxBytes+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > l.MaxBytes {
		return fmt.Errorf("%w: over %d bytes", ErrJSONTooLarge, l.MaxBytes)
	}
	return l.Unmarshal(data, v)
}

// checkJSONDepth returns ErrJSONTooDeep if an array or object of data, a
// well-formed JSON text (json.Valid), is nested deeper than max levels;
// the top-level value is level 1. It counts the brackets outside strings:
// on text that is not JSON it still finds how deeply a recursive parser of
// that text would descend (tfconfig checks .tf.json so before HCL parses
// it), in constant memory.
func checkJSONDepth(data []byte, max int) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = stringEnd(data, i+1)
		case '[', '{':
			if depth++; depth > max {
				return fmt.Errorf("%w of %d", ErrJSONTooDeep, max)
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// stringEnd is the index of the quote that ends the string whose text
// starts at i (len(data) if none does): the next quote not escaped by an
// odd run of backslashes.
func stringEnd(data []byte, i int) int {
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return len(data)
		}
		j += i
		k := j
		for k > i && data[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		i = j + 1
	}
}

// Stream reads a JSON document too large to hold token by token, within
// l: at most l.MaxBytes are read (Over reports whether there was more) and
// a value nested deeper than l.MaxDepth is an error at the first token too
// deep (Stream.Decode checks the values it decodes whole the same way).
func (l JSONLimit) Stream(r io.Reader) *JSONStream {
	cr := &countingLimit{r: r, left: l.MaxBytes}
	return &JSONStream{dec: json.NewDecoder(cr), in: cr, lim: l}
}

// JSONStream is a json.Decoder held to a JSONLimit (JSONLimit.Stream).
type JSONStream struct {
	dec   *json.Decoder
	in    *countingLimit
	lim   JSONLimit
	depth int
}

// Over reports whether the input was longer than the limit (the stream
// then ended there, as if the document were cut).
func (s *JSONStream) Over() bool { return s.in.over }

// Token is json.Decoder.Token, refusing a level deeper than the limit.
func (s *JSONStream) Token() (json.Token, error) {
	t, err := s.dec.Token()
	if err != nil {
		if s.in.over {
			return nil, fmt.Errorf("%w: over %d bytes", ErrJSONTooLarge, s.lim.MaxBytes)
		}
		return nil, err
	}
	if d, ok := t.(json.Delim); ok {
		switch d {
		case '[', '{':
			if s.depth++; s.depth > s.lim.MaxDepth {
				return nil, fmt.Errorf("%w of %d", ErrJSONTooDeep, s.lim.MaxDepth)
			}
		default:
			s.depth--
		}
	}
	return t, nil
}

// More is json.Decoder.More.
func (s *JSONStream) More() bool { return s.dec.More() }

// Decode decodes the next value into v, holding it whole (its bytes are
// within the document's size bound) and checking its depth, counted from
// where the stream is, first.
func (s *JSONStream) Decode(v any) error {
	var raw json.RawMessage
	if err := s.dec.Decode(&raw); err != nil {
		if s.in.over {
			return fmt.Errorf("%w: over %d bytes", ErrJSONTooLarge, s.lim.MaxBytes)
		}
		return err
	}
	if err := checkJSONDepth(raw, s.lim.MaxDepth-s.depth); err != nil {
		return fmt.Errorf("%w of %d", ErrJSONTooDeep, s.lim.MaxDepth)
	}
	if !s.lim.Strict {
		return json.Unmarshal(raw, v)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Object reads an object, calling member for each key; member must read
// the value (Token, Decode, Skip, Object, Array).
func (s *JSONStream) Object(member func(key string) error) error {
	if t, err := s.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("want an object, found %v", t)
	}
	for s.More() {
		t, err := s.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	_, err := s.Token()
	return err
}

// Array reads an array (or null), calling elem for each element; elem
// must read it.
func (s *JSONStream) Array(elem func() error) error {
	t, err := s.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("want an array, found %v", t)
	}
	for s.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = s.Token()
	return err
}

// Skip reads one value token by token, holding none of it.
func (s *JSONStream) Skip() error {
	start := s.depth
	for {
		if _, err := s.Token(); err != nil {
			return err
		}
		if s.depth == start {
			return nil
		}
	}
}

// End checks that nothing follows the document's one value.
func (s *JSONStream) End() error {
	if _, err := s.dec.Token(); err != io.EOF {
		if s.in.over {
			return fmt.Errorf("%w: over %d bytes", ErrJSONTooLarge, s.lim.MaxBytes)
		}
		return errors.New("data after the JSON value")
	}
	if s.in.over {
		return fmt.Errorf("%w: over %d bytes", ErrJSONTooLarge, s.lim.MaxBytes)
	}
	return nil
}

// countingLimit reads at most left bytes of r and notes when there was
// more.
type countingLimit struct {
	r    io.Reader
	left int64
	over bool
}

func (c *countingLimit) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			c.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
