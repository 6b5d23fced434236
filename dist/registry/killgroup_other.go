//go:build !unix

package registry

import "os/exec"

// killGroup: on systems without process groups, cancelling kills the
// helper itself (exec's default); WaitDelay bounds the wait for its
// children's pipes.
func killGroup(cmd *exec.Cmd) {}
