// Package station tests the transfer station: reviewing bundles before
// they cross, two-person approval, the trust forecast, evidence and
// reports, gates and SBOMs with the real scanners, withdrawals, and the
// bundle formats of earlier versions.
package station
