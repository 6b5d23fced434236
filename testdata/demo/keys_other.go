//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

// keysOnly: elsewhere Ctrl-C stays a signal (handled, but make sees it too).
func keysOnly(fd int) (back func(), ok bool) { return nil, false }
