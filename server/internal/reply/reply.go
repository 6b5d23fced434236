// Package reply is how every endpoint of the appliance answers what is
// not its own document: errors (one mapping from error to status, a
// registry-style JSON body), small JSON documents, and the OCI
// distribution API's errors. The app, access control and sign-in share
// it so that a refusal or a miss reads the same wherever it comes from.
package reply

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"

	"github.com/airgap/airgap/bundle/store"
)

// The errors statusOf maps to statuses other than 500.
var (
	ErrNotFound   = errors.New("not found")
	ErrBadRequest = errors.New("bad request")
	ErrMethod     = errors.New("method not allowed")
)

// NotFound is an ErrNotFound with a message.
func NotFound(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, a...))
}

// statusOf is the one place errors become HTTP status codes.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, store.ErrBlobMissing), errors.Is(err, os.ErrNotExist):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrMethod):
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// Error answers with the status for err and a registry-style JSON body;
// an internal error is logged to log and answered without its text.
func Error(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	code := statusOf(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
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

// JSON answers v as JSON, not to be cached.
func JSON(w http.ResponseWriter, r *http.Request, v any) {
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

// JSONBytes answers b as contentType, not to be cached unless the caller
// set Cache-Control.
func JSONBytes(w http.ResponseWriter, r *http.Request, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}

// OCIError answers an OCI distribution API error.
func OCIError(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	h.Del("ETag")
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	type ociError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	json.NewEncoder(w).Encode(map[string][]ociError{"errors": {{code, msg}}})
}

// Cut shortens client text to n bytes for a message or a log line.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
