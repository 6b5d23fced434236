package store

import (
	"os"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// What a store's unreferenced blobs were. A withdrawal drops versions from
// the catalog but leaves their blobs for gc, and a prune interrupted
// between its index swap and its sweep leaves them too: by then the
// catalog no longer says what they were. So when entries leave the
// catalog, what each of their blobs no remaining entry uses was is
// recorded in Index.Unreferenced (address, version and the blob's part,
// from dist.DescribeBlobs), and gc names each blob it deletes from there.
//
// Bound: Unreferenced holds at most one entry per blob in blobs/ that no
// entry references, plus those the last prune deleted after writing its
// index (tidyUnreferenced drops the rest at every write of the index by
// import, prune and gc).

// RemovedBlob is one blob prune or gc deleted (or would delete).
type RemovedBlob struct {
	Blob  verify.Digest `json:"blob"`
	Bytes int64         `json:"bytes"`
	What  string        `json:"what"`
}

// unknownBlob is what a blob nothing recorded was.
const unknownBlob = "no entry this store recorded used it (left by an interrupted import, or dropped by an airgap that did not record what blobs were)"

// noteUnreferenced records, for each blob of names (what the catalog's
// blobs were before entries left it) that ix's catalog no longer
// references, what it was and why it left (" (withdrawn)", " (pruned)").
func noteUnreferenced(ix *Index, names map[verify.Digest]string, why string) {
	used := ix.Blobs()
	for d, what := range names {
		if _, ok := used[d]; ok {
			continue
		}
		if ix.Unreferenced == nil {
			ix.Unreferenced = map[verify.Digest]string{}
		}
		ix.Unreferenced[d] = what + why
	}
}

// tidyUnreferenced drops the records of blobs the catalog references again
// (a reinstatement, a re-import) or that are gone from blobs/.
func tidyUnreferenced(root string, ix *Index) {
	used := ix.Blobs()
	for d := range ix.Unreferenced {
		if _, ok := used[d]; ok {
			delete(ix.Unreferenced, d)
		} else if _, err := os.Lstat(BlobPath(root, d)); err != nil {
			delete(ix.Unreferenced, d)
		}
	}
	if len(ix.Unreferenced) == 0 {
		ix.Unreferenced = nil
	}
}

// blobNames is what every blob ix knows of was: the catalog's, then the
// records of unreferenced ones.
func blobNames(ix *Index) map[verify.Digest]string {
	names := ix.Catalog.DescribeBlobs()
	for d, what := range ix.Unreferenced {
		if _, ok := names[d]; !ok {
			names[d] = what
		}
	}
	return names
}

// writeRemoved prints one line per removed blob: digest, size, what it was.
func writeRemoved(w *strings.Builder, verb string, blobs []RemovedBlob) {
	for _, b := range blobs {
		w.WriteString(verb + " blob " + b.Blob.Short() + " (" + human(b.Bytes) + "): " + dist.Printable(b.What) + "\n")
	}
}
