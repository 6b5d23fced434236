package harness

// The real scanners the gate tests run, built from their Go modules the
// first time and cached in $AIRGAP_TEST_CACHE (default ~/.cache/airgap)
// like tofu. A scanner that cannot be built fails the tests: the gates must
// not go untested.
const (
	TrivyVersion       = "0.74.0" // ~5.5 min to build on 2 cores, 233 MB
	GovulncheckVersion = "1.9.0"  // under a minute
)
