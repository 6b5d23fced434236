package dist

import (
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// DefaultRegistry is the host of a provider or module address without one.
const DefaultRegistry = "registry.terraform.io"

// Provider is a provider address.
type Provider struct{ Host, Namespace, Type string }

func (p Provider) String() string { return p.Host + "/" + p.Namespace + "/" + p.Type }

// NormalizeHost lowercases a host and turns it into punycode.
func NormalizeHost(h string) (string, error) {
	name, port, hasPort := strings.Cut(h, ":")
	a, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("invalid host %q: %w", h, err)
	}
	a = strings.ToLower(a)
	if hasPort && port != "443" {
		a += ":" + port
	}
	if !ValidHost(a) {
		return "", fmt.Errorf("invalid host %q", h)
	}
	return a, nil
}

// ParseProviderSource reads any source form Terraform accepts: "type"
// (legacy: hashicorp/type), "namespace/type", "host/namespace/type".
func ParseProviderSource(s string) (Provider, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	var p Provider
	switch len(parts) {
	case 1:
		p = Provider{DefaultRegistry, "hashicorp", parts[0]}
	case 2:
		p = Provider{DefaultRegistry, parts[0], parts[1]}
	case 3:
		h, err := NormalizeHost(parts[0])
		if err != nil {
			return p, fmt.Errorf("provider source %q: %w", s, err)
		}
		p = Provider{h, parts[1], parts[2]}
	default:
		return p, fmt.Errorf("provider source %q: want [HOST/]NAMESPACE/TYPE", s)
	}
	p.Namespace, p.Type = strings.ToLower(p.Namespace), strings.ToLower(p.Type)
	if !validProviderNamespace(p.Namespace) {
		return p, fmt.Errorf("provider source %q: invalid namespace %q (letters, digits, dashes and underscores, starting and ending with a letter or digit, at most 64)", s, p.Namespace)
	}
	if !validProviderType(p.Type) {
		why := "letters, digits and single dashes, starting and ending with a letter or digit, at most 64"
		if strings.Contains(p.Type, "_") {
			why = "underscores are allowed in provider namespaces (Terraform 1.16), never in types"
		}
		return p, fmt.Errorf("provider source %q: invalid type %q (%s)", s, p.Type, why)
	}
	return p, nil
}

// Module is a module registry address.
type Module struct{ Host, Namespace, Name, System string }

func (m Module) String() string {
	return m.Host + "/" + m.Namespace + "/" + m.Name + "/" + m.System
}

// ParseModuleSource reads a registry module address
// "[host/]namespace/name/system[//subdir]". ok is false for anything that is
// not a registry address (local paths, git, URLs, GitHub shorthand).
func ParseModuleSource(s string) (m Module, subdir string, ok bool, err error) {
	if s == "" || strings.Contains(s, "::") || strings.Contains(s, "://") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") {
		return m, "", false, nil
	}
	addr, sub, _ := strings.Cut(s, "//")
	parts := strings.Split(addr, "/")
	switch len(parts) {
	case 3:
		m = Module{DefaultRegistry, parts[0], parts[1], parts[2]}
	case 4:
		if parts[0] == "github.com" || parts[0] == "bitbucket.org" || parts[0] == "gitlab.com" {
			return m, "", false, nil
		}
		h, herr := NormalizeHost(parts[0])
		if herr != nil {
			return m, "", false, nil
		}
		m = Module{h, parts[1], parts[2], parts[3]}
	default:
		return m, "", false, nil
	}
	if strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "bitbucket.org/") {
		return Module{}, "", false, nil
	}
	if !validModuleName(m.Namespace) || !validModuleName(m.Name) || !validModuleName(m.System) {
		return m, "", false, fmt.Errorf("module source %q: invalid namespace, name or system", s)
	}
	return m, sub, true, nil
}
