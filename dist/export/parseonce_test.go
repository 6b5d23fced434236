package export_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
)

// TestExportParsesModuleFilesOnce: vendoring, the scan of what a module
// needs and its docs read the module's configuration files through one
// parse each (dist.CountHCLAdmissions counts every file asked to be
// parsed, by name): the root module's files, a local module it calls
// (vendoring and the scan both follow it) and a submodule under modules/
// that only the docs read. The docs still list the inputs and outputs
// of the root and the submodule. Before, each file of the root was
// parsed three times (vendoring, docs, scan), and the local module's
// twice.
func TestExportParsesModuleFilesOnce(t *testing.T) {
	in := registrytest.World(t)
	loc := in.AddArchive(t, "once-1.0.0.tar.gz", map[string]string{
		"once_main.tf":                "module \"local\" {\n  source = \"./modules/called\"\n  name   = var.name\n}\n",
		"once_variables.tf":           "variable \"name\" {\n  type        = string\n  description = \"the name\"\n}\n",
		"once_outputs.tf":             "output \"id\" {\n  value = module.local.id\n}\n",
		"README.md":                   "# once\n",
		"modules/called/once_call.tf": "variable \"name\" {\n  type = string\n}\noutput \"id\" {\n  value = var.name\n}\n",
		"modules/extra/once_extra.tf": "variable \"size\" {\n  type    = number\n  default = 3\n}\n",
	})
	in.AddModule("registry.terraform.io", "example", "once", "aws", "1.0.0", loc)
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nmodule \"example/once/aws\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	counts, stop := dist.CountHCLAdmissions()
	res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
	stop()
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]int{}
	for name, n := range counts() {
		if base := filepath.Base(name); strings.HasPrefix(base, "once_") {
			byFile[base] += n
		}
	}
	for _, f := range []string{"once_main.tf", "once_variables.tf", "once_outputs.tf", "once_call.tf", "once_extra.tf"} {
		if byFile[f] != 1 {
			t.Errorf("%s was parsed %d times, want once (all: %v)", f, byFile[f], byFile)
		}
	}
	mv := moduleVersion(t, res, "once")
	if mv.Docs == "" {
		t.Fatal("no docs carried")
	}
	doc, err := os.ReadFile(res.Files[mv.Docs])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"name"`, `"description":"the name"`, `"name":"id"`, `"path":"modules/extra"`, `"name":"size"`} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the docs lack %s:\n%s", want, doc)
		}
	}
}
