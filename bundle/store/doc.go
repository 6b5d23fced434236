// Package store is the content-addressed directory that bundles are imported
// into and that 'airgap serve' reads.
//
// Layout (the only place that maps names to paths is paths.go):
//
//	STORE/
//	  index.json               catalog of everything served + import history;
//	                           replaced atomically (temp, fsync, rename, fsync dir)
//	  blobs/sha256/<hex>       immutable blobs (mode 0444), named by sha256
//	  tmp/                     staging for imports in progress; emptied by the
//	                           next import (leftovers of a killed import)
//	  lock                     flock(2) target: one import at a time
//	  tls/                     written by 'airgap serve' (local CA, certificates);
//	                           never by import
//
// Import is all or nothing. The bundle signature is checked before any blob is
// accepted; every blob is hashed while it is written into tmp/; only when the
// whole bundle has been read and checked are the new blobs renamed into blobs/
// and the new index.json swapped in. A failure at any point before the commit
// leaves the tree exactly as it was (tmp/ emptied). A crash during the commit
// can leave blobs that no index entry refers to yet, never an index entry
// whose blob is missing; the next import of the same bundle completes it.
//
// Readers (the server) use Open and Store's read-only methods; they notice a
// new index.json by polling its identity (Reload / Watch) and never block
// imports. inventory.go renders the inventory and an import's result for
// people and as JSON ('airgap inventory', 'airgap import --json'). This
// package does not serve HTTP and does not fetch anything.
package store
