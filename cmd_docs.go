package main

// docs: a store's documentation on the terminal. Its flags, its help
// text and the calls into bundle/store and dist/docs.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
)

type docsCmd struct {
	storeD string
}

func (c *docsCmd) synopsis() string {
	return "print a provider's documentation page, or a module's README, inputs and outputs, from a store"
}

func (c *docsCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("docs", pflag.ContinueOnError)
	fs.StringVar(&c.storeD, "store", "", "store directory (required)")
	return fs
}

func (*docsCmd) help() verbHelp {
	return verbHelp{
		usage: "--store DIR ADDRESS[@VERSION] [NAME]",
		about: "Prints documentation from a store, for engineers without a browser: with a provider\naddress, the pages of its newest documented version (or VERSION) by category, or with\nNAME one page (resources/s3_bucket, s3_bucket or aws_s3_bucket); with a module address,\nits README, inputs, outputs and required providers. Text from the bundle is escaped\nfor the terminal. The catalog page serves the same, rendered.",
		examples: []string{"airgap docs --store /srv/airgap hashicorp/aws", "airgap docs --store /srv/airgap hashicorp/aws@5.80.0 s3_bucket | less",
			"airgap docs --store /srv/airgap terraform-aws-modules/vpc/aws@5.8.1"},
	}
}

func (c *docsCmd) run(args []string) error {
	if len(args) == 1 {
		args = append(args, "") // NAME is optional
	}
	if err := checkUsage("docs", args, []string{"ADDRESS[@VERSION]", "[NAME]"}, flagVal{"store", c.storeD}); err != nil {
		return err
	}
	st, err := store.Open(c.storeD)
	if err != nil {
		return err
	}
	addr, ver, _ := strings.Cut(args[0], "@")
	cat := st.Index().Catalog
	if pv, found, err := findProvider(&cat, addr, ver); found {
		if err != nil {
			return err
		}
		return printProviderDocs(st, pv, args[1])
	}
	if mv, found, err := findModule(&cat, addr, ver); found {
		if err != nil {
			return err
		}
		if args[1] != "" {
			return fmt.Errorf("module %s has one page of documentation; give no NAME", mv)
		}
		return printModuleDocs(st, mv)
	}
	return fmt.Errorf("the store serves no provider or module %q\nhint: 'airgap inventory --store %s' lists what it serves", dist.Printable(addr), c.storeD)
}

// findProvider finds addr (a provider source, any form Terraform takes)
// at version ver, or the newest version with docs when ver is "".
func findProvider(cat *dist.Catalog, addr, ver string) (*dist.ProviderVersion, bool, error) {
	p, err := dist.ParseProviderSource(addr)
	if err != nil {
		return nil, false, nil
	}
	var found, newest *dist.ProviderVersion
	for i := range cat.Providers {
		pv := &cat.Providers[i]
		if !strings.EqualFold(pv.Addr(), p.String()) {
			continue
		}
		found = pv
		if ver == "" && pv.Docs != nil && pv.Docs.Archive != "" || pv.Version == ver {
			newest = pv
		}
	}
	switch {
	case found == nil:
		return nil, false, nil
	case newest == nil && ver != "":
		return nil, true, fmt.Errorf("the store does not serve version %s of provider %s", dist.Printable(ver), found.Addr())
	case newest == nil:
		return nil, true, fmt.Errorf("no version of provider %s in the store carries its documentation (newest: %s)", found.Addr(), found.Docs.Summary())
	}
	return newest, true, nil
}

// findModule finds a module address at version ver, or its newest.
func findModule(cat *dist.Catalog, addr, ver string) (*dist.ModuleVersion, bool, error) {
	m, _, ok, err := dist.ParseModuleSource(addr)
	if err != nil || !ok {
		return nil, false, nil
	}
	var found, pick *dist.ModuleVersion
	for i := range cat.Modules {
		mv := &cat.Modules[i]
		if strings.EqualFold(mv.Addr(), m.String()) {
			found = mv
			if ver == "" || mv.Version == ver {
				pick = mv
			}
		}
	}
	switch {
	case found == nil:
		return nil, false, nil
	case pick == nil:
		return nil, true, fmt.Errorf("the store does not serve version %s of module %s", dist.Printable(ver), found.Addr())
	case pick.Docs == "":
		return nil, true, fmt.Errorf("module %s: the store has no documentation for it (the bundle that brought it did not carry any)", pick)
	}
	return pick, true, nil
}

func printProviderDocs(st *store.Store, pv *dist.ProviderVersion, name string) error {
	if pv.Docs == nil || pv.Docs.Archive == "" {
		return fmt.Errorf("provider %s: no documentation: %s", pv, pv.Docs.Summary())
	}
	f, err := st.OpenBlob(pv.Docs.Archive)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	ix, err := docs.ReadIndex(f, fi.Size(), dist.MaxDocsBytes)
	if err != nil {
		return fmt.Errorf("provider %s: its documentation in the store is damaged: %w", pv, err)
	}
	if name == "" {
		fmt.Printf("%s %s: %s\n\n", pv.Addr(), pv.Version, dist.Printable(pv.Docs.Summary()))
		docs.WriteList(os.Stdout, ix)
		return nil
	}
	e, ok := ix.Find(pv.Type, name)
	if !ok {
		return fmt.Errorf("provider %s has no page %q\nhint: 'airgap docs --store %s %s@%s' lists its pages", pv, dist.Printable(name), st.Root(), pv.Addr(), pv.Version)
	}
	src, err := docs.ReadFile(f, e, docs.MaxTerminalPage)
	if errors.Is(err, docs.ErrPageTooLarge) {
		return fmt.Errorf("provider %s: the page %s/%s is %s, over the %s this prints", pv, e.Category, e.Name, dist.HumanSize(e.Size), dist.HumanSize(docs.MaxTerminalPage))
	}
	if err != nil {
		return err
	}
	docs.WritePage(os.Stdout, src)
	return nil
}

func printModuleDocs(st *store.Store, mv *dist.ModuleVersion) error {
	f, err := st.OpenBlob(mv.Docs)
	if err != nil {
		return err
	}
	defer f.Close()
	md, err := docs.ParseModuleDocs(f)
	if err != nil {
		return fmt.Errorf("module %s: %w", mv, err)
	}
	fmt.Printf("%s %s\n\n", mv.Addr(), mv.Version)
	docs.WriteModule(os.Stdout, md)
	return nil
}
