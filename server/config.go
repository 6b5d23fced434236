package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/pflag"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/certs"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/server/protocol"
)

// ServeConfig is the effective configuration of 'airgap serve'. Each field
// is a serve flag of the same name; the --config file uses those names as
// HCL attributes:
//
//	store          = "/var/lib/airgap/store"
//	listen         = ":443"
//	hostname       = ["airgap.site.example", "registry.terraform.io"]
//	trusted-proxy  = ["10.0.0.0/8"]
//	metrics-listen = "127.0.0.1:9443"
//	log-format     = "json"
//	log-file       = "/var/log/airgap/serve.log"
//	max-conns      = 2048
//	max-conns-per-ip = 128
//	send-timeout   = "60s"
//	access         = "/etc/airgap/access.hcl"
//	audit-log      = "/var/log/airgap/audit.jsonl"
//	audit-log-max-size = "100MiB"
//	audit-log-keep = 9
//	download-url-ttl = "15m"
//	usage          = "on"
//	usage-flush    = "10s"
//
// Precedence, highest first: command-line flags, AIRGAP_ environment
// variables, the file, the flags' defaults. The environment carries only
// what differs between hosts that share one file: AIRGAP_HOSTNAME
// (comma-separated), AIRGAP_LISTEN and AIRGAP_METRICS_LISTEN. serve has no
// secret settings: key material lives in files (--key, STORE/tls), never in
// the environment or the configuration file (the access file holds only
// hashes of tokens, and is a file of its own).
type ServeConfig struct {
	Store           string   `hcl:"store,optional"`
	Listen          string   `hcl:"listen,optional"`
	Hostname        []string `hcl:"hostname,optional"`
	TLS             string   `hcl:"tls,optional"`
	ACMECA          string   `hcl:"acme-ca,optional"`
	ACMECARoot      string   `hcl:"acme-ca-root,optional"`
	ACMEEmail       string   `hcl:"acme-email,optional"`
	ACMEHTTPPort    int      `hcl:"acme-http-port,optional"`
	ACMETLSALPNPort int      `hcl:"acme-tls-alpn-port,optional"`
	Cert            string   `hcl:"cert,optional"`
	Key             string   `hcl:"key,optional"`
	LogLevel        string   `hcl:"log-level,optional"`
	LogFormat       string   `hcl:"log-format,optional"`
	LogFile         string   `hcl:"log-file,optional"`
	TrustedProxy    []string `hcl:"trusted-proxy,optional"`
	// PassthroughProxy are load balancers that pass TLS through: exempt
	// from the per-address limits, their X-Forwarded-For not believed.
	PassthroughProxy []string `hcl:"passthrough-proxy,optional"`
	MetricsListen    string   `hcl:"metrics-listen,optional"`
	MaxConns         int      `hcl:"max-conns,optional"`
	MaxConnsPerIP    int      `hcl:"max-conns-per-ip,optional"`
	SendTimeout      string   `hcl:"send-timeout,optional"`
	Access           string   `hcl:"access,optional"`
	AuditLog         string   `hcl:"audit-log,optional"`
	AuditLogMaxSize  string   `hcl:"audit-log-max-size,optional"`
	AuditLogKeep     int      `hcl:"audit-log-keep,optional"`
	DownloadURLTTL   string   `hcl:"download-url-ttl,optional"`
	// Usage turns download counting (Usage) on or off; UsageFlush is
	// how often the counts are written to the store's state.
	Usage      string `hcl:"usage,optional"`
	UsageFlush string `hcl:"usage-flush,optional"`
	// ObjectRedirect (on or off): with a store in object storage, answer
	// blob downloads with a redirect to a presigned URL of the object.
	ObjectRedirect string `hcl:"object-redirect,optional"`
	// ObjectCacheMax: with a store in object storage, the most disk the
	// replica gives to blobs it must hold as files.
	ObjectCacheMax string `hcl:"object-cache-max,optional"`

	// File is the --config file ("" for none).
	File string
	// Sources says where each setting came from: "flag", "env AIRGAP_X",
	// "FILE:LINE:COL" or "default".
	Sources map[string]string

	base   *ServeConfig        // the flags' values (defaults and command line)
	cli    map[string]bool     // settings given on the command line
	getenv func(string) string // for Reload
}

// maxConfigSize bounds the --config file read.
const maxConfigSize = 1 << 20

// EnvName is the AIRGAP_ variable for a setting ("metrics-listen" ->
// "AIRGAP_METRICS_LISTEN").
func EnvName(setting string) string {
	return "AIRGAP_" + strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))
}

func settingsType() reflect.Type { return reflect.TypeFor[ServeConfig]() }

// settingFields maps setting names to ServeConfig fields.
func settingFields() map[string]int {
	t := settingsType()
	out := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("hcl")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			out[name] = i
		}
	}
	return out
}

// settingNames lists the settings in the order of their table.
func settingNames() []string {
	names := make([]string, 0, len(serveSettings))
	for _, s := range serveSettings {
		names = append(names, s.name)
	}
	return names
}

// LoadServeConfig builds the effective configuration from the serve flag
// set (after parsing: its defaults and what the command line changed), the
// file at path (if not ""), and getenv. Every setting must have a flag of
// the same name in fs. File errors name FILE:LINE:COL; an unknown attribute
// is an error with a did-you-mean suggestion.
func LoadServeConfig(fs *pflag.FlagSet, path string, getenv func(string) string) (*ServeConfig, error) {
	base := &ServeConfig{Sources: map[string]string{}}
	cli := map[string]bool{}
	v := reflect.ValueOf(base).Elem()
	for name, i := range settingFields() {
		fl := fs.Lookup(name)
		if fl == nil {
			return nil, fmt.Errorf("internal error: serve has no --%s flag for the setting of that name", name)
		}
		if err := setFromString(v.Field(i), flagValue(fl)); err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
		base.Sources[name] = "default"
		if fl.Changed {
			cli[name] = true
			base.Sources[name] = "flag"
		}
	}
	base.cli, base.getenv, base.File = cli, getenv, path
	return base.layer()
}

// reload re-reads the file and the environment over the same flags.
func (c *ServeConfig) reload() (*ServeConfig, error) { return c.base.layer() }

// layer applies the file and the environment to a copy of the flag values.
func (base *ServeConfig) layer() (*ServeConfig, error) {
	c := *base
	c.Hostname = append([]string(nil), base.Hostname...)
	c.TrustedProxy = append([]string(nil), base.TrustedProxy...)
	c.PassthroughProxy = append([]string(nil), base.PassthroughProxy...)
	c.Sources = map[string]string{}
	for k, s := range base.Sources {
		c.Sources[k] = s
	}
	c.base = base
	v := reflect.ValueOf(&c).Elem()
	fields := settingFields()
	if c.File != "" {
		if err := c.readFile(v, fields); err != nil {
			return nil, err
		}
	}
	if c.getenv != nil {
		for _, name := range EnvSettings() {
			ev := EnvName(name)
			s := c.getenv(ev)
			if s == "" || c.cli[name] {
				continue
			}
			if err := setFromString(v.Field(fields[name]), s); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", errConfig, ev, err)
			}
			c.Sources[name] = "env " + ev
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *ServeConfig) readFile(v reflect.Value, fields map[string]int) error {
	f, err := os.Open(c.File)
	if err != nil {
		return fmt.Errorf("%w: --config: %v", errConfig, err)
	}
	src, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("%w: --config: %v", errConfig, err)
	}
	if len(src) > maxConfigSize {
		return fmt.Errorf("%w: %s is larger than %d bytes; it is not an airgap configuration", errConfig, c.File, maxConfigSize)
	}
	release, err := dist.AdmitHCL(src, c.File)
	if err != nil {
		return fmt.Errorf("%w: %w", errConfig, err)
	}
	defer release()
	hf, diags := hclparse.NewParser().ParseHCL(src, c.File)
	if diags.HasErrors() {
		return diagError(diags)
	}
	schema, _ := gohcl.ImpliedBodySchema(&ServeConfig{})
	content, diags := hf.Body.Content(schema)
	if diags.HasErrors() {
		return diagError(diags)
	}
	for name, attr := range content.Attributes {
		if c.cli[name] {
			continue // the command line wins
		}
		fv := v.Field(fields[name])
		nv := reflect.New(fv.Type())
		if diags := gohcl.DecodeExpression(attr.Expr, nil, nv.Interface()); diags.HasErrors() {
			return diagError(diags)
		}
		fv.Set(nv.Elem())
		r := attr.Expr.Range()
		c.Sources[name] = fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
	}
	return nil
}

// diagError turns HCL diagnostics into one error per line, each starting
// FILE:LINE:COL (hcl's own suggestions, "Did you mean …?", included).
func diagError(diags hcl.Diagnostics) error {
	return fmt.Errorf("%w: %s", errConfig, strings.Join(dist.DiagLines(diags), "\n"))
}

func flagValue(fl *pflag.Flag) string {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return fl.Value.String()
}

// setFromString sets a field from flag or environment text; lists are
// comma-separated.
func setFromString(f reflect.Value, s string) error {
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int:
		if s == "" {
			s = "0"
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		f.SetInt(int64(n))
	case reflect.Slice:
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		f.Set(reflect.ValueOf(out))
	default:
		return fmt.Errorf("internal error: unsupported setting type %s", f.Type())
	}
	return nil
}

// where prefixes an error about a setting with its source.
func (c *ServeConfig) where(name string) string {
	switch src := c.Sources[name]; {
	case src == "flag" || src == "default" || src == "":
		return "--" + name
	case strings.HasPrefix(src, "env "):
		return strings.TrimPrefix(src, "env ")
	default:
		return src + ": " + name
	}
}

func (c *ServeConfig) bad(name, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", errConfig, c.where(name), fmt.Sprintf(format, a...))
}

// validate checks every setting and names the first bad one with its
// source (flag, variable, or FILE:LINE:COL).
func (c *ServeConfig) validate() error {
	if c.Store == "" {
		return fmt.Errorf("%w: no store: give --store DIR or store = \"DIR\" in the --config file", errConfig)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return c.bad("listen", "%q: %v (want HOST:PORT or :PORT)", c.Listen, err)
	}
	for _, h := range c.Hostname {
		if net.ParseIP(h) == nil && !dist.ValidHost(strings.ToLower(h)) {
			return c.bad("hostname", "%q is not a host name or IP address", h)
		}
	}
	switch c.TLS {
	case certs.ModeLocal, certs.ModeFiles, certs.ModeACME:
	default:
		return c.bad("tls", "%q: want local, acme or files", c.TLS)
	}
	if c.TLS == certs.ModeFiles && (c.Cert == "" || c.Key == "") {
		return c.bad("tls", "files needs cert and key")
	}
	if c.TLS == certs.ModeACME && c.ACMECA == "" {
		return c.bad("tls", "acme needs acme-ca (your internal ACME directory URL)")
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"acme-http-port", c.ACMEHTTPPort}, {"acme-tls-alpn-port", c.ACMETLSALPNPort}} {
		if p.v < 0 || p.v > 65535 {
			return c.bad(p.name, "%d is not a port", p.v)
		}
	}
	if _, err := c.Level(); err != nil {
		return c.bad("log-level", "%q: want debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return c.bad("log-format", "%q: want text or json", c.LogFormat)
	}
	if _, err := access.ParseTrustedProxies(c.TrustedProxy); err != nil {
		return c.bad("trusted-proxy", "%v", err)
	}
	if _, err := access.ParsePrefixes(c.PassthroughProxy); err != nil {
		return c.bad("passthrough-proxy", "%v", err)
	}
	if m := c.MetricsListen; m != "" && m != "off" && m != metricsOnMain {
		if _, _, err := net.SplitHostPort(m); err != nil {
			return c.bad("metrics-listen", "%q: %v (want HOST:PORT, \"main\" for /metrics on the main listener, or off)", m, err)
		}
	}
	if c.MetricsListen == metricsOnMain && c.Access != "" {
		// /metrics answers without a token: on the main listener it would
		// show every client the addresses and versions downloaded and the
		// catalog's size, which the access file hides.
		return c.bad("metrics-listen", "\"main\" serves /metrics to every client without a token, with the addresses and versions downloaded, which access hides\nhint: give metrics a listener of their own on a management address (metrics-listen = \"127.0.0.1:9443\"), or turn them off")
	}
	if c.MaxConns < 0 {
		return c.bad("max-conns", "%d: want a number of connections (0: no cap)", c.MaxConns)
	}
	if c.MaxConnsPerIP < 0 {
		return c.bad("max-conns-per-ip", "%d: want a number of connections (0: no cap)", c.MaxConnsPerIP)
	}
	if _, err := c.sendTimeout(); err != nil {
		return c.bad("send-timeout", "%q: want a duration such as 60s (0: none)", c.SendTimeout)
	}
	if _, err := c.auditMaxSize(); err != nil {
		return c.bad("audit-log-max-size", "%q: want a size such as 100MiB", c.AuditLogMaxSize)
	}
	if c.AuditLogKeep < 0 || c.AuditLogKeep > 1000 {
		return c.bad("audit-log-keep", "%d: want a number of rotated files, 1 to 1000", c.AuditLogKeep)
	}
	if d, err := c.urlTTL(); err != nil || d < time.Second || d > 7*24*time.Hour {
		return c.bad("download-url-ttl", "%q: want a duration from 1s to 168h, such as 15m", c.DownloadURLTTL)
	}
	if c.Usage != "" && c.Usage != usageOn && c.Usage != usageOff {
		return c.bad("usage", "%q: want on or off", c.Usage)
	}
	if d, err := c.usageInterval(); err != nil || d < time.Second || d > time.Hour {
		return c.bad("usage-flush", "%q: want a duration from 1s to 1h, such as 10s", c.UsageFlush)
	}
	if n, err := c.objectCacheMax(); err != nil || n < 1<<20 {
		return c.bad("object-cache-max", "%q: want a size of 1MiB or more, such as 1GiB", c.ObjectCacheMax)
	}
	if c.ObjectRedirect != "" && c.ObjectRedirect != "on" && c.ObjectRedirect != "off" {
		return c.bad("object-redirect", "%q: want on or off", c.ObjectRedirect)
	}
	return nil
}

// The values of the usage setting.
const (
	usageOn  = "on"
	usageOff = "off"
)

// usageInterval is the parsed usage-flush (default protocol.DefaultUsageInterval).
func (c *ServeConfig) usageInterval() (time.Duration, error) {
	if c.UsageFlush == "" {
		return protocol.DefaultUsageInterval, nil
	}
	return time.ParseDuration(c.UsageFlush)
}

// auditMaxSize is the parsed audit-log-max-size (default
// DefaultAuditMaxSize).
func (c *ServeConfig) auditMaxSize() (int64, error) {
	if c.AuditLogMaxSize == "" {
		return access.DefaultAuditMaxSize, nil
	}
	return bundle.ParseSize(c.AuditLogMaxSize)
}

// objectCacheMax is the parsed object-cache-max (default
// store.DefaultCacheMax).
func (c *ServeConfig) objectCacheMax() (int64, error) {
	if c == nil || c.ObjectCacheMax == "" {
		return store.DefaultCacheMax, nil
	}
	return bundle.ParseSize(c.ObjectCacheMax)
}

// urlTTL is the parsed download-url-ttl (default DefaultURLTTL).
func (c *ServeConfig) urlTTL() (time.Duration, error) {
	if c.DownloadURLTTL == "" {
		return access.DefaultURLTTL, nil
	}
	return time.ParseDuration(c.DownloadURLTTL)
}

// metricsOnMain is the metrics-listen value that serves /metrics on the
// main TLS listener, to every client that can reach it.
const metricsOnMain = "main"

func (c *ServeConfig) sendTimeout() (time.Duration, error) {
	if c.SendTimeout == "" || c.SendTimeout == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.SendTimeout)
	if err == nil && d < 0 {
		err = errors.New("negative")
	}
	return d, err
}

// connLimits are the connection limits of the main listener, with the
// trusted proxies exempt from the per-address cap (a load balancer carries
// every client on its own address).
func (c *ServeConfig) connLimits(proxies *access.TrustedProxies) ops.ConnLimits {
	d, _ := c.sendTimeout()
	return ops.ConnLimits{Max: c.MaxConns, PerIP: c.MaxConnsPerIP, SendTimeout: d, Exempt: proxies.CarriesMany}
}

// Level is the parsed log-level.
func (c *ServeConfig) Level() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(c.LogLevel))
	return l, err
}

// TLSOptions are the TLS settings (Dir and Names still to fill; see
// CertNames).
func (c *ServeConfig) TLSOptions(log *slog.Logger) certs.Options {
	return certs.Options{Mode: c.TLS, ACMECA: c.ACMECA, ACMECARoot: c.ACMECARoot, ACMEEmail: c.ACMEEmail,
		ACMEHTTPPort: c.ACMEHTTPPort, ACMETLSALPNPort: c.ACMETLSALPNPort, CertFile: c.Cert, KeyFile: c.Key, Logger: log}
}

// certNames are the names the certificate must cover: the hostnames (or
// localhost) and the listen address's IPs.
func (c *ServeConfig) certNames() []string {
	names := append([]string{}, c.Hostname...)
	if len(names) == 0 {
		names = append(names, "localhost")
	}
	names = append(names, listenAddrs(c.Listen)...)
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// AnsweredNames are the names and addresses clients can reach serve by, as
// its certificates cover them: certNames, and with the built-in CA the
// machine's own names and addresses too. Each needs its redirect URI at
// the identity provider ('serve --check-config' lists them), since a
// sign-in's callback is on the name the request used.
func (c *ServeConfig) AnsweredNames() []string {
	if c.TLS == "" || c.TLS == certs.ModeLocal {
		return certs.MachineNames(c.certNames())
	}
	return c.certNames()
}

// RedirectURIs are the sign-in redirect URIs serve uses: one per name and
// address it answers to (AnsweredNames). 'serve --check-config' lists
// them (marking those in the login block's redirect_uris) and serve logs
// them at start: one list.
func (c *ServeConfig) RedirectURIs() []string {
	return access.LoginRedirectURIs(c.AnsweredNames(), c.Listen)
}

// WriteHCL prints the configuration as a --config file, each setting with
// where it came from.
func (c *ServeConfig) WriteHCL(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("# airgap serve: effective configuration\n")
	v := reflect.ValueOf(c).Elem()
	fields := settingFields()
	names := settingNames()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, name := range names {
		fv := v.Field(fields[name])
		ty, err := gocty.ImpliedType(fv.Interface())
		if err != nil {
			return err
		}
		if fv.Kind() == reflect.Slice && fv.Len() == 0 {
			ty = cty.List(cty.String)
		}
		cv, err := gocty.ToCtyValue(fv.Interface(), ty)
		if err != nil {
			return err
		}
		if fv.Kind() == reflect.Slice && fv.Len() == 0 {
			cv = cty.ListValEmpty(cty.String)
		}
		fmt.Fprintf(&b, "%-*s = %s # %s\n", width, name, hclwrite.TokensForValue(cv).Bytes(), c.Sources[name])
	}
	_, err := w.Write(b.Bytes())
	return err
}

// changedSettings lists the settings whose values differ between two
// configurations.
func changedSettings(a, b *ServeConfig) []string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	fields := settingFields()
	var out []string
	for _, name := range settingNames() {
		fa, fb := va.Field(fields[name]), vb.Field(fields[name])
		if fa.Kind() == reflect.Slice && fa.Len() == 0 && fb.Len() == 0 {
			continue
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// listen opens one of serve's listeners (ops.Listen), naming in its errors
// where the setting that chose addr came from.
func listen(what, setting string, cfg *ServeConfig, addr string) (net.Listener, error) {
	where := "--" + setting
	if cfg != nil {
		where = cfg.where(setting)
	}
	return ops.Listen(what, where, addr)
}
