package tfconfig

import "errors"

// ErrMalformed: a configuration or lock file that cannot be read as one.
var ErrMalformed = errors.New("malformed configuration")

// ErrOutside: a local module call that leads outside the project (or, in a
// downloaded module, outside the module's package).
var ErrOutside = errors.New("outside the project or module package")

// ErrTooLarge: a file, directory or tree over one of the limits.
var ErrTooLarge = errors.New("configuration too large")

// ErrNotConst: a module source or version that is not known when
// 'terraform init' runs (LoadProject), or that airgap does not evaluate.
var ErrNotConst = errors.New("not known at init")

// ErrNotRegular: a configuration, variables or lock file that is not a
// regular file (a named pipe, a device, a directory).
var ErrNotRegular = errors.New("not a regular file")
