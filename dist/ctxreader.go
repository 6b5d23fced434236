package dist

import (
	"context"
	"io"
)

// ContextReader returns a reader that fails its next Read with ctx's error
// once ctx is done: a long copy (an archive unpacked, a bundle imported)
// stops at its next read after Ctrl-C.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
