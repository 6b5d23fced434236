package kube

import (
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
