package getter

import (
	"os"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// TestMain runs the tests under the network guard: nothing they start may
// reach a host off this machine (registrytest.GuardNetwork).
func TestMain(m *testing.M) { os.Exit(registrytest.RunGuarded(m)) }
