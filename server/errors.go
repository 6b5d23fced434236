package server

import (
	"net/http"

	"github.com/airgap/airgap/server/internal/reply"
	"github.com/airgap/airgap/server/ops"
)

var errMethod = reply.ErrMethod

func notFound(format string, a ...any) error { return reply.NotFound(format, a...) }

// writeError answers with the status for err and a registry-style JSON body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	reply.Error(w, r, err, s.log)
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) { reply.JSON(w, r, v) }

// errConfig marks an invalid serve configuration (a flag, the --config
// file, an AIRGAP_ variable); the message names the setting.
var errConfig = ops.ErrConfig
