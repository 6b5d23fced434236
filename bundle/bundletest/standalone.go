package bundletest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Standalone is a testing.TB for programs (make demo, make bench) that reuse
// these fixtures outside 'go test': failures exit, temp dirs go under Dir.
type Standalone struct {
	testing.TB // nil: any method not below panics, loudly
	Dir        string
	n          int
	cleanups   []func()
}

// NewStandalone returns a Standalone whose temp dirs are created under dir.
func NewStandalone(dir string) *Standalone {
	os.MkdirAll(dir, 0o755)
	return &Standalone{Dir: dir}
}

func (s *Standalone) Helper()                   {}
func (s *Standalone) Name() string              { return "standalone" }
func (s *Standalone) Logf(f string, a ...any)   { fmt.Printf(f+"\n", a...) }
func (s *Standalone) Fatal(a ...any)            { fmt.Fprintln(os.Stderr, a...); os.Exit(1) }
func (s *Standalone) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }
func (s *Standalone) Cleanup(f func())          { s.cleanups = append(s.cleanups, f) }

// TempDir makes a new directory under Dir.
func (s *Standalone) TempDir() string {
	s.n++
	d := filepath.Join(s.Dir, fmt.Sprintf("tmp-%d", s.n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		s.Fatal(err)
	}
	return d
}

// Close runs the registered cleanups, last first.
func (s *Standalone) Close() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}
