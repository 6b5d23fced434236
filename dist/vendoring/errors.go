package vendoring

import "errors"

// ErrUnvendorable: a module source cannot be vendored (built from
// variables, or a protocol airgap cannot fetch).
var ErrUnvendorable = errors.New("module source cannot be vendored")

// ErrTooDeep: nested remote calls go deeper than MaxDepth, or reach more
// than MaxPackages packages.
var ErrTooDeep = errors.New("too many nested module sources")

// ErrReserved: the module already has the reserved .airgap folder.
var ErrReserved = errors.New("reserved folder")

// ErrRewrite: a configuration file could not be edited.
var ErrRewrite = errors.New("cannot rewrite module source")
