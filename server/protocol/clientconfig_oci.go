package protocol

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/airgap/airgap/dist/oci"
)

// writeOCIConfig writes the --mode oci part of a tofu CLI configuration:
// an oci_mirror block for the appliance's /v2/ API (package dist/oci
// layout), module host overrides so registry module sources keep working,
// and the oci:// form for modules.
func writeOCIConfig(w io.Writer, base, host string, origins []string, token, login string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	if u.Path != "/" {
		return fmt.Errorf("--url %s has a path: the OCI API is served at the root of the host only (/v2/)\nhint: give the appliance's URL without a path", base)
	}
	var include, skipped []string
	for _, o := range origins {
		if oci.ValidRepoName(o) {
			include = append(include, fmt.Sprintf("%q", o+"/*/*"))
		} else {
			skipped = append(skipped, o)
		}
	}
	fmt.Fprintf(w, `#
# OCI mode (OpenTofu 1.10 or newer): providers come from the appliance's OCI
# registry API (oci_mirror); the lock file gets the zh: hash of each platform
# installed. For more platforms: tofu providers lock -net-mirror=%smirror/ -platform=…
# Registry module sources keep working through the host overrides below; a
# module can also be named by its OCI repository:
#   source = "oci://%s/<origin>/modules/<namespace>/<name>/<system>?tag=<version>"
# (without ?tag= OpenTofu asks for "latest", the newest release; a module that
# lives in a subdirectory of its source repository needs that //<subdir> before
# the "?": 'airgap inventory' lists each module's source with it).
# If the appliance requires a token, an oci_credentials %q block gives it
# (any username, the token as the password; 'client-config --token-file' writes it).
# A site registry filled by 'airgap push' takes one too, or 'docker login %s'
# (OpenTofu reads Docker's config.json).
`, base, host, host, host)
	if len(skipped) > 0 {
		fmt.Fprintf(w, "# Not reachable over OCI (a port is not allowed in an OCI repository name): %s\n", strings.Join(skipped, ", "))
	}
	if token != "" {
		fmt.Fprintf(w, "\noci_credentials %q {\n  username = \"airgap\"\n  password = %q\n}\n", host, token)
	}
	if len(include) > 0 {
		fmt.Fprintf(w, "\nprovider_installation {\n  oci_mirror {\n    repository_template = %q\n    include             = [%s]\n  }\n}\n",
			host+"/${hostname}/${namespace}/${type}", strings.Join(include, ", "))
	}
	writeModuleHosts(w, base, origins, login)
	return nil
}
