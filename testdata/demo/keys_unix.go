//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// keysOnly turns off the terminal's signal keys (ISIG), line buffering and
// echo on fd, leaving output processing as it is (a raw terminal would
// print the journey's lines as a staircase); back restores it.
func keysOnly(fd int) (back func(), ok bool) {
	old, err := unix.IoctlGetTermios(fd, ioctlGet)
	if err != nil {
		return nil, false
	}
	t := *old
	t.Lflag &^= unix.ISIG | unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSet, &t); err != nil {
		return nil, false
	}
	return func() { unix.IoctlSetTermios(fd, ioctlSet, old) }, true
}
