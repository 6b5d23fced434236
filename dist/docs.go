package dist

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/airgap/airgap/verify"
)

// Documentation roles (bundle format 3).
const (
	// RoleProviderDocs is a provider version's documentation: the
	// markdown pages and images of the docs/ (or legacy website/docs/)
	// folder of its source repository at the version's tag, as one
	// deterministic tar (package dist/docs). Identical trees are one blob,
	// shared by every version that has them.
	RoleProviderDocs = "provider-docs"
	// RoleModuleDocs is a module version's documentation: its README,
	// inputs, outputs, required providers and submodules as read by
	// terraform-config-inspect (ModuleDocs, JSON).
	RoleModuleDocs = "module-docs"
)

// ProviderDocs (bundle format 3) says where a provider version's
// documentation came from and what it holds, or why it is missing.
// Either Archive is set (with Pages, Files and Bytes) or Missing says why
// export left the docs out: a failure to fetch them never fails the
// provider's export.
type ProviderDocs struct {
	// Source is the repository the docs were fetched from (credentials
	// redacted), e.g. https://github.com/hashicorp/terraform-provider-aws.
	Source string `json:"source,omitempty"`
	// Ref is the tag fetched ("v5.80.0"), Commit the commit it named, and
	// Dir the folder of the repository the pages are from ("docs" or
	// "website/docs").
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit,omitempty"`
	Dir    string `json:"dir,omitempty"`
	// Archive is the blob of role RoleProviderDocs; Pages the markdown
	// pages in it, Files all its files (pages and images), Bytes their
	// sizes added up.
	Archive verify.Digest `json:"archive,omitempty"`
	Pages   int           `json:"pages,omitempty"`
	Files   int           `json:"files,omitempty"`
	Bytes   int64         `json:"bytes,omitempty"`
	// Missing is why there are no docs (export could not fetch them, the
	// manifest said docs = false, they were over the bound, …).
	Missing string `json:"missing,omitempty"`
}

// Limits on the documentation records of a catalog.
const (
	// MaxDocsFiles bounds the files of one provider's docs tree (AWS's,
	// the largest, has about 2,000).
	MaxDocsFiles = 20_000
	// MaxDocsBytes is the most any docs tree may hold, whatever bound the
	// export was given (export's default is DefaultDocsBytes).
	MaxDocsBytes int64 = 1 << 30
	// DefaultDocsBytes is export's default bound on one version's docs.
	DefaultDocsBytes int64 = 64 << 20
	// maxDocsText bounds the free text of a record (Source, Missing).
	maxDocsText = 1024
)

var (
	reCommit  = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	reDocsRef = regexp.MustCompile(`^[A-Za-z0-9._+-]{1,128}$`)
)

// Validate checks a docs record's form; ref checks its blob as Catalog.Validate does.
func (d *ProviderDocs) Validate(what string, ref func(string, verify.Digest, string) error) error {
	if d == nil {
		return nil
	}
	text := func(s string) bool { return len(s) <= maxDocsText && Printable(s) == s }
	if !text(d.Source) || !text(d.Missing) {
		return fmt.Errorf("%s: docs: source or reason is not printable text of at most %d bytes", what, maxDocsText)
	}
	switch {
	case d.Archive == "" && d.Missing == "":
		return fmt.Errorf("%s: docs: neither an archive nor why it is missing", what)
	case d.Archive != "" && d.Missing != "":
		return fmt.Errorf("%s: docs: both an archive and why it is missing", what)
	case d.Archive == "":
		if d.Pages != 0 || d.Files != 0 || d.Bytes != 0 {
			return fmt.Errorf("%s: docs: missing, but with pages", what)
		}
		return nil
	}
	if d.Ref != "" && !reDocsRef.MatchString(d.Ref) || d.Commit != "" && !reCommit.MatchString(d.Commit) {
		return fmt.Errorf("%s: docs: invalid ref or commit", what)
	}
	if d.Dir != "docs" && d.Dir != "website/docs" {
		return fmt.Errorf("%s: docs: folder %q is neither docs nor website/docs", what, Printable(d.Dir))
	}
	if d.Pages < 0 || d.Files < d.Pages || d.Files > MaxDocsFiles || d.Bytes < 0 || d.Bytes > MaxDocsBytes {
		return fmt.Errorf("%s: docs: %d pages, %d files, %d bytes are out of bounds", what, d.Pages, d.Files, d.Bytes)
	}
	return ref(what+" docs", d.Archive, RoleProviderDocs)
}

// Summary is the docs line 'airgap verify' and the catalog show:
// "1,482 pages, 38.0 MiB from github.com/hashicorp/terraform-provider-aws
// at v5.80.0", or "missing: WHY".
func (d *ProviderDocs) Summary() string {
	if d == nil {
		return "none recorded"
	}
	if d.Archive == "" {
		return "missing: " + d.Missing
	}
	s := fmt.Sprintf("%s pages, %s from %s", Thousands(int64(d.Pages)), HumanSize(d.Bytes), strings.TrimPrefix(d.Source, "https://"))
	if d.Ref != "" {
		s += " at " + d.Ref
	}
	return s
}

// Thousands writes n with commas: 1,482.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + Thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ModuleDocs is a module version's documentation (a RoleModuleDocs blob):
// what the public registries show on a module's page, read from its tree
// with terraform-config-inspect.
type ModuleDocs struct {
	Readme     string            `json:"readme"`
	ReadmeCut  bool              `json:"readme_cut,omitempty"` // README longer than MaxModuleReadme, cut
	Inputs     []ModuleInput     `json:"inputs"`
	Outputs    []ModuleOutput    `json:"outputs"`
	Providers  []ModuleProvider  `json:"providers"`
	Submodules []ModuleSubmodule `json:"submodules"`
}

// ModuleInput is one variable of a module.
type ModuleInput struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	// Default is the default as HCL-ish JSON text ("null" when none);
	// Required is true when there is no default.
	Default   string `json:"default,omitempty"`
	Required  bool   `json:"required"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// ModuleOutput is one output of a module.
type ModuleOutput struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// ModuleProvider is one required provider of a module.
type ModuleProvider struct {
	Name     string `json:"name"`
	Source   string `json:"source,omitempty"`
	Versions string `json:"versions,omitempty"`
}

// ModuleSubmodule is one module under modules/ of a module's tree.
type ModuleSubmodule struct {
	Path    string         `json:"path"`
	Inputs  []ModuleInput  `json:"inputs"`
	Outputs []ModuleOutput `json:"outputs"`
}

// Limits on a module's documentation.
const (
	MaxModuleReadme     = 1 << 20 // bytes of README kept
	MaxModuleDocs       = 8 << 20 // bytes of the whole JSON document
	MaxModuleSubmodules = 64
)
