package harness

import (
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// FreePort returns a loopback port on which nothing listens, for a process
// the test starts (serve, HAProxy, a registry) or for a client to find
// closed. It is drawn from outside the kernel's ephemeral range, where no
// other listener or connection on the machine can take it before the
// process binds it (see registrytest.FreePort).
func FreePort(t *testing.T) int {
	t.Helper()
	return registrytest.FreePort(t)
}
