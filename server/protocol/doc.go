// Package protocol is what 'airgap serve' answers to Terraform, OpenTofu
// and OCI clients, from a store it can only read: service discovery, the
// provider and module registry protocols (in the view the Host or an
// /origin/{origin}/ prefix chooses), the provider network mirror,
// content-addressed blobs and module archives, /airgap/v1/origins, and the
// read-only OCI distribution API. It also writes the client configuration
// that points a client at those answers, and counts completed downloads.
//
// Each request is answered in the scope of the principal the app admitted
// (package access): the catalog filtered by that principal's rules, so a
// denied address gets the same status, body and headers as a missing one,
// and download URLs in answers are signed for that principal. JSON answers
// are rendered once per catalog snapshot, access file version and
// canonical request, and cached under a bound the catalog sets and a byte
// budget (renderKey states the worst case).
//
// It does not route or decide access: the app's route table (package
// server) wires Handlers to paths and admits each request against the
// Snapshot it is then answered from, before ServeCached or the handlers
// see it. It imports nothing of the app.
package protocol
