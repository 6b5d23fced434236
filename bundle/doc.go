// Package bundle is the bundle format: the one signed file that is
// carried across the air gap, read and written as a stream.
//
// It holds:
//   - the Manifest (formats 1 to 3): the catalog, every blob with its digest,
//     size and role, withdrawals, publisher-key declarations, gates, the
//     SBOM's digest and the chain of custody (Hop); ParseManifest and
//     Validate hold it to its form;
//   - Writer: a deterministic tar stream, plain or zstd (one frame, or a
//     frame per entry for CompressionAuto), the manifest signed first;
//   - Reader: checks the manifest's signature before it hands out any blob,
//     and each blob's size and digest while it is read (a bad blob's reader
//     fails at its end, before a consumer can commit it);
//   - Open: a bundle file or split set, refusing what is not a bundle with
//     ErrNotBundle and what it looks like; split volumes and their signed
//     parts index; the gate reports a bundle carries ('airgap show');
//   - reading and writing ahead on goroutines of their own, with O_DIRECT
//     where the file system allows it.
//
// It does not check what a signed manifest says against its blobs: that
// is bundle/check (the consistency check 'verify' and 'import' share).
// It does not decide or show anything: bundle/report is what 'airgap
// verify' prints, bundle/store what an import keeps and refuses,
// bundle/approval a transfer station's signed approval. It does not talk
// to the network, and touches the file system only where a caller hands
// it a path (Open, split volumes, CreateAtomic).
//
// The container, the manifest's formats, the chain of custody's design
// and what the check holds a bundle to are in docs/formats.md.
package bundle
