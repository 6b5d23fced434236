//go:build unix

package registry

import (
	"os/exec"
	"syscall"
)

// killGroup runs cmd in a process group of its own and makes cancelling it
// kill the whole group, so a helper script's children (a sleep, a pipe)
// die with it.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
