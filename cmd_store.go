package main

// store: what is done to a store as a whole (copy it between a directory
// and object storage), and the one place that says which verbs take a
// store in object storage (s3://…): every other verb refuses such an
// address by name rather than take it for a directory.

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/dist"
)

// objectStoreVerbs are the verbs that take an s3:// store address.
var objectStoreVerbs = map[string]bool{"import": true, "serve": true, "ca": true, "inventory": true, "gc": true, "prune": true, "docs": true, "client-config": true, "audit": true, "keys": true, "store": true, "token": true, "export": true, "mirror-dir": true, "push": true}

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
	return "'airgap import', 'airgap serve', 'airgap ca', 'airgap inventory', 'airgap prune', 'airgap gc', 'airgap docs', 'airgap client-config', 'airgap audit', 'airgap token' (login tokens, rotate-url-key; the access file stays a local file), 'airgap keys retire|revoke', 'airgap export --from-store', 'airgap mirror-dir', 'airgap push', 'airgap store check' and 'airgap store copy'"
}

type storeCmd struct{}

func (c *storeCmd) synopsis() string {
	return "check an object-storage store's server; copy a store between a directory and a bucket"
}

func (c *storeCmd) flags() *pflag.FlagSet {
	return pflag.NewFlagSet("store", pflag.ContinueOnError)
}

func (*storeCmd) help() verbHelp {
	return verbHelp{
		usage: "check s3://BUCKET/PREFIX?… | copy SRC DST",
		about: "check: reach the server with the AWS chain's credentials and check that it honours the\n" +
			"conditional writes a store needs (a second write-if-absent and a stale If-Match refused);\n" +
			"a server that does not is refused, naming what failed.\n" +
			"copy: copy a store from a directory to an empty bucket prefix, or back to a new directory,\n" +
			"hashing every blob as it streams (a blob whose bytes do not match its name stops the\n" +
			"copy) and writing the index last; the copy lists and hashes the same. Credentials come from\n" +
			"the AWS environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity);\n" +
			"see docs/object-storage.md. Quote an address with '&' in it for the shell.",
		env: []string{"AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL_S3  the standard AWS chain"},
		examples: []string{"airgap store check 's3://airgap/site?endpoint=https://s3.internal:9000&use_path_style=true'",
			"airgap store copy /srv/airgap 's3://airgap/site?endpoint=https://s3.internal:9000&use_path_style=true'",
			"airgap store copy 's3://airgap/site?endpoint=https://s3.internal:9000&use_path_style=true' /srv/airgap-copy"},
	}
}

const storeUsage = "usage: airgap store check s3://BUCKET/PREFIX?…\n       airgap store copy SRC DST (one a directory, the other s3://BUCKET/PREFIX?…)"

func (c *storeCmd) run(args []string) error {
	if len(args) == 0 {
		return usageError{storeUsage}
	}
	sub, args := args[0], args[1:]
	ctx := context.Background()
	switch sub {
	case "check":
		if len(args) != 1 || !objstore.IsObject(args[0]) {
			return usageError{"check: give one s3:// address\n" + storeUsage}
		}
		cl, err := openObjectStore(ctx, args[0])
		if err != nil {
			return err
		}
		if err := cl.CheckConditional(ctx); err != nil {
			return err
		}
		fmt.Printf("store %s: the server honours conditional writes (If-None-Match: *, If-Match)\n", args[0])
		return nil
	case "copy":
		if len(args) != 2 {
			return usageError{"copy: give SRC and DST\n" + storeUsage}
		}
		src, dst := args[0], args[1]
		intr := catchInterrupt()
		defer intr.Stop()
		var res *objstore.CopyResult
		switch so, do := objstore.IsObject(src), objstore.IsObject(dst); {
		case !so && do:
			cl, err := openObjectStore(intr.ctx, dst)
			if err != nil {
				return err
			}
			if res, err = objstore.ToBucket(intr.ctx, src, cl); err != nil {
				return intr.Err(fmt.Errorf("copy %s to %s: %w", src, dst, err), "copy again into a new prefix")
			}
		case so && !do:
			cl, err := openObjectStore(intr.ctx, src)
			if err != nil {
				return err
			}
			if res, err = objstore.FromBucket(intr.ctx, cl, dst); err != nil {
				return intr.Err(fmt.Errorf("copy %s to %s: %w", src, dst, err), "copy again")
			}
		default:
			return usageError{"copy: one of SRC and DST is a directory and the other an s3:// address (a bucket to a bucket, or a directory to a directory, is not supported)\n" + storeUsage}
		}
		fmt.Printf("copied %d blobs (%d bytes), then the index, from %s to %s\n", res.Blobs, res.Bytes, src, dst)
		return nil
	}
	if s := dist.Suggest(sub, []string{"check", "copy"}); s != "" {
		return usageError{fmt.Sprintf("no sub-command %q; did you mean %q?\n%s", sub, s, storeUsage)}
	}
	return usageError{fmt.Sprintf("no sub-command %q\n%s", sub, storeUsage)}
}

// openObjectStore parses an s3:// address and makes its client.
func openObjectStore(ctx context.Context, addr string) (*objstore.Client, error) {
	a, err := objstore.Parse(addr)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return objstore.Open(ctx, a)
}

// openReadStore opens a store for reading: a directory as store.Open
// does (dir is addr, cleanup does nothing), or a store in object storage
// staged into a private scratch directory (dir; its index, import.hcl and
// the blobs objstore.Stage reads), whose other blobs are fetched from the
// bucket, verified as they stream, when they are opened; cleanup removes
// the scratch directory.
func openReadStore(addr string) (dir string, st *store.Store, cleanup func(), err error) {
	if !objstore.IsObject(addr) {
		st, err = store.Open(addr)
		return addr, st, func() {}, err
	}
	ctx := context.Background()
	cl, err := openObjectStore(ctx, addr)
	if err != nil {
		return "", nil, nil, err
	}
	if dir, err = os.MkdirTemp("", "airgap-read-"); err != nil {
		return "", nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	staged, err := objstore.Stage(ctx, cl, dir)
	if err == nil && staged.ETag == "" {
		err = fmt.Errorf("store %s: %w: no index in the bucket\nhint: check the address; 'airgap import --store ADDR BUNDLE' creates a store", addr, store.ErrNoStore)
	}
	if err == nil {
		st, err = store.Open(dir)
	}
	if err != nil {
		cleanup()
		return "", nil, nil, err
	}
	// An object that does not match its name fails the verb's read,
	// which names it: the replica's log line of it ("cut off, not served
	// whole") would say it twice, in a server's words.
	st.SetRemote(objstore.NewRemote(cl, slog.New(slog.DiscardHandler)), 0)
	return dir, st, cleanup, nil
}
