//go:build !linux

package store

// swapMirror puts the finished tree tmp at out (see swapAside).
func swapMirror(tmp, out string) error { return swapAside(tmp, out) }
