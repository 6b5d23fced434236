package server

import (
	"fmt"
	"io"
	"log/slog"
)

// NewLogger returns a logger writing format ("text" or "json", as
// --log-format) to w at level. Pass a *slog.LevelVar to change the level
// later (SIGHUP). Any verb may use it. Both handlers escape what they did
// not write: the JSON handler escapes control characters, the text handler
// quotes any value holding spaces, '=', quotes or non-printable characters.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opt := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opt)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opt)), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", ErrConfig, format)
}
