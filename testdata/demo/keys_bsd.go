//go:build darwin || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

const ioctlGet, ioctlSet = unix.TIOCGETA, unix.TIOCSETA
