package registrytest

import "testing"

// Vendoring fixtures (issue 16), added to a World by AddVendorModules.
const (
	// VendorLeaf is the value the innermost vendored module outputs; a
	// project calling example/wrap/aws sees it as module.wrap.leaf.
	VendorLeaf = "innermost-v1"
	// VendorNet is what the git::…//sub?ref=v1 module outputs.
	VendorNet = "net-sub-v1"
)

// VendorWrapMain is example/wrap/aws's main.tf (also the rewrite's
// golden input: comments, alignment and a heredoc around the sources).
const VendorWrapMain = `# wrap: a registry module whose calls are not registry addresses.
module "net" {
  # git over https, a subdirectory and a tag
  source    =   "git::https://github.com/example/net.git//sub?ref=v1" # pinned
}

module "app" {
  source = "github.com/example/shorthand//app" // GitHub shorthand
}

locals {
  banner = <<-EOT
    module "fake" { source = "git::https://github.com/example/net.git" }
  EOT
}

output "net" {
  value = module.net.name
}

output "leaf" {
  value = module.app.leaf
}

output "direct" {
  value = module.direct.value
}
`

// VendorWrapJSON is example/wrap/aws's calls.tf.json: the HTTP archive,
// also called (through ../lib) by the shorthand module.
const VendorWrapJSON = `{
  "module": {
    "direct": { "source":   "https://archives.example.com/leaf-1.0.0.tar.gz" }
  }
}
`

// AddVendorModules publishes, on top of World:
//   - registry.terraform.io/example/wrap/aws 1.0.0 (an HTTP archive) whose
//     main.tf calls git::https://github.com/example/net.git//sub?ref=v1 and
//     github.com/example/shorthand//app, and whose calls.tf.json calls
//     https://archives.example.com/leaf-1.0.0.tar.gz;
//   - github.com/example/shorthand: app calls its sibling ../lib, which
//     calls the same leaf archive and the registry module
//     example/subnet/aws ~> 2.0 (World's);
//   - example/bad/aws 1.0.0, whose sources cannot be vendored: s3::, one
//     built from a variable, and a host that does not exist;
//   - example/cycle/aws 1.0.0: github.com/example/cyc-a calls cyc-b, which
//     calls cyc-a.
func (in *Internet) AddVendorModules(t testing.TB) {
	t.Helper()
	in.AddGitRepo(t, "example/net", "v1", map[string]string{
		"sub/main.tf": "output \"name\" {\n  value = \"" + VendorNet + "\"\n}\n",
		"README.md":   "net\n",
	})
	in.AddGitRepo(t, "example/shorthand", "v1", map[string]string{
		"app/main.tf": "module \"lib\" {\n  source = \"../lib\"\n}\n\noutput \"leaf\" {\n  value = module.lib.leaf\n}\n",
		"lib/main.tf": "module \"leaf\" {\n  source = \"https://archives.example.com/leaf-1.0.0.tar.gz\"\n}\n\n" +
			"module \"subnet\" {\n  source  = \"example/subnet/aws\"\n  version = \"~> 2.0\"\n}\n\n" +
			"output \"leaf\" {\n  value = module.leaf.value\n}\n",
	})
	in.AddArchive(t, "leaf-1.0.0.tar.gz", map[string]string{"main.tf": "output \"value\" {\n  value = \"" + VendorLeaf + "\"\n}\n"})
	loc := in.AddArchive(t, "wrap-1.0.0.tar.gz", map[string]string{"main.tf": VendorWrapMain, "calls.tf.json": VendorWrapJSON})
	in.AddModule("registry.terraform.io", "example", "wrap", "aws", "1.0.0", loc)

	bad := in.AddArchive(t, "bad-1.0.0.tar.gz", map[string]string{"main.tf": `variable "where" {}

module "bucket" {
  source = "s3::https://s3-eu-west-1.amazonaws.com/bucket/vpc.zip"
}

module "computed" {
  source = "git::https://github.com/example/${var.where}.git"
}

module "gone" {
  source = "git::https://github.com/example/does-not-exist.git"
}
`})
	in.AddModule("registry.terraform.io", "example", "bad", "aws", "1.0.0", bad)

	in.AddGitRepo(t, "example/cyc-a", "v1", map[string]string{"main.tf": "module \"b\" {\n  source = \"github.com/example/cyc-b?ref=v1\"\n}\n"})
	in.AddGitRepo(t, "example/cyc-b", "v1", map[string]string{"main.tf": "module \"a\" {\n  source = \"github.com/example/cyc-a?ref=v1\"\n}\n"})
	in.AddModule("registry.terraform.io", "example", "cycle", "aws", "1.0.0", "git::https://github.com/example/cyc-a?ref=v1")
}
