package main

// export: the connected side writes one signed bundle; with --from-store,
// the offline side exports what its store holds for the next network. Its
// flags (checked in full before anything is fetched or read), its help
// text and the calls into dist/export.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/spf13/pflag"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

type exportCmd struct {
	manifest    string
	from        string
	signKey     string
	out         string
	platforms   []string
	jobs        int
	cache       string
	dryRun      bool
	noDeps      bool
	compression string
	split       string
	since       string
	have        string
	allowEmpty  bool
	asJSON      bool
	maxPackage  string
	maxModule   string
	maxGit      string
	maxDocs     string
	noDocs      bool
	acceptKeys  []string
	noVendor    bool
	allowUnvend bool
	mirror      string
	trustMirror bool
	vars        []tfconfig.VarArg // --var and --var-file, in command-line order
	gateReports string
	gateJobs    int
	allowHosts  []string // --allow-download-host
	fromStore   string
	wait        bool
	fs          *pflag.FlagSet // to tell which flags were given (--from-store refuses the fetching ones)
}

func (c *exportCmd) synopsis() string {
	return "resolve, download and verify providers and modules into one signed bundle"
}

func (c *exportCmd) flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("export", pflag.ContinueOnError)
	fs.StringVar(&c.manifest, "manifest", "", "HCL file saying what to export")
	fs.StringVar(&c.from, "from", "", "derive what to export from this Terraform/OpenTofu project (and its .terraform.lock.hcl)")
	fs.StringVar(&c.signKey, "sign-key", "", "site private key (from 'airgap keygen') that signs the bundle (required unless --dry-run)")
	fs.StringVar(&c.out, "out", "", "bundle file to write (required unless --dry-run)")
	fs.StringSliceVar(&c.platforms, "platform", nil, "os_arch to export (repeatable; overrides the manifest's platforms)")
	fs.IntVar(&c.jobs, "jobs", 8, "parallel downloads")
	fs.StringVar(&c.cache, "cache", "", "download cache (default: the user cache dir/airgap)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "resolve and print the plan (module dependencies included) without downloading provider packages")
	fs.BoolVar(&c.noDeps, "no-deps", false, "do not follow the modules and providers that exported modules need")
	fs.StringVar(&c.compression, "compression", "auto", "auto (compress text, store zips and tarballs as they are), zstd (compress everything) or none")
	fs.StringVar(&c.split, "split", "", "also split the bundle into volumes of at most SIZE (4GiB, 700MB, fat32, dvd, …)")
	fs.StringVar(&c.since, "since", "", "write a delta: carry only blobs that this previous bundle (or split set) lacks")
	fs.StringVar(&c.have, "have", "", "write a delta: carry only blobs missing from this 'airgap inventory --json' of the offline store")
	fs.BoolVar(&c.allowEmpty, "allow-empty", false, "write a bundle even if the manifest or project asks for nothing")
	fs.BoolVar(&c.asJSON, "json", false, "print the plan (--dry-run) or the result as JSON on stdout")
	fs.StringVar(&c.maxPackage, "max-package-size", "1GiB", "refuse a provider package larger than SIZE (the download is cut off there)")
	fs.StringVar(&c.maxModule, "max-module-size", "256MiB", "refuse a module archive downloaded over HTTP larger than SIZE")
	fs.StringVar(&c.maxGit, "max-git-size", "1GiB", "stop a git module source whose repository (objects of every submodule included, beyond the files it checks out) grows past SIZE")
	fs.StringVar(&c.maxDocs, "max-docs-size", "64MiB", "leave out a provider version's documentation (pages and images) larger than SIZE; the bundle says why")
	fs.BoolVar(&c.noDocs, "no-docs", false, "carry no provider documentation (each provider version then records why)")
	fs.StringArrayVar(&c.acceptKeys, "accept-new-publisher-key", nil, "declare, signed in the bundle, that the publisher key FINGERPRINT is approved as new for the namespaces whose providers it signs (repeatable)")
	fs.BoolVar(&c.noVendor, "no-vendor", false, "keep modules' git::, GitHub and https:// module sources as written (warnings) instead of vendoring them into the module")
	fs.BoolVar(&c.allowUnvend, "allow-unvendored", false, "warn about module sources that cannot be vendored (built from variables, s3::, unreachable) instead of failing")
	fs.StringVar(&c.mirror, "provider-mirror", "", "fetch every provider from this network mirror (https://HOST/PATH/; overrides the CLI config's provider_installation), checked against the origin registry's signatures")
	fs.BoolVar(&c.trustMirror, "trust-mirror-hashes", false, "when a mirrored provider's origin registry cannot be reached, carry it on the mirror's hashes alone, marked \"mirror hashes only\" in the bundle")
	fs.Var(varFlag{&c.vars, false}, "var", "with --from: set a root variable used in module sources or versions, as terraform init -var (repeatable; -var works too)")
	fs.Var(varFlag{&c.vars, true}, "var-file", "with --from: read root variables from a .tfvars or .tfvars.json file, as terraform init -var-file (repeatable; -var-file works too)")
	for _, n := range []string{"var", "var-file"} {
		fs.SetAnnotation(n, singleDash, []string{"terraform"})
	}
	fs.StringVar(&c.gateReports, "gate-reports", "", "directory for the gates' reports and output (default: the bundle's path + .gates)")
	fs.IntVar(&c.gateJobs, "gate-jobs", 2, "gate runs at once")
	fs.StringArrayVar(&c.allowHosts, "allow-download-host", nil, "with a proxy registry (a CLI config host block): let its answers send downloads to HOST too, not only to the proxy (repeatable; adds to the manifest's allow_download_hosts)")
	fs.StringVar(&c.fromStore, "from-store", "", "offline side: export what this store (a directory, or s3://BUCKET/PREFIX?…) holds (everything, or what --manifest, --from or ADDRESS[@VERSION] arguments name), with no network, for the next network")
	fs.BoolVar(&c.wait, "wait", false, "with --from-store: wait for an import, prune or gc of the store to finish instead of failing")
	c.fs = fs
	return fs
}

func (*exportCmd) help() verbHelp {
	return verbHelp{
		usage: "(--manifest FILE | --from DIR) --sign-key KEY --out BUNDLE [flags]\n       airgap export --from-store STORE [--manifest FILE | --from DIR | ADDRESS[@VERSION]...] --sign-key KEY --out BUNDLE [flags]",
		about: "Connected side: resolves providers and modules against their registries, downloads and\nverifies them against the publishers' signatures, and writes one signed bundle.\nModules' git::, GitHub and https:// archive sources are vendored into the calling\nmodule (--no-vendor keeps them as written; --allow-unvendored only warns about the\nones that cannot be vendored). The manifest's gate blocks run scanners over every module\nand provider plugin (an entry that fails one fails the export unless waived); the\nbundle carries their results and reports and a CycloneDX SBOM of everything in it.\nEach provider version's documentation (the docs/ folder of its repository at the\nversion's tag, within --max-docs-size) and each module's README, inputs and outputs\nare carried too; a provider whose docs cannot be fetched is exported without them\n(--no-docs, or docs = false in a provider block, leaves them out).\n\nWith --from-store, the offline side exports what a store holds for the next network,\nwith no network: everything, or what a manifest, a project or addresses name. The\nbundle carries the store's blobs byte for byte, its withdrawals and publisher-key\napprovals, and a chain of custody: every earlier bundle's signed manifest, which the\nnext enclave checks again. Every blob is hashed from the store before a byte is\nwritten. --since the last bundle sent makes a delta over a one-way link.",
		env: []string{"AIRGAP_PASSPHRASE  passphrase of --sign-key when there is no terminal",
			"SOURCE_DATE_EPOCH  bundle timestamp (same inputs give a byte-identical bundle)",
			"TF_TOKEN_<host>, TF_CLI_CONFIG_FILE  the CLI configuration, as Terraform reads it: credentials,\n    credentials_helper, host blocks (proxy registries), provider_installation network mirrors",
			"TF_REGISTRY_CLIENT_TIMEOUT  seconds for registry metadata and a credentials helper's answer (default 10)",
			"TF_VAR_<name>  with --from: a root variable's value, as terraform init reads it",
			"HTTPS_PROXY, NO_PROXY  proxy for registry requests"},
		examples: []string{"airgap export --manifest airgap.hcl --dry-run --json",
			"airgap export --manifest airgap.hcl --sign-key keys/site.key.asc --out site.bundle",
			"airgap export --from ./infra --platform linux_amd64 --sign-key k.key.asc --out site.bundle --split dvd",
			"airgap export --manifest airgap.hcl --provider-mirror https://artifactory.corp/api/terraform/mirror/ --sign-key k.key.asc --out site.bundle",
			"airgap export --manifest airgap.hcl --allow-download-host github.com --sign-key k.key.asc --out site.bundle   # proxy registry + github.com",
			"airgap export --manifest airgap.hcl --sign-key k.key.asc --out site.bundle --accept-new-publisher-key FINGERPRINT",
			"airgap export --from ./infra --var-file prod.tfvars --var env=prod --dry-run   # module sources from const variables",
			"airgap export --manifest gated.hcl --sign-key k.key.asc --out site.bundle --gate-reports reports/ --gate-jobs 4",
			"airgap export --from-store /srv/airgap --sign-key enclave.key.asc --out next.bundle   # everything, for the next network",
			"airgap export --from-store /srv/airgap --since next.bundle --sign-key enclave.key.asc --out next-2.bundle   # a diode: what changed",
			"airgap export --from-store /srv/airgap hashicorp/aws@5.61.0 example/vpc/aws --sign-key enclave.key.asc --out some.bundle"},
	}
}

// varFlag collects --var and --var-file into one list in command-line
// order: as with terraform, a later one wins.
type varFlag struct {
	list *[]tfconfig.VarArg
	file bool
}

func (f varFlag) String() string { return "" }

func (f varFlag) Type() string {
	if f.file {
		return "FILE"
	}
	return "NAME=VALUE"
}

func (f varFlag) Set(s string) error {
	if f.file {
		*f.list = append(*f.list, tfconfig.VarArg{File: s})
		return nil
	}
	a, err := tfconfig.ParseVarArg(s)
	if err != nil {
		return err
	}
	*f.list = append(*f.list, a)
	return nil
}

// exportPlan is an export's checked command line.
type exportPlan struct {
	req       *export.Request
	comp      bundle.Compression
	splitSize int64
	modTime   time.Time
	key       *openpgp.Entity
	cache     string
	delta     *export.DeltaBase
	offline   *export.Offline
	maxPkg    int64
	maxMod    int64
	cli       *registry.CLIConfig
	methods   []registry.InstallMethod
	maxGit    int64
	maxDocs   int64
	accept    []string
}

// check validates every flag and input before anything is fetched.
func (c *exportCmd) check(args []string) (p *exportPlan, err error) {
	p = &exportPlan{}
	switch {
	case len(args) != 0:
		return nil, checkUsage("export", args, nil)
	case (c.manifest == "") == (c.from == ""):
		return nil, usageError{"give exactly one of --manifest FILE or --from DIR\nusage: airgap export " + c.help().usage}
	case !c.dryRun && (c.signKey == "" || c.out == ""):
		err := checkUsage("export", nil, nil, flagVal{"sign-key", c.signKey}, flagVal{"out", c.out})
		return nil, usageError{strings.Replace(err.Error(), " (required)", " (required unless --dry-run)", 1)}
	case c.since != "" && c.have != "":
		return nil, usageError{"give at most one of --since and --have"}
	case c.jobs < 1 || c.jobs > 64:
		return nil, usageError{fmt.Sprintf("--jobs %d: give 1 to 64 parallel downloads", c.jobs)}
	case len(c.vars) > 0 && c.from == "":
		return nil, usageError{"--var and --var-file set variables of a --from project (a manifest has none)"}
	case c.gateJobs < 1 || c.gateJobs > 64:
		return nil, usageError{fmt.Sprintf("--gate-jobs %d: give 1 to 64 gate runs at once", c.gateJobs)}
	}
	for _, h := range c.allowHosts {
		if err := registry.CheckDownloadHost(h); err != nil {
			return nil, usageError{"--allow-download-host " + err.Error()}
		}
	}
	if c.gateReports == "" && c.out != "" {
		c.gateReports = c.out + ".gates"
	}
	if c.out != "" {
		if fi, err := os.Stat(filepath.Dir(c.out)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--out %s: the directory %s does not exist\nhint: create it first; nothing was downloaded", c.out, filepath.Dir(c.out))
		}
	}
	if p.comp, err = bundle.ParseCompression(c.compression); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.split != "" {
		if p.splitSize, err = bundle.ParseSize(c.split); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	if p.maxPkg, err = bundle.ParseSize(c.maxPackage); err != nil {
		return nil, usageError{"--max-package-size: " + err.Error()}
	}
	if p.maxMod, err = bundle.ParseSize(c.maxModule); err != nil {
		return nil, usageError{"--max-module-size: " + err.Error()}
	}
	if p.maxGit, err = bundle.ParseSize(c.maxGit); err != nil {
		return nil, usageError{"--max-git-size: " + err.Error()}
	}
	if p.maxDocs, err = bundle.ParseSize(c.maxDocs); err != nil {
		return nil, usageError{"--max-docs-size: " + err.Error()}
	}
	for _, k := range c.acceptKeys {
		fp, err := verify.ParseFingerprint(k)
		if err != nil {
			return nil, usageError{"--accept-new-publisher-key: " + err.Error()}
		}
		p.accept = append(p.accept, fp)
	}
	if c.dryRun && len(p.accept) > 0 {
		return nil, usageError{"--accept-new-publisher-key declares a key in the bundle; a dry run writes none (it shows the keys only after a real export)"}
	}
	if err := export.CheckPlatforms(c.platforms); err != nil {
		return nil, usageError{err.Error()}
	}
	if p.modTime, err = bundle.SourceDate(); err != nil {
		return nil, err
	}
	in := tfconfig.Inputs{Vars: c.vars, Env: os.Environ()}
	if p.req, err = export.LoadRequest(c.manifest, c.from, c.platforms, c.allowEmpty, in); err != nil {
		return nil, err
	}
	p.req.NoDeps = c.noDeps
	p.req.NoVendor, p.req.AllowUnvendored = c.noVendor, c.allowUnvend
	if c.signKey != "" {
		if p.key, err = verify.ReadSigningKeyFile(c.signKey); err != nil {
			return nil, err
		}
	}
	switch {
	case c.have != "":
		// A dry run reads it too: the store's withdrawals change the plan.
		if p.delta, p.offline, err = export.ReadHave(c.have); err != nil {
			return nil, err
		}
	case !c.dryRun && c.since != "":
		if p.delta, err = export.ReadDeltaBase(c.since, "", p.key); err != nil {
			return nil, err
		}
	}
	if p.cli, err = registry.LoadCLIConfig(); err != nil {
		return nil, err
	}
	if p.methods, err = p.cli.Methods(c.mirror); err != nil {
		return nil, usageError{err.Error()}
	}
	p.cache, err = export.CacheDir(c.cache)
	return p, err
}

func (c *exportCmd) run(args []string) error {
	exportGC()
	if c.fromStore != "" {
		return c.runFromStore(args)
	}
	if c.wait {
		return usageError{"--wait is for --from-store (an export from the registries takes no store lock)"}
	}
	p, err := c.check(args)
	if err != nil {
		return err
	}
	intr := catchInterrupt()
	defer intr.Stop()
	ctx := intr.ctx
	start := time.Now()
	client := registry.New(registry.Options{Credentials: p.cli.Credentials})
	for host, hb := range p.cli.Hosts {
		client.UseHostBlock(host, hb)
	}
	client.AllowDownloadHosts(append(p.req.AllowDownloadHosts, c.allowHosts...)...)
	// A second attempt only when the first found a damaged file in the
	// download cache while writing (export.ErrDamagedCache: removed, and
	// nothing written): every cached package is then hashed before use.
	var res *export.Result
	var sum *export.Summary
	var ix *bundle.PartsIndex
	for attempt := 0; ; attempt++ {
		prog := &export.Progress{}
		line := progress.Start(os.Stderr, prog.Status(client.Received.Load))
		client.Notice = line.Logf
		res, err = export.Run(ctx, p.req, export.Options{
			Client: client, CacheDir: p.cache, Jobs: c.jobs,
			SiteKey: p.key, DryRun: c.dryRun, Log: line.Logf, Progress: prog,
			MaxPackageSize: p.maxPkg, MaxModuleSize: p.maxMod, MaxGitSize: p.maxGit,
			MaxDocsSize: p.maxDocs, NoDocs: c.noDocs,
			Methods: p.methods, TrustMirrorHashes: c.trustMirror,
			GateReports: c.gateReports, GateJobs: c.gateJobs, Offline: p.offline,
			RecheckCache: attempt > 0,
		})
		line.Stop()
		if err != nil {
			return intr.Err(err, fmt.Sprintf("run the same command again; verified downloads are kept in %s and partial ones resume", p.cache))
		}
		sum = res.Summarize(c.dryRun, time.Since(start))
		if c.dryRun {
			break
		}
		ix, err = export.WriteBundle(res, sum, export.WriteOptions{Out: c.out, Key: p.key, Tool: "airgap " + Version,
			Compression: p.comp, ModTime: p.modTime, Delta: p.delta, SplitSize: p.splitSize, AcceptKeys: p.accept, Log: line.Logf, Offline: p.offline})
		if attempt == 0 && errors.Is(err, export.ErrDamagedCache) && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "notice: %v\nnotice: nothing was written; checking every cached package and exporting again\n", err)
			continue
		}
		if errors.Is(err, export.ErrDamagedCache) {
			return fmt.Errorf("%w\nhint: the download cache %s changed while export ran; the entry was removed, so the same command fetches it again; check what else writes to the cache", err, p.cache)
		}
		if err != nil {
			return err
		}
		break
	}
	if !c.dryRun {
		sum.Millis = time.Since(start).Milliseconds()
		if ix != nil && !c.asJSON {
			ix.WriteText(os.Stdout, c.out)
		}
	}
	if c.asJSON {
		return printJSON(sum)
	}
	fmt.Print(sum.Text())
	return nil
}

// fetchOnlyFlags mean nothing to an export from a store: nothing is
// fetched, no gate runs and nothing is newly approved.
var fetchOnlyFlags = []string{"dry-run", "jobs", "cache", "max-package-size", "max-module-size", "max-git-size",
	"accept-new-publisher-key", "no-vendor", "allow-unvendored", "provider-mirror", "trust-mirror-hashes", "var", "var-file",
	"gate-reports", "gate-jobs", "allow-empty", "max-docs-size", "no-docs", "allow-download-host"}

// storePlan is an export from a store's checked command line.
type storePlan struct {
	req       *export.Request // nil: everything, or args
	comp      bundle.Compression
	splitSize int64
	modTime   time.Time
	delta     *export.DeltaBase
}

// checkFromStore validates the command line before the store is touched.
func (c *exportCmd) checkFromStore(args []string) (*storePlan, error) {
	for _, f := range fetchOnlyFlags {
		if c.fs != nil && c.fs.Changed(f) {
			return nil, usageError{fmt.Sprintf("--%s has no meaning with --from-store: an export from a store fetches nothing, runs no gate and approves nothing new (it carries what the store holds)", f)}
		}
	}
	switch {
	case c.signKey == "" || c.out == "":
		return nil, checkUsage("export", nil, nil, flagVal{"sign-key", c.signKey}, flagVal{"out", c.out})
	case c.manifest != "" && c.from != "":
		return nil, usageError{"give at most one of --manifest FILE or --from DIR with --from-store (or neither, for the whole store)"}
	case len(args) > 0 && (c.manifest != "" || c.from != ""):
		return nil, usageError{"give addresses or --manifest or --from, not several (addresses: ADDRESS or ADDRESS@VERSION, e.g. hashicorp/aws@5.61.0)"}
	case c.since != "" && c.have != "":
		return nil, usageError{"give at most one of --since and --have"}
	}
	if fi, err := os.Stat(filepath.Dir(c.out)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--out %s: the directory %s does not exist\nhint: create it first; nothing was written", c.out, filepath.Dir(c.out))
	}
	if abs, err := filepath.Abs(c.out); err == nil && !objstore.IsObject(c.fromStore) {
		if st, err := filepath.Abs(c.fromStore); err == nil && strings.HasPrefix(abs, st+string(filepath.Separator)) {
			return nil, usageError{fmt.Sprintf("--out %s is inside the store %s: write the bundle elsewhere", c.out, c.fromStore)}
		}
	}
	p := &storePlan{}
	var err error
	if p.comp, err = bundle.ParseCompression(c.compression); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.split != "" {
		if p.splitSize, err = bundle.ParseSize(c.split); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	if err := export.CheckPlatforms(c.platforms); err != nil {
		return nil, usageError{err.Error()}
	}
	if p.modTime, err = bundle.SourceDate(); err != nil {
		return nil, err
	}
	if c.manifest != "" || c.from != "" {
		if p.req, err = export.LoadRequest(c.manifest, c.from, c.platforms, false, tfconfig.Inputs{Env: os.Environ()}); err != nil {
			return nil, err
		}
		p.req.NoDeps = c.noDeps
	} else if c.noDeps {
		return nil, usageError{"--no-deps is for a manifest or project (addresses and the whole store carry what they name)"}
	} else if len(c.platforms) > 0 {
		return nil, usageError{"--platform chooses among a manifest's or project's providers; with addresses or the whole store, every platform the store has is carried"}
	}
	return p, nil
}

// runFromStore exports from the store at c.fromStore: lock it, select,
// plan (manifest, withdrawals, approvals, chain), hash every blob, write.
func (c *exportCmd) runFromStore(args []string) error {
	p, err := c.checkFromStore(args)
	if err != nil {
		return err
	}
	key, err := verify.ReadSigningKeyFile(c.signKey)
	if err != nil {
		return err
	}
	if c.since != "" || c.have != "" {
		if p.delta, err = export.ReadDeltaBase(c.since, c.have, key); err != nil {
			return err
		}
	}
	intr := catchInterrupt()
	defer intr.Stop()
	carry, err := c.openCarry(intr.ctx)
	if err != nil {
		return err
	}
	defer carry.Close()
	sel, all, notes, err := export.SelectFromStore(intr.ctx, carry.BlobFile, &carry.Index.Catalog, p.req, args)
	if err != nil {
		return err
	}
	if len(sel.Providers)+len(sel.Modules)+len(sel.Releases) == 0 {
		return fmt.Errorf("%w: the store %s serves nothing\nhint: import a bundle into it first", export.ErrEmpty, carry.Name)
	}
	var withdraw, reinstate []dist.Withdrawal
	if p.req != nil {
		withdraw, reinstate = p.req.Withdraw, p.req.Reinstate
	}
	plan, err := carry.Plan(sel, all, withdraw, reinstate)
	if err != nil {
		return err
	}
	var written atomic.Int64
	_, total := plan.Manifest.Totals()
	line := progress.Start(os.Stderr, progress.Bytes("check and write "+filepath.Base(c.out), total, written.Load))
	sum, ix, err := export.WriteFromStore(intr.ctx, carry, plan, export.StoreWriteOptions{
		Out: c.out, Key: key, Tool: "airgap " + Version, Compression: p.comp, ModTime: p.modTime,
		Delta: p.delta, SplitSize: p.splitSize, Log: line.Logf,
		Written: func(n int64) { written.Add(n) },
	})
	line.Stop()
	if err != nil {
		return intr.Err(err, "run the same command again")
	}
	sum.Notes = append(sum.Notes, notes...)
	if c.asJSON {
		return printJSON(sum)
	}
	if ix != nil {
		ix.WriteText(os.Stdout, c.out)
	}
	fmt.Print(storeSummaryText(sum))
	return nil
}

// openCarry opens the store to export from: a directory under its lock,
// or a store in object storage under its lease (objstore.OpenCarry),
// whose blobs stream from the bucket through the same checks.
func (c *exportCmd) openCarry(ctx context.Context) (*store.Carry, error) {
	if !objstore.IsObject(c.fromStore) {
		return store.OpenCarry(c.fromStore, c.wait)
	}
	cl, err := openObjectStore(ctx, c.fromStore)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	// A mismatching object is the export's refusal, naming it: the
	// replica's log line of it would say it twice.
	return objstore.OpenCarry(ctx, cl, fmt.Sprintf("airgap export --from-store on %s (pid %d)", host, os.Getpid()), c.wait,
		slog.New(slog.DiscardHandler))
}

// storeSummaryText is the export's result for people.
func storeSummaryText(s *export.StoreSummary) string {
	q := dist.Printable
	var b strings.Builder
	kind := "full bundle"
	if s.Delta != "" {
		kind = fmt.Sprintf("delta against %s (%d blobs omitted)", q(s.Delta), s.Omitted)
	}
	out := s.Out
	if s.Parts > 0 {
		out = fmt.Sprintf("%s.000-%03d (%d parts)", s.Out, s.Parts, s.Parts)
	}
	fmt.Fprintf(&b, "exported from the store %s: %s\n  bundle:    %s, %s\n  content:   %d provider versions (%d packages), %d module versions\n",
		q(s.Store), q(out), s.Bundle, kind, s.ProviderVersions, s.Packages, s.ModuleVersions)
	fmt.Fprintf(&b, "  blobs:     %d, %s, every one hashed again from the store as it was copied\n", s.Blobs, progress.Size(s.BlobBytes))
	fmt.Fprintf(&b, "  chain:     %d hop(s) of custody carried, each with its signed manifest", s.Hops)
	if s.RecordedHops > 0 {
		fmt.Fprintf(&b, "; %d recorded only (no manifest kept)", s.RecordedHops)
	}
	b.WriteString("\n")
	if s.Withdrawals > 0 || s.PublisherKeys > 0 {
		fmt.Fprintf(&b, "  carries:   %d withdrawn version(s), %d publisher key approval(s) of this store\n", s.Withdrawals, s.PublisherKeys)
	}
	if s.SBOM != "" {
		fmt.Fprintf(&b, "  sbom:      %s\n", s.SBOM)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "  note: %s\n", q(n))
	}
	fmt.Fprintf(&b, "  in %.1f s\n", float64(s.Millis)/1000)
	return b.String()
}

// exportMemoryLimit is the soft limit of the Go runtime's memory an export
// collects to stay within (debug.SetMemoryLimit), unless GOGC or
// GOMEMLIMIT is set in its environment.
const exportMemoryLimit = 56 << 20

// exportGC sets export's collector. What bounds its memory is the budget
// of HCL tokens parsed at once (dist.MaxHCLTokensParsing) and the bundle
// writer's fixed buffers; between collections the heap also holds the
// garbage of the parses (token slices outgrown, syntax trees released),
// which at the default GOGC=100 doubled the ~30 MB live heap of the
// module phase. The soft limit is the second line: the collector runs
// early, and returns freed pages, only when the runtime nears
// exportMemoryLimit (the binary's ~35 MiB of mapped code and data come on
// top: 83-84 MiB resident on the bench's real site), so the module phase
// does not pay for collections the limit does not need (GOGC=50 ran 116
// in its 2.3 s). It is soft: a heap that needs more (one hostile file at
// MaxHCLTokens, 150-230 MiB) gets it, the collector then capped by the
// runtime at half the CPU.
func exportGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(exportMemoryLimit)
	}
}
