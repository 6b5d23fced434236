package osfile

import (
	"fmt"
	"os"
)

// PrivateRule states, for messages and hints, the rule PrivateEnough
// applies.
const PrivateRule = "only its owner may read it (mode 0600 or 0400), or, when root owns it, its group may read it too (mode 0640 or 0440, as Kubernetes mounts a Secret under an fsGroup)"

// PrivateEnough reports whether fi, a file that holds a secret (the access
// file, the identity provider's client secret, the URL signing keys), is
// closed enough to other users to be trusted. One rule, the one PostgreSQL
// applies to its ssl_key_file:
//
//   - no permission bits for group or others (0600, 0400), whoever owns
//     it; or
//   - owned by root and at most readable by its group (0640, 0440): no
//     group write or execute, nothing for others.
//
// The second case is what Kubernetes gives a Secret volume's files under a
// pod's fsGroup (root:FSGROUP, mode 0440 with defaultMode 0440): root
// owning the file means no unprivileged user can have loosened it, and the
// group is one the administrator chose. A group-writable file, or one any
// other user may read, is refused in both cases. Where the system reports
// no owner (Windows), only the first case applies.
func PrivateEnough(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return true
	}
	uid, _, ok := Owner(fi)
	return ok && uid == 0 && perm&0o037 == 0
}

// CheckPrivate returns nil when PrivateEnough(fi), or an error naming
// path, what it holds (what: "it says who may fetch what") and its mode,
// with a hint stating the rule.
func CheckPrivate(fi os.FileInfo, path, what string) error {
	if PrivateEnough(fi) {
		return nil
	}
	owner := ""
	if uid, gid, ok := Owner(fi); ok {
		owner = fmt.Sprintf(", owner %d:%d", uid, gid)
	}
	return fmt.Errorf("%s has mode %04o%s; %s, so %s\nhint: chmod 600 %s and chown it to the user airgap serve runs as (or, root-owned, chmod 640 for a group of your choosing)", path, fi.Mode().Perm(), owner, what, PrivateRule, path)
}
