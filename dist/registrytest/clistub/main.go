// Command clistub stands in for the terraform and tofu binaries of the
// stand-in release trees: a real static program that prints the product
// and version it was stamped with ("Terraform v1.14.2") for 'version', as
// the real ones do, so that a test can run what a version manager
// installed. It is built once; each release's copy is the same binary
// with stamp's bytes replaced (registrytest.StampCLI), which is why stamp
// is a variable of fixed length and the program trims the padding.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

var stamp = "AIRGAP-CLISTUB-STAMP:................................................................"

func main() {
	s := strings.TrimRight(strings.TrimPrefix(stamp, "AIRGAP-CLISTUB-STAMP:"), ".")
	if len(os.Args) > 1 && strings.TrimLeft(os.Args[1], "-") == "version" {
		fmt.Println(s)
		fmt.Println("on " + runtime.GOOS + "_" + runtime.GOARCH)
		return
	}
	fmt.Fprintln(os.Stderr, s+": a stand-in for tests; it only answers 'version'")
	os.Exit(1)
}
