// Package getter turns a module source address, as a registry returns it,
// into a normalized archive of the whole source root, the way go-getter
// would fetch it for Terraform: git (https, ssh, scp-like, GitHub and
// Bitbucket shorthands) with the git binary, and HTTP archives (.tar.gz,
// .tgz, .tar, .zip, .tar.bz2, ?archive=). "//subdir" is split off and
// recorded; "//*" strips one top-level folder. The archive (Normalize) is
// deterministic: the same source gives the same bytes.
//
// Everything a module source contains is untrusted. Archives are unpacked,
// and trees and git checkouts read back, only through an os.Root on the
// extraction directory; entry names must be relative, printable, at most
// MaxArchiveDepth deep and the same files on every file system
// (dist/portable); regular files are created with O_EXCL, symlinks and hard
// links are dereferenced within the root, devices and FIFOs refused. An
// archive is bounded by MaxArchiveEntries entries, MaxArchiveBytes unpacked
// bytes, MaxArchiveLinks links and MaxArchiveName bytes per name; a zip's
// directory by MaxZipDirectory, checked before archive/zip reads it.
//
// A git source is cloned only over https://, ssh:// or scp-like git@host:,
// with every protocol but those two off, no hooks, no LFS, no attribute
// filters, a stall timeout and GitTimeout for the whole fetch, and one size
// watch over the clone and its submodules (Options.MaxGitSize, at most
// MaxSubmoduleDepth levels); the tree is checked against the archive limits
// before anything is checked out.
//
// Every rule and bound, what it costs in the worst case, and why:
// docs/fetching.md, "Module sources".
//
// A failed extraction removes the extraction directory; nothing is ever
// created outside it. It does not talk to registries and does not decide
// what to fetch.
package getter
