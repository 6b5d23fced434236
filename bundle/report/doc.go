// Package report is what 'airgap verify' shows the person who decides, at
// the transfer station, what may enter: Report, as text for people and
// as the one JSON document 'airgap verify --json' prints.
//
// Check (and CheckFor, with a store's chain keyring) reads a whole bundle
// through bundle/check and fills the Report with what the bundle carries:
// its providers and modules with their signature facts, gate results, why
// each entry is in it and what its plugins were built from, the chain of
// custody with what each hop brought, withdrawals and publisher-key
// declarations. bundle/store's review then adds what the offline side
// will make of it (publisher-key pins, the difference to an inventory, the
// Forecast of the import's own rules), and Finish sets the status and the
// attention items a person must look at first.
//
// It does not check anything itself (bundle/check does), does not decide
// an import (the store's rules fill the Forecast) and keeps nothing. The
// JSON document's fields, one by one, are in docs/formats.md; the
// operator's summary is in docs/transfer-station.md.
package report
