// Package journey tests the journey from the connected side to the offline
// one with real clients: export, carry, import and serve, then terraform
// and tofu init against it, across the client matrix (every version in
// every mode), OCI, vendored and site modules, mirror directories, proxies
// and the demo.
package journey
