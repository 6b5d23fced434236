package osfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// PrivateRule states, for messages and hints, the rule PrivateEnough
// applies.
const PrivateRule = "it must be owned by the user airgap runs as or by root, and only its owner may read it (mode 0600 or 0400), or, when root owns it, its group may read it too (mode 0640 or 0440, as Kubernetes mounts a Secret under an fsGroup)"

// PrivateEnough reports whether fi, a file that holds a secret (the access
// file, the identity provider's client secret, the URL signing keys), is
// closed enough to other users to be trusted by this process. One rule,
// the one PostgreSQL applies to its ssl_key_file:
//
//   - owned by the user this process runs as (its effective uid) or by
//     root; and
//   - no permission bits for group or others (0600, 0400); or, owned by
//     root, at most readable by its group (0640, 0440): no group write or
//     execute, nothing for others.
//
// The owner matters because the mode alone says nothing about who wrote
// the file: root reads every file, so serve running as root would take a
// 0600 file another user made and swapped in through a folder that user
// can write. Neither that user nor any other unprivileged one can make a
// file that root or this process's user owns. The root-and-group case is
// what Kubernetes gives a Secret volume's files under a pod's fsGroup
// (root:FSGROUP, mode 0440 with defaultMode 0440): the group is one the
// administrator chose. Where the system reports no owner (Windows), only
// the mode is judged.
func PrivateEnough(fi os.FileInfo) bool {
	return ClosedMode(fi) && ownerTrusted(fi)
}

// ClosedMode is PrivateEnough's rule on the mode alone: what a root-run
// 'airgap token' judges before it edits an access file that serve's own
// user owns (serve then judges the owner itself).
func ClosedMode(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return true
	}
	uid, _, ok := Owner(fi)
	return ok && uid == 0 && perm&0o037 == 0
}

func ownerTrusted(fi os.FileInfo) bool {
	uid, _, ok := Owner(fi)
	return !ok || uid == 0 || uid == os.Geteuid()
}

// CheckPrivate returns nil when PrivateEnough(fi), or an error naming
// path, what it holds (what: "it says who may fetch what"), its mode and
// owner, with a hint stating the rule.
func CheckPrivate(fi os.FileInfo, path, what string) error {
	if PrivateEnough(fi) {
		return nil
	}
	return privateErr(fi, path, what)
}

// CheckClosedMode is CheckPrivate with ClosedMode's rule.
func CheckClosedMode(fi os.FileInfo, path, what string) error {
	if ClosedMode(fi) {
		return nil
	}
	return privateErr(fi, path, what)
}

func privateErr(fi os.FileInfo, path, what string) error {
	owner := ""
	if uid, gid, ok := Owner(fi); ok {
		owner = fmt.Sprintf(", owner %d:%d", uid, gid)
	}
	return fmt.Errorf("%s has mode %04o%s; %s, so %s\nhint: chmod 600 %s and chown it to the user airgap serve runs as (uid %d), or, root-owned, chmod 640 for a group of your choosing", path, fi.Mode().Perm(), owner, what, PrivateRule, path, os.Geteuid())
}

// maxPathLinks bounds the symbolic links CheckSafePath follows (Linux's
// own bound on a path's resolution).
const maxPathLinks = 40

// CheckSafePath returns nil when only root and the user airgap runs as
// can change what path names, OpenSSH's StrictModes applied to a secret
// file a privileged process reads: every directory on the way (from /),
// every link on the way, followed to its target, and the file itself are
// owned by root or by this user, and no directory on the way may be
// written by anyone else. A directory writable by others is accepted
// only with the sticky bit (/tmp: nobody but an entry's owner can rename
// or remove it, and every entry on the way is root's or this user's), or,
// owned by root, when the group that may write it is one this process is
// in (a Kubernetes volume under the pod's fsGroup, whose files are
// root:FSGROUP). Else another user could swap a directory for one of
// their own, with a link in it to a file root owns and its group may read
// (/etc/shadow passes PrivateEnough's rule), and the process would read
// that file for them. what says what the file holds (for the message).
// Cost: one lstat per component and link, at most maxPathLinks links.
func CheckSafePath(path, what string) error {
	if runtime.GOOS == "windows" {
		return nil // no owners and modes of this kind to judge
	}
	abs := path
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		abs = wd + string(filepath.Separator) + path
	}
	links := 0
	return checkSafePath(path, abs, what, &links)
}

// checkSafePath walks p as the kernel resolves it: never cleaned as text
// (filepath.Clean and Join drop "dir/link/.." whole, where the kernel
// follows the link first and climbs from its target), a ".." taken from
// the directory reached so far, a link's target walked with the rest of
// the path after it.
func checkSafePath(given, p, what string, links *int) error {
	sep := string(filepath.Separator)
	cur := sep
	if err := safeDir(given, cur, what); err != nil {
		return err
	}
	parts := strings.Split(p, sep)
	for i, name := range parts {
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no link in it: the kernel's ".."
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return err
		}
		if !ownerTrusted(fi) {
			uid, _, _ := Owner(fi)
			if i == len(parts)-1 && fi.Mode().IsRegular() {
				return fmt.Errorf("%s: %s is owned by uid %d, not by root or the user airgap runs as, so that user could have put anything in it; %s\nhint: chown it to the user airgap serve runs as (uid %d) or to root", given, next, uid, what, os.Geteuid())
			}
			return unsafePathErr(given, next, fmt.Sprintf("is owned by uid %d", uid), what)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if *links++; *links > maxPathLinks {
				return fmt.Errorf("%s: more than %d symbolic links on the way", given, maxPathLinks)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				target = cur + sep + target
			}
			return checkSafePath(given, strings.Join(append([]string{target}, parts[i+1:]...), sep), what, links)
		}
		if fi.IsDir() {
			if err := safeDir(given, next, what); err != nil {
				return err
			}
		}
		cur = next
	}
	return nil
}

// safeDir judges one directory on the way (CheckSafePath's rule).
func safeDir(given, dir, what string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	uid, gid, ok := Owner(fi)
	if !ok {
		return nil // the system says no owner
	}
	if !ownerTrusted(fi) {
		return unsafePathErr(given, dir, fmt.Sprintf("is owned by uid %d", uid), what)
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o022 == 0, fi.Mode()&os.ModeSticky != 0:
		return nil
	case perm&0o002 == 0 && uid == 0 && inGroup(gid):
		return nil
	}
	return unsafePathErr(given, dir, fmt.Sprintf("has mode %04o (owner %d:%d): other users may write it", perm, uid, gid), what)
}

func inGroup(gid int) bool {
	if gid == os.Getegid() {
		return true
	}
	gs, _ := os.Getgroups()
	return slices.Contains(gs, gid)
}

func unsafePathErr(given, at, why, what string) error {
	return fmt.Errorf("%s: %s on the way to it %s, so another user could put another file in its place; %s\nhint: keep it in a directory only root and the user airgap runs as (uid %d) may write, on a path of such directories", given, at, why, what, os.Geteuid())
}

// CheckSafePathIfThere is CheckSafePath for a file the caller opens next:
// a component that is missing or cannot be looked at (an *fs.PathError
// from lstat or readlink) is left for the open to report in its own
// words, so only an unsafe path is refused here.
func CheckSafePathIfThere(path, what string) error {
	err := CheckSafePath(path, what)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil
	}
	return err
}

// afterOpen, when set (by this package's tests), runs between OpenSafe's
// open and its check: where another user would swap the path.
var afterOpen func()

// OpenSafe opens path for reading, and returns the open file only when,
// after the open, CheckSafePath holds for path and path still names the
// file opened. Checking first and opening second leaves a moment between
// the two: a path missing at the check (CheckSafePathIfThere lets that
// pass, for the open to report) could by the open be another user's link,
// in a sticky directory such as /tmp, to a file root owns and its group
// may read. Checked after the open, the path is one no other user can
// change any more, so it naming the same file (device and inode) means
// the file read is the file that path safely names. what is as for
// CheckSafePath. Cost: CheckSafePath's, and two stats.
func OpenSafe(path, what string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if afterOpen != nil {
		afterOpen()
	}
	if err := checkOpened(f, path, what); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkOpened(f *os.File, path, what string) error {
	if err := CheckSafePath(path, what); err != nil {
		return err
	}
	got, err := f.Stat()
	if err != nil {
		return err
	}
	now, err := os.Stat(path)
	if err != nil || !os.SameFile(got, now) {
		return fmt.Errorf("%s: the file opened is not the one the path names now (it was replaced while it was read); %s\nhint: keep it in a directory only root and the user airgap runs as (uid %d) may write, and check who else writes there", path, what, os.Geteuid())
	}
	return nil
}

// ReadSafe reads the file at path, opened by OpenSafe, refusing one of
// more than max bytes.
func ReadSafe(path, what string, max int64) ([]byte, error) {
	f, err := OpenSafe(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, nil
}
