//go:build unix

package export

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this PID exists (EPERM: it
// does, owned by someone else).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// gateProcAttr starts a gate's tool in a process group of its own, so that
// killGroup stops it and everything it started.
func gateProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group of pid (the tool and its children).
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
