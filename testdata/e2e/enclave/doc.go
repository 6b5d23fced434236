// Package enclave tests enclaves: bundles carried through a chain of
// stations, each re-signing what it forwards, and the chain under hostile
// input (key floods, revoked hops, memory bounds).
package enclave
