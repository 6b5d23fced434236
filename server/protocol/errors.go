package protocol

import (
	"net/http"

	"github.com/airgap/airgap/server/internal/reply"
)

var errNotFound = reply.ErrNotFound

func notFound(format string, a ...any) error { return reply.NotFound(format, a...) }

// writeError answers with the status for err and a registry-style JSON body.
func (s *Answers) writeError(w http.ResponseWriter, r *http.Request, err error) {
	reply.Error(w, r, err, s.log)
}
