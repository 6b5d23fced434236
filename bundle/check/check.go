package check

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Options configure a Checker.
type Options struct {
	// Signer signed the manifest; a site re-signature must be by this key.
	Signer verify.Signer
	// SiteKeys are the keys trusted to sign bundles (the import or verify
	// keyring). No provider not marked as re-signed may have its SHA256SUMS
	// signed by one of them, nor by Signer: a site key is never a publisher
	// key.
	SiteKeys openpgp.EntityList
	// SpoolDir is where Spool writes blobs ("" means the system temp dir).
	SpoolDir string
	// Have returns a file holding a blob that does not stream by (omitted
	// from a delta, or one the caller already has). Nil, or false: the
	// checks that need it are deferred (listed in the report).
	Have func(d verify.Digest) (path string, ok bool)
	// Known reports that the caller already knows (has checked) that the
	// zip with digest d has h1 and the Go build information buildInfo (a
	// store that has the package); Finish then does not read the zip
	// again, and takes the build information from the blob (Have).
	Known func(d verify.Digest, h1 string, buildInfo verify.Digest) bool
	// SignedAt is when the bundle's signature says it was made
	// (Reader.SignedAt). Signature times are checked against it and Now,
	// never against the offline clock alone: no provider's SHA256SUMS
	// signature may be dated more than signatureSlack after it (a bundle
	// cannot carry a signature made after it was signed; see
	// checkSumsTime for bundles made with SOURCE_DATE_EPOCH), and neither
	// it nor any SHA256SUMS signature may be dated more than MaxClockAhead
	// after Now. Zero skips the checks against it.
	SignedAt time.Time
	// Now is this machine's clock (zero: time.Now), for SignedAt and for
	// reporting keys that have expired since they signed.
	Now time.Time
	// ChainKeyring is the chain keyring of the store an import is
	// forecast for (verify --against: its import policy's chain block):
	// each hop signed by one of its keys has its signature checked again
	// with the keyring's copy of the key, as that import's chain policy
	// will (HopCheck.KeyringErr). Nil: not checked here.
	ChainKeyring openpgp.EntityList
}

// Checker checks a signed manifest against the blobs it lists, as they
// stream by: each provider version's SHA256SUMS signature against the keys
// the bundle carries for it (judged as of its creation, see
// verify.CheckSignature; a site re-signature against the manifest's signer),
// each package's filename and sha256 against that SHA256SUMS, the h1 of
// each zip, and each module's zip (what OpenTofu's oci:// sources get)
// against its archive (what the registry protocol serves): the zip is
// rebuilt from the archive with modzip.ZipFromTarGz, which is deterministic,
// and its sha256 compared with the catalog's. It is how both 'verify' and
// 'import' decide, in one place.
//
// Use: New (runs Manifest), then Add or Spool for every blob after
// the bundle reader has verified its digest, then Finish, then Close.
//
// Bounds: h1 hashes are computed by GOMAXPROCS goroutines, one zip each,
// while the stream goes on; Add blocks while they are all busy, so at most
// that many spooled zips (plus the one being added) exist at once. SHA256SUMS files
// and signatures stay on disk until Finish, which reads one provider's at a
// time (at most dist.MaxShasumsSize + MaxSignatureSize). Memory beyond that is
// proportional to the manifest (≤ MaxManifestSize): one entry per blob and
// one parsed key per distinct armored key; for a bundle with an SBOM, the
// Go build information read from its zips (at most MaxSBOMSize in all,
// checkBuildInfoTotal), which checkSBOM builds the SBOM from. Computing h1 reads a zip's
// directory (archive/zip holds it in memory: ≈ 300 bytes per entry, and a
// zip of N bytes holds at most N/46) and unpacks at most MaxZipUnpacked
// bytes of at most MaxZipEntries files (and at most MaxZipRatio times the
// zip's size, or MinZipUnpackedLimit). Rebuilding a module zip streams the
// archive through modzip (at most 1 GiB of content, 200 000 entries) into a
// hash: memory does not grow with the archive.
type Checker struct {
	m       *bundle.Manifest
	opt     Options
	spool   string
	paths   map[verify.Digest]string // SHA256SUMS and signatures received
	wantH1  map[verify.Digest]string
	wantBI  map[verify.Digest]verify.Digest // package → its build information ("" if none listed)
	infos   map[verify.Digest][]byte        // package → build information read from its zip (encoded; only with an SBOM)
	uses    map[verify.Digest]int           // package → how many entries of the catalog list it
	modules int                             // Go modules in infos, counted per entry (MaxSBOMModules)
	hashed  map[verify.Digest]bool
	wantZip map[verify.Digest]verify.Digest // module archive → its zip ("" when it has none)
	// wantDocs: documentation blobs → what the catalog says of them (a
	// provider's record, or nil for a module's).
	wantDocs map[verify.Digest]*dist.ProviderDocs
	jobs     chan h1Job
	wg       sync.WaitGroup
	mu       sync.Mutex
	err      error
	n        int
	rep      Result
	keyring  KeyringCache
	chain    *chainState // set by checkChain (Finish)
}

type h1Job struct {
	d      verify.Digest
	path   string
	remove bool
	module bool // d is a module archive: rebuild its zip
	docs   bool // d is documentation: checkDocs
}

// New runs Manifest on m and returns a Checker for its blobs.
func New(m *bundle.Manifest, opt Options) (*Checker, error) {
	if err := Manifest(m); err != nil {
		return nil, err
	}
	if opt.Now.IsZero() {
		opt.Now = timeNow()
	}
	if err := checkBundleTime(opt.SignedAt, opt.Now); err != nil {
		return nil, err
	}
	c := &Checker{m: m, opt: opt, paths: map[verify.Digest]string{}, wantH1: map[verify.Digest]string{},
		wantBI: map[verify.Digest]verify.Digest{}, infos: map[verify.Digest][]byte{},
		uses: map[verify.Digest]int{}, hashed: map[verify.Digest]bool{}, wantZip: map[verify.Digest]verify.Digest{}, keyring: KeyringCache{}}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			c.wantH1[pk.Digest] = pk.H1
			c.wantBI[pk.Digest] = pk.BuildInfo
			c.uses[pk.Digest]++
		}
	}
	for _, mv := range m.Catalog.Modules {
		c.wantZip[mv.Archive] = mv.Zip
	}
	if err := c.collectDocs(); err != nil {
		return nil, err
	}
	// One worker per core: unpacking zips for h1 is nearly all the CPU an
	// import or verify needs (the stream itself, sha256 at ~2 GB/s, is a
	// small part), so the stream's goroutine shares a core with one.
	workers := runtime.GOMAXPROCS(0)
	c.jobs = make(chan h1Job)
	for range workers {
		c.wg.Add(1)
		go c.worker()
	}
	return c, nil
}

func (c *Checker) worker() {
	defer c.wg.Done()
	for j := range c.jobs {
		check, count, _ := c.job(j)
		err := check(j.d, j.path)
		if j.remove {
			os.Remove(j.path)
		}
		c.mu.Lock()
		c.hashed[j.d] = true
		if err == nil {
			*count++
		} else if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
}

func (c *Checker) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Add takes note of blob b, whose bytes (already verified against the
// manifest) are in the file at path until Finish returns. Packages are
// hashed in the background; Add returns the first failure found so far.
func (c *Checker) Add(b bundle.Blob, path string) error {
	return c.add(b, path, false)
}

func (c *Checker) add(b bundle.Blob, path string, remove bool) error {
	err := c.failed()
	if err == nil && c.jobs == nil {
		err = errors.New("blob added to a finished check")
	}
	if err != nil {
		if remove {
			os.Remove(path)
		}
		return err
	}
	switch b.Role {
	case dist.RoleProviderPackage:
		if c.known(b.Digest) {
			c.mu.Lock()
			c.hashed[b.Digest] = true
			c.mu.Unlock()
			if remove {
				os.Remove(path)
			}
			return nil
		}
		c.jobs <- h1Job{d: b.Digest, path: path, remove: remove}
		return nil
	case dist.RoleModuleArchive:
		c.jobs <- h1Job{d: b.Digest, path: path, remove: remove, module: true}
		return nil
	case dist.RoleProviderDocs, dist.RoleModuleDocs:
		c.jobs <- h1Job{d: b.Digest, path: path, remove: remove, docs: true}
		return nil
	case dist.RoleShasums, dist.RoleShasumsSig, dist.RoleGoBuildInfo, dist.RoleGateReport,
		dist.RoleBundleManifest, dist.RoleBundleSignature, dist.RoleBundleKey, dist.RoleApproval,
		dist.RoleReleaseShasums, dist.RoleReleaseSignature, dist.RoleReleaseKey:
		c.paths[b.Digest] = path // read by Finish (bounded by Manifest)
	default:
		if remove {
			os.Remove(path)
		}
	}
	return nil
}

// Spool copies a blob's bytes from r (a verifying blob reader) to a file of
// its own under SpoolDir and adds it; zips and module archives are removed
// once checked, the rest by Close. For 'verify', which keeps nothing.
func (c *Checker) Spool(b bundle.Blob, r io.Reader) (int64, error) {
	if b.Role == dist.RoleModuleZip {
		return io.Copy(io.Discard, r)
	}
	if c.spool == "" {
		d, err := os.MkdirTemp(c.opt.SpoolDir, "airgap-check-")
		if err != nil {
			return 0, fmt.Errorf("spooling blobs for the consistency check: %w", err)
		}
		c.spool = d
	}
	if err := roomToSpool(c.spool, b, c.m.Describe(b.Digest)); err != nil {
		return 0, err
	}
	c.n++
	path := filepath.Join(c.spool, strconv.Itoa(c.n))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := bundle.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return n, err
	}
	return n, c.add(b, path, true)
}

// roomToSpool refuses to spool a blob larger than what is free where it
// would go: the size is the signed manifest's (the reader holds the blob to
// it), so a small bundle that states a huge, highly compressible blob
// cannot fill the disk of the transfer station before it is refused.
func roomToSpool(dir string, b bundle.Blob, what string) error {
	free, ok := bundle.FreeBytes(dir)
	if !ok || b.Size <= free {
		return nil
	}
	return fmt.Errorf("blob %s (%s) is %s, and the temporary directory %s has %s free: it cannot be checked here\nhint: point TMPDIR at a disk with room for the bundle's largest blob; a blob far larger than its bundle file is a sign of a hostile bundle",
		b.Digest.Short(), dist.Printable(what), dist.HumanSize(b.Size), filepath.Dir(dir), dist.HumanSize(free))
}

// Finish waits for the zips in hand to be hashed, then checks every provider
// version's SHA256SUMS and signature, and the h1 of zips that did not stream
// by (through Have).
func (c *Checker) Finish() (*Result, error) {
	c.stop()
	if err := c.failed(); err != nil {
		return nil, err
	}
	if err := c.checkChain(); err != nil {
		return nil, err
	}
	c.rep.came = c.chain.came
	for _, h := range c.rep.Chain {
		if h.Checked {
			c.rep.Hops++
		}
	}
	for _, p := range c.m.Catalog.Providers {
		if err := c.provider(p); err != nil {
			return nil, err
		}
	}
	if err := c.declarations(); err != nil {
		return nil, err
	}
	if err := c.releases(); err != nil {
		return nil, err
	}
	var rest []h1Job
	for _, d := range unchecked(c, c.wantZip) {
		rest = append(rest, h1Job{d: d, module: true})
	}
	for _, d := range unchecked(c, c.wantDocs) {
		rest = append(rest, h1Job{d: d, docs: true})
	}
	for _, d := range unchecked(c, c.wantH1) {
		if !c.known(d) {
			rest = append(rest, h1Job{d: d})
		}
	}
	for _, j := range rest {
		check, count, what := c.job(j)
		path, ok := c.have(j.d)
		if !ok {
			c.rep.Deferred = append(c.rep.Deferred, what+c.m.Describe(j.d))
			continue
		}
		if err := check(j.d, path); err != nil {
			return nil, err
		}
		*count++
	}
	if err := c.checkReports(); err != nil {
		return nil, err
	}
	if err := c.checkSBOM(); err != nil {
		return nil, err
	}
	rep := c.rep
	return &rep, nil
}

// known reports whether the caller already checked the package zip d
// (Options.Known).
func (c *Checker) known(d verify.Digest) bool {
	return c.opt.Known != nil && c.opt.Known(d, c.wantH1[d], c.wantBI[d])
}

// job returns the check for j, its counter in the report, and what it
// checks (for the list of deferred checks).
func (c *Checker) job(j h1Job) (check func(verify.Digest, string) error, count *int, what string) {
	if j.module {
		return c.checkModule, &c.rep.ModuleTrees, "names and zip of "
	}
	if j.docs {
		return c.checkDocs, &c.rep.Docs, "form of "
	}
	return c.checkH1, &c.rep.H1, "h1 of "
}

// unchecked lists, sorted, the digests in want no job has checked.
func unchecked[V any](c *Checker, want map[verify.Digest]V) []verify.Digest {
	var rest []verify.Digest
	for d := range want {
		if !c.hashed[d] {
			rest = append(rest, d)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	return rest
}

func (c *Checker) stop() {
	if c.jobs != nil {
		close(c.jobs)
		c.wg.Wait()
		c.jobs = nil
	}
}

// Close stops the hashing and removes what Spool wrote.
func (c *Checker) Close() {
	c.stop()
	if c.spool != "" {
		os.RemoveAll(c.spool)
	}
}

func (c *Checker) have(d verify.Digest) (string, bool) {
	if p, ok := c.paths[d]; ok {
		return p, true
	}
	if c.opt.Have != nil {
		return c.opt.Have(d)
	}
	return "", false
}

// TightGC sets the collector of a process that checks a bundle ('verify',
// 'import', 'approve') to GOGC=50, unless GOGC is set in its environment
// ('export' sets a soft memory limit instead). Their live
// heap is small and steady (the manifest, read-ahead and inflate buffers,
// build information), and at the default of 100 the heap grew to twice
// it: a 10 GiB bundle of 60 AWS-sized packages peaked at 67 MiB resident
// for verify, 57 MiB at 50, in the same time (15 collections in 76 s).
func TightGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}

// All reads every blob of br through a Checker that spools what it needs
// under spoolDir and removes it again: what 'verify' does at the transfer
// station, keeping nothing. It returns the report and the blobs and bytes
// read. The checks that need the store (a delta's omitted blobs) are listed
// as deferred.
func All(br *bundle.Reader, spoolDir string) (rep *Result, blobs int, bytes int64, err error) {
	return AllWith(br, Options{SpoolDir: spoolDir})
}

// AllWith is All with opt (its Signer, SiteKeys and SignedAt are
// the reader's).
func AllWith(br *bundle.Reader, opt Options) (rep *Result, blobs int, bytes int64, err error) {
	opt.Signer, opt.SiteKeys, opt.SignedAt = br.Signer(), br.Keyring(), br.SignedAt()
	c, err := New(br.Manifest(), opt)
	if err != nil {
		return nil, 0, 0, err
	}
	defer c.Close()
	for {
		b, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, blobs, bytes, err
		}
		n, err := c.Spool(b, rd)
		bytes += n
		if err != nil {
			return nil, blobs, bytes, err
		}
		blobs++
	}
	rep, err = c.Finish()
	return rep, blobs, bytes, err
}
