// Package cli tests the command line's contract, run against the built
// binary: usage mistakes and what they answer, help, --dry-run, the --json
// convention, --log-format, the HCL hints, and reports that speak in
// addresses. The tests that walk the verb table itself stay beside the CLI
// in package main.
package cli
