// Package oci maps a catalog onto OpenTofu's OCI registry layout (OpenTofu
// 1.10+, `oci_mirror` and `oci://` module sources) and publishes it to an
// existing OCI registry.
//
// The layout (Repositories), the same whether 'airgap serve' answers it or
// 'airgap push' writes it into a registry:
//
//	<origin-host>/<namespace>/<type>                  a provider
//	<origin-host>/modules/<namespace>/<name>/<system> a module (lowercased)
//
// Provider tags are versions with "+" written "_"; each points to an image
// index (artifactType application/vnd.opentofu.provider) with one image
// manifest per platform (artifactType application/vnd.opentofu.provider-target,
// platform os/architecture), each with exactly one "archive/zip" layer: the
// publisher's zip byte for byte, so its digest is the zh: hash. Module tags
// are versions too, plus "latest" (the newest release); each points to an
// image manifest (artifactType application/vnd.opentofu.modulepkg) whose one
// "archive/zip" layer is the module's deterministic zip (dist.ModuleVersion.Zip,
// written by export; modules exported before that have none and are not in
// the layout). Configs are the OCI empty descriptor ({}).
//
// Manifests are generated deterministically from the catalog: the same
// catalog gives the same digests on every run, replica and registry. A
// repository's documents are built only when asked for (Repository.Content);
// their size is proportional to its versions and platforms (about 1 KiB per
// package), so memory is bounded by the catalog, never by requests.
//
// Names that are not valid OCI repository names (an origin host with a port,
// a provider name with "___") are left out of the layout.
//
// Push writes the layout into a registry with oras-go. This
// package does not serve HTTP (package server does) and never changes a store.
package oci
