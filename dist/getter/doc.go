// Package getter turns a module source address, as a registry returns it,
// into a normalized archive of the whole source root, the way go-getter
// would fetch it for Terraform: git (https, ssh, scp-like, GitHub and
// Bitbucket shorthands) with the git binary, and HTTP archives (.tar.gz,
// .tgz, .tar, .zip, .tar.bz2, ?archive=). "//subdir" is split off and
// recorded; "//*" strips one top-level folder.
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
//   - Entry names must be relative, without ".." components, at most
//     MaxArchiveDepth (64) components deep, and printable: control
//     characters, Unicode format characters and invalid UTF-8 (see
//     dist.Printable) are refused, since they would reach the bundle and
//     every terminal that lists the module. Errors name entries quoted and
//     keep only the errno of os.Root's errors, never a path.
//   - Entry names must be the same files on every file system the
//     clients run on (package portable): two names that one case-folding
//     or normalizing file system takes for one (Modules/ and modules/,
//     NFC and NFD), backslashes, colons, trailing dots or spaces and
//     Windows device names are refused, in archives, in git trees (from
//     "git ls-tree", before checkout) and in the tree Normalize archives
//     (which, for a module with vendored packages, holds them all); the
//     error names both colliding entries.
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
//   - Limits: MaxArchiveEntries entries and directories (implicit parents
//     count: an entry "a/b/f" that creates "a" and "a/b" counts three),
//     MaxArchiveBytes (1 GiB) unpacked bytes in regular files,
//     MaxArchiveLinks links, names and link targets of at most
//     MaxArchiveName bytes. A zip's entry count (from its end record, zip64
//     too) and its central directory (at most MaxZipDirectory bytes,
//     headers counted in a fixed buffer) are checked before archive/zip
//     parses the directory into memory. Worst case on disk: MaxArchiveBytes
//     plus MaxArchiveEntries inodes; in memory, the deferred links
//     (MaxArchiveLinks × 2 × MaxArchiveName = 32 MiB), 8 bytes per
//     directory, and for a zip archive/zip's directory (≤ MaxZipDirectory
//     plus ~200 bytes per entry, ~55 MiB); in time, each entry walks at most
//     64 components through os.Root (100,000 files at depth 64 measured at
//     ~50 s on a loaded 2-core machine). Normalize applies the same limits
//     to git checkouts.
//   - Extraction and Normalize stop at the next entry (or the next read of
//     a file) when their context is cancelled.
//
// A failed extraction removes the extraction directory; nothing is ever
// created outside it.
//
// # Git sources
//
// A git source is cloned only over https://, ssh:// or scp-like git@host:
// (Parse refuses file://, local paths, git://, http:// and ext::: a
// registry must not make export copy a repository of the exporting machine
// into the bundle). Every git command runs with protocol.allow=never except
// https and ssh (and GIT_ALLOW_PROTOCOL, which overrides any configuration
// file), core.hooksPath=/dev/null, no fsmonitor, GIT_CONFIG_NOSYSTEM,
// GIT_TERMINAL_PROMPT=0, no LFS smudging, a stall timeout (1 KiB/s for
// 60 s) and GitTimeout for the whole fetch; the user's GIT_* variables are
// dropped except those that say how to reach private hosts
// (GIT_SSL_CAINFO, GIT_SSH_COMMAND, …). The user's global git
// configuration is read: credentials, CA files and url.insteadOf rules for
// private hosts live there, and a registry cannot write it; the settings
// above override it. Every git process of one fetch (the clone, the fetch
// of a commit no ref advertises, each checkout, and the same for every
// submodule) runs under GitTimeout and one size watch (sizeWatch): the
// fetch's directory may hold Options.MaxGitSize (default
// MaxGitRepository) bytes of git objects beyond the files its tree checks
// let through, or git is stopped. The clone is --no-checkout; then "git
// ls-tree -r -t -l" of the commit is streamed and checked against the
// archive limits (entries, bytes, links, depth, names) before anything is
// checked out, so a "git bomb" writes nothing; and checkout ignores the
// repository's .gitattributes (and the user's and system's attribute
// files: no end-of-line or encoding conversion, no filters, no $Id$), so
// the bytes it writes are the blob sizes the tree check counted. Submodules are fetched the same way, one level at
// a time, at the commit the tree pins, from the URL in the commit's
// .gitmodules (relative URLs resolved against the superproject's), at most
// MaxSubmoduleDepth levels, sharing one budget of limits with the
// repository; every .git is removed before Normalize.
//
// It does not talk to registries and does not decide what to fetch.
package getter
