package registry

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Credentials finds API tokens for registry hosts the way Terraform does:
// TF_TOKEN_<host> first, then credentials blocks in the CLI config.
type Credentials struct {
	fromConfig map[string]string
}

// TokenEnvName is the TF_TOKEN_ variable suffix for host: "." becomes "_"
// and "-" becomes "__".
func TokenEnvName(host string) string {
	return strings.NewReplacer("-", "__", ".", "_").Replace(host)
}

// Token returns the token for host, or "".
func (c Credentials) Token(host string) string {
	if t := os.Getenv("TF_TOKEN_" + TokenEnvName(host)); t != "" {
		return t
	}
	return c.fromConfig[strings.ToLower(host)]
}

// LoadCredentials reads credentials blocks from the CLI config file
// (TF_CLI_CONFIG_FILE, else ~/.terraformrc). A missing file is no error.
func LoadCredentials() (Credentials, error) {
	path := os.Getenv("TF_CLI_CONFIG_FILE")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Credentials{}, nil
		}
		path = filepath.Join(home, ".terraformrc")
	}
	return loadCredentialsFile(path)
}

func loadCredentialsFile(path string) (Credentials, error) {
	c := Credentials{fromConfig: map[string]string{}}
	src, err := os.ReadFile(path)
	if err != nil {
		return c, nil
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return c, diags
	}
	content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "credentials", LabelNames: []string{"host"}}}})
	if diags.HasErrors() {
		return c, diags
	}
	for _, b := range content.Blocks {
		attrs, _ := b.Body.JustAttributes()
		if a, ok := attrs["token"]; ok {
			v, d := a.Expr.Value(nil)
			if !d.HasErrors() && v.Type().FriendlyName() == "string" {
				c.fromConfig[strings.ToLower(b.Labels[0])] = v.AsString()
			}
		}
	}
	return c, nil
}
