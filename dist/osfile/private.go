package osfile

import (
	"fmt"
	"os"
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
