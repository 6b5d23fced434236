// Package getter turns a module source address, as a registry returns it,
// into a normalized archive of the whole source root, the way go-getter
// would fetch it for Terraform: git (https, ssh, scp-like, GitHub shorthand)
// with the git binary, and HTTP archives (.tar.gz, .tgz, .tar, .zip,
// .tar.bz2, ?archive=). "//subdir" is split off and recorded; "//*" strips
// one top-level folder.
//
// The archive (see Normalize) is a gzip'd tar with sorted entries, fixed
// mtime, uid, gid and modes, symlinks dereferenced without escaping the
// root, .git removed: the same source gives the same bytes.
//
// # Hostile archives
//
// Everything a module source contains is untrusted. Archives are unpacked,
// and unpacked trees and git checkouts are read back, only through an
// os.Root opened on the extraction directory: the kernel resolves every
// path and link, and os.Root refuses any that leaves the root, whatever the
// text of the links says. On top of that:
//
//   - Entry names must be relative, without ".." components.
//   - Regular files are created with O_EXCL (an archive cannot overwrite an
//     entry it wrote before) and only 0644 or 0755.
//   - Symlinks are dereferenced within the root: they are created only after
//     every other entry (so no entry is ever written through a link), and
//     each must then resolve, inside the root, to a regular file. A link
//     that is absolute, dangling, leaves the root (directly or through
//     other links), or points to a directory is refused. The normalized
//     archive carries a copy of the file, never a link.
//   - A hard link is unpacked as a copy of an entry already unpacked in the
//     root; one naming anything outside it is refused.
//   - Devices, FIFOs and other entry kinds are refused.
//   - Limits: MaxArchiveEntries entries, MaxArchiveBytes unpacked bytes in
//     regular files, MaxArchiveLinks links, names and link targets of at
//     most MaxArchiveName bytes. The worst case on disk is MaxArchiveBytes
//     plus one inode per entry; in memory, the deferred links
//     (MaxArchiveLinks × 2 × MaxArchiveName = 32 MiB). Normalize applies
//     the same entry and byte limits to git checkouts.
//
// A failed extraction removes the extraction directory; nothing is ever
// created outside it.
//
// It does not talk to registries and does not decide what to fetch.
package getter
