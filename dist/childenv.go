package dist

import (
	"os"
	"strings"
)

// SecretEnv are the environment variables that hold airgap's own secrets:
// the passphrase of the signing key (AIRGAP_PASSPHRASE, verify's
// PassphraseEnv) and an OCI registry's password (AIRGAP_REGISTRY_PASSWORD,
// oci's PasswordEnv). No program airgap starts has a use for them.
var SecretEnv = []string{"AIRGAP_PASSPHRASE", "AIRGAP_REGISTRY_PASSWORD"}

// ChildEnv is the environment of the programs airgap starts (git, a
// credentials helper): this process's, without SecretEnv. Those programs
// are the user's or the system's, but they run with what registries and
// module authors choose (a helper asked for any host a module names, git
// for any repository with the user's own git configuration, credential
// helpers and ssh), and the site's signing passphrase is none of their
// business.
func ChildEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		secret := false
		for _, s := range SecretEnv {
			secret = secret || k == s
		}
		if !secret {
			out = append(out, kv)
		}
	}
	return out
}
