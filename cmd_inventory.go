package main

// inventory: what a store serves, its history and its downloads. Its
// flags, its help text and the calls into bundle/store.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/verify"
)

type inventoryCmd struct {
	storeD string
	sbom   string
	asJSON bool
	usage  bool
}

func (c *inventoryCmd) synopsis() string {
	return "list what a store serves and the bundles imported into it"
}

func (c *inventoryCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("inventory", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory, or s3://BUCKET/PREFIX?… (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (usable as 'airgap export --have')")
	fs.StringVar(&c.sbom, "sbom", "", "also write the SBOM of everything the store serves (CycloneDX 1.6 JSON) to FILE")
	fs.BoolVar(&c.usage, "usage", false, "list how often each version was downloaded through 'airgap serve', and when last (with --json: that as JSON)")
	return fs
}

func (*inventoryCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR [--json] [--sbom FILE] [--usage]",
		about: "Lists the provider and module versions a store serves (with their gate results and reports)\nand the bundles imported into it; --json is what 'airgap export --have' reads to make a\ndelta; --sbom writes a CycloneDX SBOM of everything the store serves; --usage lists instead\nhow often each version (and platform) was downloaded through 'airgap serve', and when last.",
		examples: []string{"airgap inventory --store /srv/airgap", "airgap inventory --store /srv/airgap --json > have.json",
			"airgap inventory --store /srv/airgap --sbom store.cdx.json",
			"airgap inventory --store /srv/airgap --usage --json"},
	}
}

func (c *inventoryCmd) run(args []string) error {
	if err := checkUsage("inventory", args, nil, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	if c.usage && !objstore.IsObject(c.storeD) {
		if c.sbom != "" {
			return usageError{"--usage and --sbom: give one of them"}
		}
		rep, err := store.LoadUsageReport(c.storeD)
		if err != nil {
			return err
		}
		if c.asJSON {
			return printJSON(rep)
		}
		rep.WriteText(os.Stdout)
		return nil
	}
	var inv *store.Inventory
	var err error
	if objstore.IsObject(c.storeD) {
		var scratch, objects string
		var cleanup func()
		var cl *objstore.Client
		inv, scratch, objects, cl, cleanup, err = objectInventory(c.storeD)
		if err != nil {
			return err
		}
		defer cleanup()
		if c.sbom != "" && c.usage {
			return usageError{"--usage and --sbom: give one of them"}
		}
		if c.sbom != "" {
			// Each build information document streamed from the
			// bucket, hashed and bounded as on disk.
			remote := objstore.NewRemote(cl, slog.New(slog.DiscardHandler))
			if err := c.writeSBOM(&inv.Index, func(d verify.Digest, limit int64) ([]byte, error) {
				return store.ReadRemoteBlob(context.Background(), remote, d, limit)
			}); err != nil {
				return err
			}
		}
		if c.usage { // the counts every replica adds to, staged beside the index
			rep, err := store.LoadUsageReport(scratch)
			if err != nil {
				return err
			}
			rep.Store = c.storeD
			if c.asJSON {
				return printJSON(rep)
			}
			rep.WriteText(os.Stdout)
			return nil
		}
		if !c.asJSON {
			// Read as on disk in the scratch directory; named as the
			// bucket's (the store, and each blob by its object).
			var b strings.Builder
			inv.WriteText(&b, scratch)
			text := strings.Replace(b.String(), "store "+scratch+":", "store "+c.storeD+":", 1)
			text = strings.ReplaceAll(text, filepath.Join(scratch, filepath.FromSlash(objstore.BlobPrefix)), objects+objstore.BlobPrefix)
			_, err := os.Stdout.WriteString(text)
			return err
		}
	} else {
		inv, err = store.LoadInventory(c.storeD)
	}
	if err != nil {
		return err
	}
	if c.sbom != "" && !objstore.IsObject(c.storeD) {
		if err := c.writeSBOM(&inv.Index, func(d verify.Digest, limit int64) ([]byte, error) {
			return store.ReadBlobFrom(c.storeD, d, limit)
		}); err != nil {
			return err
		}
	}
	if c.asJSON {
		if inv.PolicyErr != nil {
			// The inventory carries the policy verify forecasts with:
			// one without it would forecast a different import.
			return fmt.Errorf("the store's import policy: %w", inv.PolicyErr)
		}
		return printJSON(inv)
	}
	inv.WriteText(os.Stdout, c.storeD)
	return nil
}

// writeSBOM writes the store's SBOM (store.IndexSBOM) to --sbom, reading
// each blob with read (verified, within its limit).
func (c *inventoryCmd) writeSBOM(ix *store.Index, read func(d verify.Digest, limit int64) ([]byte, error)) error {
	b, err := store.IndexSBOM(ix, read, "airgap "+Version)
	if err != nil {
		return fmt.Errorf("--sbom: %w", err)
	}
	if err := bundle.CreateAtomic(c.sbom, func(f *os.File) error { _, err := f.Write(b); return err }); err != nil {
		return fmt.Errorf("--sbom: %w", err)
	}
	fmt.Fprintf(os.Stderr, "wrote the store's SBOM (CycloneDX 1.6) to %s\n", c.sbom)
	return nil
}

// objectInventory is the inventory of a store in object storage: its
// index, import.hcl and the blobs the inventory reads (objstore.Stage)
// read into a private scratch directory (removed by cleanup) and read
// there as on disk, with the blobs the bucket lists. objects is the
// bucket's prefix as s3://BUCKET/PREFIX/.
func objectInventory(addr string) (inv *store.Inventory, scratch, objects string, cl *objstore.Client, cleanup func(), err error) {
	ctx := context.Background()
	if cl, err = openObjectStore(ctx, addr); err != nil {
		return nil, "", "", nil, nil, err
	}
	if scratch, err = os.MkdirTemp("", "airgap-inventory-"); err != nil {
		return nil, "", "", nil, nil, err
	}
	cleanup = func() { os.RemoveAll(scratch) }
	fail := func(err error) (*store.Inventory, string, string, *objstore.Client, func(), error) {
		cleanup()
		return nil, "", "", nil, nil, err
	}
	staged, err := objstore.Stage(ctx, cl, scratch)
	if err != nil {
		return fail(err)
	}
	if staged.ETag == "" {
		return fail(fmt.Errorf("store %s: %w: no index in the bucket\nhint: check the address; 'airgap import --store ADDR BUNDLE' creates a store", addr, store.ErrNoStore))
	}
	if inv, err = store.LoadInventory(scratch); err != nil {
		return fail(err)
	}
	objs, err := cl.ListBlobs(ctx)
	if err != nil {
		return fail(err)
	}
	inv.Blobs = inv.Blobs[:0]
	for _, o := range objs {
		if hex := strings.TrimPrefix(o.Name, objstore.BlobPrefix); verify.IsHex64(hex) {
			inv.Blobs = append(inv.Blobs, verify.Digest("sha256:"+hex))
		}
	}
	a := cl.Addr()
	objects = objstore.Scheme + a.Bucket + "/"
	if a.Prefix != "" {
		objects += a.Prefix + "/"
	}
	return inv, scratch, objects, cl, cleanup, nil
}
