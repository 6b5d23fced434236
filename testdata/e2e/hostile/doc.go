// Package hostile tests hostile input end to end: bundles, archives,
// modules, names, keys, configurations, upstream registries and
// connections built to break airgap, each refused within its bound
// (memory, time, disk) with a message that names what was refused.
package hostile
