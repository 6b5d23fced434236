package harness

import (
	"bytes"
	"os/exec"
	"sync"
	"testing"
)

// RunSplit runs the real binary with stdout and stderr apart.
func RunSplit(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Bin, args...)
	cmd.Dir = dir
	cmd.Env = append(BaseEnv(), env...)
	cmd.Stdin = nil // no terminal
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.String(), e.String(), ExitCode(err)
}

func MustRunStdout(t *testing.T, dir string, args ...string) string {
	t.Helper()
	stdout, stderr, code := RunSplit(t, dir, nil, args...)
	if code != 0 {
		t.Fatalf("%v: %d %s", args, code, stderr)
	}
	return stdout
}

type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
