// Package objstore keeps an airgap store in S3-compatible object storage:
// the store's address (a directory, or s3://BUCKET/PREFIX?…), a client
// whose every answer is bounded, the start-up check that the server
// honours conditional writes, the import lease, and copying a store
// between a directory and a bucket with every blob hashed as it streams.
//
// The bucket holds the directory store's layout under PREFIX:
// index.json, blobs/sha256/HEX, import.hcl, and lease.json while an
// import runs. The directory code path does not go through this package:
// a store that is a directory is read and written as before.
package objstore

import (
	"fmt"
	"net/url"
	"strings"
)

// Scheme is the one object-storage scheme a store address may have.
const Scheme = "s3://"

// Addr is a parsed s3:// store address.
type Addr struct {
	Bucket   string
	Prefix   string // "" or a path without leading or trailing "/"
	Endpoint string // "" for the AWS chain's endpoint (AWS_ENDPOINT_URL_S3 …)
	Region   string // "" for the AWS chain's region
	// PathStyle asks for https://HOST/BUCKET/KEY rather than
	// https://BUCKET.HOST/KEY (most S3-compatible servers need it).
	PathStyle bool
	raw       string
}

// String is the address as given.
func (a *Addr) String() string { return a.raw }

// IsObject reports whether a store address names object storage rather
// than a directory: it has a URL scheme ("s3://", or any "NAME://", which
// Parse then refuses by name). A directory named like "s3:" alone stays a
// directory.
func IsObject(addr string) bool {
	i := strings.Index(addr, "://")
	if i <= 0 {
		return false
	}
	for _, r := range addr[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

const (
	maxAddr   = 2048
	maxPrefix = 512
	addrHint  = "hint: a store is a directory, or s3://BUCKET/PREFIX?endpoint=https://HOST:PORT&region=REGION&use_path_style=true (credentials come from the AWS environment or shared config, never from the address)"
)

// Parse parses an s3:// store address strictly: a valid bucket name, a
// clean prefix, only the parameters endpoint, region and use_path_style,
// each at most once, and no credentials in it. Its errors end in a hint
// with the syntax.
func Parse(s string) (*Addr, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("store address %q: %s\n%s", clip(s), fmt.Sprintf(format, args...), addrHint)
	}
	if len(s) > maxAddr {
		return nil, bad("longer than %d bytes", maxAddr)
	}
	for _, r := range s {
		if r < 0x21 || r == 0x7f || r > 0x7e {
			return nil, bad("has a space, a control or a non-ASCII character")
		}
	}
	if !strings.HasPrefix(s, Scheme) {
		scheme, _, _ := strings.Cut(s, "://")
		return nil, bad("unknown scheme %q: only s3:// (S3-compatible object storage) or a directory", scheme)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, bad("%v", err)
	}
	if u.User != nil {
		return nil, bad("has credentials in it; they must not be in an address (it is printed and logged)")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return nil, bad("has a fragment (#…)")
	}
	a := &Addr{Bucket: u.Host, raw: s}
	if err := checkBucket(a.Bucket); err != nil {
		return nil, bad("%v", err)
	}
	p := strings.TrimPrefix(u.Path, "/")
	p = strings.TrimSuffix(p, "/")
	if len(p) > maxPrefix {
		return nil, bad("prefix longer than %d bytes", maxPrefix)
	}
	if p != "" {
		for _, part := range strings.Split(p, "/") {
			if part == "" || part == "." || part == ".." {
				return nil, bad("prefix %q has an empty, \".\" or \"..\" part", p)
			}
			if strings.ContainsAny(part, `\%?*[]{}"'<>|^`+"`") {
				return nil, bad("prefix part %q has a character object keys should not have", part)
			}
		}
	}
	a.Prefix = p
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, bad("query: %v", err)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return nil, bad("parameter %q given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "https" && e.Scheme != "http") || e.Host == "" || e.User != nil || e.RawQuery != "" || e.Fragment != "" || (e.Path != "" && e.Path != "/") {
				return nil, bad("endpoint %q: want http(s)://HOST[:PORT] with no path, query or credentials", v)
			}
			a.Endpoint = strings.TrimSuffix(v, "/")
		case "region":
			if v == "" || len(v) > 64 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				return nil, bad("region %q: want lowercase letters, digits and '-'", v)
			}
			a.Region = v
		case "use_path_style":
			switch v {
			case "true":
				a.PathStyle = true
			case "false":
			default:
				return nil, bad("use_path_style=%q: want true or false", v)
			}
		default:
			return nil, bad("unknown parameter %q: the parameters are endpoint, region and use_path_style", k)
		}
	}
	return a, nil
}

// checkBucket applies S3's bucket naming rules (3 to 63 lowercase letters,
// digits, '.' and '-', starting and ending with a letter or digit).
func checkBucket(b string) error {
	if b == "" {
		return fmt.Errorf("no bucket name")
	}
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket %q: a bucket name has 3 to 63 characters", b)
	}
	if strings.Trim(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
		return fmt.Errorf("bucket %q: a bucket name has only lowercase letters, digits, '.' and '-' (a port belongs in endpoint=)", b)
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) || !alnum(b[len(b)-1]) || strings.Contains(b, "..") {
		return fmt.Errorf("bucket %q: a bucket name starts and ends with a letter or digit and has no \"..\"", b)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
