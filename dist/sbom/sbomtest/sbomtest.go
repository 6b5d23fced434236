// Package sbomtest validates SBOMs against the CycloneDX 1.6 JSON schema,
// for tests. The schema files (bom-1.6.schema.json and the SPDX and JSF
// schemas it refers to) are read from the github.com/CycloneDX/cyclonedx-go
// module that airgap builds with: the module ships them (schema/), so they
// are in the module cache wherever airgap builds, offline too, and are the
// files that library's own tests validate against. The validator is
// github.com/santhosh-tekuri/jsonschema/v6 (draft-07, formats asserted).
// It checks the schema only; what an SBOM must say is the tests' to check.
package sbomtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaID = "http://cyclonedx.org/schema/bom-1.6.schema.json"

var (
	once   sync.Once
	schema *jsonschema.Schema
	err    error
)

func compile() (*jsonschema.Schema, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/CycloneDX/cyclonedx-go").Output()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(string(bytes.TrimSpace(out)), "schema")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for id, file := range map[string]string{
		schemaID: "bom-1.6.schema.json",
		"http://cyclonedx.org/schema/spdx.schema.json":     "spdx.schema.json",
		"http://cyclonedx.org/schema/jsf-0.82.schema.json": "jsf-0.82.schemax.json",
	} {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, err
		}
	}
	return c.Compile(schemaID)
}

// Validate fails the test unless data is a CycloneDX 1.6 JSON document that
// the schema accepts.
func Validate(t testing.TB, data []byte) {
	t.Helper()
	if err := Check(data); err != nil {
		t.Fatal(err)
	}
}

// Check says why data is not a CycloneDX 1.6 JSON document the schema
// accepts (nil if it is).
func Check(data []byte) error {
	once.Do(func() { schema, err = compile() })
	if err != nil {
		return fmt.Errorf("loading the CycloneDX 1.6 schema from the cyclonedx-go module: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the SBOM is not JSON: %w", err)
	}
	if err := schema.Validate(doc); err != nil {
		return fmt.Errorf("the SBOM does not validate against CycloneDX 1.6: %w", err)
	}
	var probe struct {
		SpecVersion string `json:"specVersion"`
	}
	if json.Unmarshal(data, &probe); probe.SpecVersion != "1.6" {
		return fmt.Errorf("specVersion %q, want 1.6", probe.SpecVersion)
	}
	return nil
}
