// Package osfile holds the few file-system operations whose system calls
// differ between Unix and Windows: an exclusive advisory lock on an open
// file, a file's inode, and a file's owner; and the one rule for when a file holding
// a secret is private enough (PrivateEnough).
//
// It does not decide what a lock protects: callers lock a dedicated
// ".lock" file beside what they edit (LockPath opens and locks one). On
// Unix the lock is flock(2); on Windows it is LockFileEx on the file's
// first byte. Both are released when the file is closed, so a crashed
// process never leaves a lock held.
package osfile
