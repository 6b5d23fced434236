package protocol

import (
	"fmt"
	"io"
	"net/url"
	"strings"
)

// WriteReleaseSettings writes, for the appliance at base (NormalizeBaseURL's
// form), the settings that point each version manager and installer at its
// CLI releases (ReleasesPrefix): a POSIX shell script to source, which
// fetches the publisher keys the releases were checked against into
// keyDir (default ~/.airgap) over the appliance's TLS and sets tenv's and
// tfenv's variables, with the command lines of tfswitch and the settings
// of hc-install and tofudl as comments. base must have no quote, space or
// '$' (it is written into the script as it is).
func WriteReleaseSettings(w io.Writer, base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" || strings.ContainsAny(base, "'\"$` \\\n\t;&|<>(){}") {
		return fmt.Errorf("--url %q: not an https URL that can be written into a shell script", base)
	}
	rel := strings.TrimSuffix(base, "/") + strings.TrimSuffix(ReleasesPrefix, "/")
	_, err = fmt.Fprintf(w, `# Terraform and OpenTofu releases from %[1]s (airgap client-config --releases).
# Source it: . ./airgap-releases.sh   (curl must trust the appliance's CA: airgap ca)
AIRGAP_KEYS="${AIRGAP_KEYS:-$HOME/.airgap}"
mkdir -p "$AIRGAP_KEYS"
curl -fsS -o "$AIRGAP_KEYS/terraform-publisher.asc" %[1]s/terraform/publisher-key.asc
curl -fsS -o "$AIRGAP_KEYS/tofu-publisher.asc" %[1]s/tofu/publisher-key.asc

# tenv (terraform and tofu) and tfenv (terraform) read these:
export TFENV_REMOTE=%[1]s
export TFENV_HASHICORP_PGP_KEY="$AIRGAP_KEYS/terraform-publisher.asc"
export TOFUENV_INSTALL_MODE=mirror
export TOFUENV_URL_TEMPLATE='%[1]s/tofu/v{{ .Version }}/{{ .Artifact }}'
export TOFUENV_OPENTOFU_PGP_KEY="$AIRGAP_KEYS/tofu-publisher.asc"

# tfenv checks signatures with gpgv once told to (its config directory):
#   gpg --dearmor < "$AIRGAP_KEYS/terraform-publisher.asc" > "$AIRGAP_KEYS/terraform-publisher.gpg"
#   echo "binary: gpgv --keyring $AIRGAP_KEYS/terraform-publisher.gpg" > "${TFENV_CONFIG_DIR:-$TFENV_ROOT}/use-gpgv"
#
# tfswitch (it fetches the publisher key from www.hashicorp.com or
# get.opentofu.org itself: answer those two URLs with the keys above):
#   tfswitch --mirror %[1]s/terraform/index.json --mirror-download %[1]s/terraform VERSION
#   tfswitch --product opentofu --mirror %[1]s/tofu/api.json --mirror-download %[1]s/tofu VERSION
#
# hashicorp/hc-install (Go): releases.ExactVersion{ApiBaseURL: "%[1]s",
#   ArmoredPublicKey: <terraform-publisher.asc>, ...}
# opentofu/tofudl (Go): tofudl.New(tofudl.ConfigAPIURL("%[1]s/tofu/api.json"),
#   tofudl.ConfigDownloadMirrorURLTemplate("%[1]s/tofu/v{{ .Version }}/{{ .Artifact }}"),
#   tofudl.ConfigGPGKey(<tofu-publisher.asc>))
`, rel)
	return err
}
