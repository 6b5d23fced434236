package registry

import (
	"context"
	"os"
	"strings"
)

// Credentials finds API tokens for registry hosts the way Terraform does:
// TF_TOKEN_<host> first, then a credentials block of the CLI configuration
// (a block without a token means none, and the helper is not asked), then
// the credentials helper (see LoadCLIConfig).
type Credentials struct {
	fromConfig map[string]string // by normalized host
	helper     *CredentialsHelper
}

// tokenEnvName is the TF_TOKEN_ variable suffix for host: "." becomes "_"
// and "-" becomes "__".
func tokenEnvName(host string) string {
	return strings.NewReplacer("-", "__", ".", "_").Replace(host)
}

// Token returns the token for host, or "". Only the credentials helper can
// fail (it is a program: see CredentialsHelper for its bounds).
func (c Credentials) Token(ctx context.Context, host string) (string, error) {
	if t := os.Getenv("TF_TOKEN_" + tokenEnvName(host)); t != "" {
		return t, nil
	}
	if t, ok := c.fromConfig[strings.ToLower(host)]; ok {
		return t, nil
	}
	if c.helper != nil {
		return c.helper.Token(ctx, host)
	}
	return "", nil
}

// Helper is the credentials helper, or nil.
func (c Credentials) Helper() *CredentialsHelper { return c.helper }
