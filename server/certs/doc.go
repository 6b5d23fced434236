// Package certs gives 'airgap serve' its TLS certificates, in one of three
// modes: a built-in certificate authority kept in STORE/tls (ModeLocal,
// whose certificates also cover the machine's own host names and
// addresses), an ACME server of the site's (ModeACME, through certmagic),
// or certificate files the operator renews (ModeFiles, re-read when they
// change). New returns a TLS config that keeps them current; SetNames and
// ReloadFiles are what a SIGHUP changes.
//
// It does not choose the names or the ACME server (the serve configuration
// does), listen, or speak HTTP.
package certs
