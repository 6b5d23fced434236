package export

import (
	"context"
	"os"
	"path/filepath"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/dist/vendoring"
)

// vendor makes a fetched module self-contained (see dist/vendoring): its
// normalized archive is unpacked into work/vendored, the non-registry
// sources it calls are fetched and copied in, the calls rewritten, and res
// then points at the new tree and its archive. Nothing changes with
// Request.NoVendor or when the module calls nothing remote. Fetched
// packages go through the same getter and download limits as the module.
//
// The tree is read through parsed (each file parsed once for the whole
// module job), and res.Root becomes it whether or not anything was
// vendored: the archive carried, unpacked, is what the module job reads.
func (e *exporter) vendor(ctx context.Context, what, work string, res *getter.Result, parsed *tfconfig.Parsed) ([]dist.VendoredCall, error) {
	if e.req.NoVendor {
		return nil, nil
	}
	tree := vendorTree(work)
	budget := getter.NewBudget()
	if err := getter.Unpack(ctx, res.Archive, tree, budget); err != nil {
		return nil, err
	}
	vr, err := vendoring.Vendor(ctx, tree, res.Subdir, budget, vendoring.Options{
		Allow:  e.req.AllowUnvendored,
		Parsed: parsed,
		Log: func(format string, a ...any) {
			e.opt.Log(what+": "+format, a...)
		},
		Fetch: func(ctx context.Context, src *getter.Source) (*getter.Result, func(), error) {
			dir, err := os.MkdirTemp(work, "dep-")
			if err != nil {
				return nil, nil, err
			}
			done := func() { os.RemoveAll(dir) }
			r, err := getter.FetchWith(ctx, src, dir, e.getterOptions())
			return r, done, err
		},
	})
	if err != nil {
		return nil, err
	}
	for _, w := range vr.Warnings {
		e.jobWarn(ctx, what+": "+w+" (left as written: offline clients will fail to fetch it unless it is reachable there)")
	}
	if len(vr.Calls) == 0 {
		res.Root = tree
		return nil, nil
	}
	out := filepath.Join(work, "vendored.tar.gz")
	if err := getter.NormalizeToFile(ctx, tree, out); err != nil {
		return nil, err
	}
	res.Archive, res.Root = out, tree
	return vr.Calls, nil
}

// getterOptions are the limits module sources are fetched within.
func (e *exporter) getterOptions() getter.Options {
	return getter.Options{Download: e.moduleDownload, MaxGitSize: e.opt.MaxGitSize}
}

// moduleDownload downloads a module archive over HTTP, within MaxModuleSize.
func (e *exporter) moduleDownload(ctx context.Context, u, path string) error {
	_, _, err := e.opt.Client.Download(ctx, u, path, e.opt.MaxModuleSize)
	return err
}

// vendorTree is where vendor unpacks a module's archive in work.
func vendorTree(work string) string { return filepath.Join(work, "vendored") }
