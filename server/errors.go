package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/server/ops"
)

var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
	errMethod     = errors.New("method not allowed")
)

func notFound(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errNotFound, fmt.Sprintf(format, a...))
}

// statusOf is the one place errors become HTTP status codes.
func statusOf(err error) int {
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, store.ErrBlobMissing), errors.Is(err, os.ErrNotExist):
		return http.StatusNotFound
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// writeError answers with the status for err and a registry-style JSON body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	}
	h := w.Header()
	h.Del("ETag")
	h.Del("Cache-Control")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string][]string{"errors": {msg}})
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("encoding JSON", "err", err)
		http.Error(w, "internal error", 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}

// ErrConfig marks an invalid serve configuration (a flag, the --config
// file, an AIRGAP_ variable); the message names the setting.
var ErrConfig = ops.ErrConfig
