package main

// store: what is done to a store as a whole (copy it between a directory
// and object storage), and the one place that says which verbs take a
// store in object storage (s3://…): every other verb refuses such an
// address by name rather than take it for a directory.

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store/objstore"
)

// objectStoreVerbs are the verbs that take an s3:// store address.
var objectStoreVerbs = map[string]bool{}

// objectStoreGuard refuses an object-storage address (--store, --from-store)
// given to a verb that does not support one yet, and checks the address of
// one that does, before the verb runs.
func objectStoreGuard(name string, fs *pflag.FlagSet) error {
	for _, flag := range []string{"store", "from-store"} {
		f := fs.Lookup(flag)
		if f == nil || !objstore.IsObject(f.Value.String()) {
			continue
		}
		addr := f.Value.String()
		if _, err := objstore.Parse(addr); err != nil {
			return usageError{"--" + flag + ": " + err.Error()}
		}
		if !objectStoreVerbs[name] {
			return usageError{fmt.Sprintf("--%s %s: %s is not yet supported on object storage\nhint: on object storage these work: %s; for the rest, copy the store to a directory with 'airgap store copy %s DIR'", flag, addr, "'airgap "+name+"'", objectStoreWorks(), addr)}
		}
	}
	return nil
}

func objectStoreWorks() string {
	return "'airgap store copy'"
}
