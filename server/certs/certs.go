package certs

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/server/internal/filestamp"
	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
)

// TLS modes.
const (
	ModeLocal = "local"
	ModeACME  = "acme"
	ModeFiles = "files"
)

// Options configure New.
type Options struct {
	Mode  string
	Dir   string   // where certificates and the local CA live (STORE/tls)
	Names []string // DNS names and IP addresses the certificate must cover
	// acme
	ACMECA     string // directory URL
	ACMECARoot string // PEM file of the ACME server's root, if private
	ACMEEmail  string
	// Ports the ACME challenge solvers listen on when not 80 (HTTP-01) and
	// 443 (TLS-ALPN-01), e.g. behind port forwarding; 0 means the default.
	ACMEHTTPPort, ACMETLSALPNPort int
	// Turn one challenge type off (e.g. when port 80 is closed).
	ACMENoHTTP01, ACMENoTLSALPN01 bool
	// files
	CertFile, KeyFile string
	Logger            *slog.Logger
}

// Setup is the result of New.
type Setup struct {
	Config *tls.Config
	CAPEM  []byte // the local CA certificate (local mode only)
	stop   func()
	// for reloads (SetNames, ReloadFiles)
	magic *certmagic.Config
	cache *certmagic.Cache
	names []string
	files *reloader
	// local: the built-in CA issues the certificates, which then cover
	// the machine's own names too (withMachineNames), at start and after
	// every reload.
	local bool
	// covered: the names certificates are maintained for, for sniWatch
	// (replaced whole by a reload).
	covered atomic.Pointer[map[string]bool]
}

// setCovered records names as the ones certificates are maintained for.
func (t *Setup) setCovered(names []string) {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = true
	}
	t.covered.Store(&m)
}

// CertNames are the names a certificate must cover for the configured
// names: with the local CA, the machine's own names too.
func (t *Setup) CertNames(names []string) []string {
	if t.local {
		return withMachineNames(names)
	}
	return names
}

// Stop ends certificate maintenance.
func (t *Setup) Stop() {
	if t.stop != nil {
		t.stop()
	}
}

// New obtains certificates for opt.Names and returns a TLS config that
// keeps them renewed. Local and ACME certificates are managed by certmagic
// (with a custom issuer for the built-in CA); files are reloaded on change.
func New(ctx context.Context, opt Options) (*Setup, error) {
	switch opt.Mode {
	case ModeFiles:
		return filesTLS(opt)
	case ModeLocal, "":
		ca, err := LoadOrCreateCA(opt.Dir)
		if err != nil {
			return nil, err
		}
		opt.Names = withMachineNames(opt.Names)
		st, err := certmagicTLS(ctx, opt, ca)
		if err != nil {
			return nil, err
		}
		st.CAPEM, st.local = ca.PEM, true
		if opt.Logger != nil {
			opt.Logger.Info("local TLS certificates cover", "names", strings.Join(opt.Names, ","))
		}
		st.setCovered(opt.Names)
		st.Config.GetCertificate = sniWatch(st.Config.GetCertificate, st, opt.Logger)
		return st, nil
	case ModeACME:
		if opt.ACMECA == "" {
			return nil, errors.New("--tls acme needs --acme-ca URL (your internal ACME directory, e.g. step-ca or Vault)")
		}
		return certmagicTLS(ctx, opt, nil)
	}
	return nil, fmt.Errorf("unknown TLS mode %q (want local, acme or files)", opt.Mode)
}

func certmagicTLS(ctx context.Context, opt Options, ca *LocalCA) (*Setup, error) {
	var cfg *certmagic.Config
	nop := zap.NewNop()
	cache := certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: func(certmagic.Certificate) (*certmagic.Config, error) { return cfg, nil },
		Logger:           nop,
	})
	cfg = certmagic.New(cache, certmagic.Config{
		Storage:           &certmagic.FileStorage{Path: filepath.Join(opt.Dir, "certmagic")},
		Logger:            nop,
		DefaultServerName: FirstDNSName(opt.Names),
		OCSP:              certmagic.OCSPConfig{DisableStapling: true},
	})
	if ca != nil {
		cfg.Issuers = []certmagic.Issuer{ca}
	} else {
		iss := certmagic.ACMEIssuer{CA: opt.ACMECA, Email: opt.ACMEEmail, Agreed: true, Logger: nop,
			AltHTTPPort: opt.ACMEHTTPPort, AltTLSALPNPort: opt.ACMETLSALPNPort, CertObtainTimeout: 2 * time.Minute,
			DisableHTTPChallenge: opt.ACMENoHTTP01, DisableTLSALPNChallenge: opt.ACMENoTLSALPN01}
		if opt.ACMECARoot != "" {
			// A trust anchor: whoever could change the path to it would
			// choose whom serve takes for the ACME server.
			pemData, err := osfile.ReadSafe(opt.ACMECARoot, "it says whom serve trusts as the ACME server", maxPEMFile)
			if err != nil {
				return nil, fmt.Errorf("--acme-ca-root: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pemData) {
				return nil, fmt.Errorf("--acme-ca-root %s: no PEM certificate in it", opt.ACMECARoot)
			}
			iss.TrustedRoots = pool
		}
		cfg.Issuers = []certmagic.Issuer{certmagic.NewACMEIssuer(cfg, iss)}
	}
	if err := cfg.ManageSync(ctx, opt.Names); err != nil {
		cache.Stop()
		return nil, fmt.Errorf("obtaining certificates for %s: %w", strings.Join(opt.Names, ", "), err)
	}
	tc := cfg.TLSConfig()
	tc.MinVersion = tls.VersionTLS12
	return &Setup{Config: tc, stop: cache.Stop, magic: cfg, cache: cache, names: opt.Names}, nil
}

// FirstDNSName is the first of names that is not an IP address (or the
// first name).
func FirstDNSName(names []string) string {
	for _, n := range names {
		if net.ParseIP(n) == nil {
			return n
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

// LocalCA is the built-in certificate authority kept in STORE/tls. It is a
// certmagic.Issuer.
type LocalCA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte
}

const (
	caCertFile = "ca.pem"
	caKeyFile  = "ca.key"
	leafLife   = 90 * 24 * time.Hour
)

// CAFingerprint is the SHA-256 fingerprint of a certificate, colon-separated.
func CAFingerprint(c *x509.Certificate) string {
	s := sha256.Sum256(c.Raw)
	h := strings.ToUpper(hex.EncodeToString(s[:]))
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// caDir is where the CA lives inside the TLS directory: created whole in a
// temporary directory and renamed into place, so concurrent first starts
// (serve and 'airgap ca', say) agree on one CA.
func caDir(dir string) string { return filepath.Join(dir, "ca") }

// readCA reads the local CA of dir without creating one. 'airgap ca' runs
// it as root in a directory serve's user owns: the files are read through
// the directory's descriptor (osfile.Dir: no link followed, a FIFO refused
// at once, 64 KiB at most each).
func readCA(dir string) (*LocalCA, error) {
	d, err := osfile.OpenDir(filepath.Dir(dir), filepath.Base(dir), filepath.Base(caDir(dir)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w\nhint: make %s a directory (not a link) owned by the user serve runs as", err, dir)
	}
	defer d.Close()
	dir = caDir(dir)
	certPEM, err := d.ReadFile(caCertFile, maxCAFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := d.ReadFile(caKeyFile, maxCAFile)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("local CA in %s: unreadable PEM", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("local CA certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("local CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("local CA key cannot sign")
	}
	return &LocalCA{Cert: cert, Key: signer, PEM: certPEM}, nil
}

var caMu sync.Mutex

// maxCAFile bounds what readCA reads of each file (a P-256 key and its
// certificate are under 1 KiB each).
const maxCAFile = 64 << 10

// maxPEMFile bounds --key and --acme-ca-root as they are read (a key, or
// a CA bundle, is a few KiB; the whole system bundle about 200 KiB).
const maxPEMFile = 1 << 20

// LoadOrCreateCA returns the local CA in dir, creating it on first use (key
// mode 0600, written atomically). The directory is made if absent, then
// opened once (osfile.OpenDir: a link in a folder another user can write
// is not followed) and everything after is done through that descriptor:
// the owner and mode judged are the opened directory's, and the CA is
// written into a new directory in it and renamed into place there
// (osfile.Dir.MakeDirAtomic), so swapping a folder on the way for a link
// between the check and the writes redirects nothing. Root does not make
// the CA in a directory another user owns (serve, running as that user,
// could not read its key) nor in one anyone may write.
func LoadOrCreateCA(dir string) (*LocalCA, error) {
	caMu.Lock()
	defer caMu.Unlock()
	if ca, err := readCA(dir); err == nil {
		return ca, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d, err := osfile.OpenDir(filepath.Dir(dir), filepath.Base(dir))
	if err != nil {
		return nil, fmt.Errorf("%w\nhint: make %s a directory (not a link) owned by the user serve runs as", err, dir)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, err
	}
	if uid, _, ok := osfile.Owner(fi); ok && os.Geteuid() == 0 && uid != 0 {
		return nil, fmt.Errorf("%s has no local CA yet and belongs to uid %d, not root\nhint: start 'airgap serve' once (it makes the CA), or run this as the user serve runs as", dir, uid)
	}
	if perm := fi.Mode(); perm&0o002 != 0 && perm&os.ModeSticky == 0 {
		return nil, fmt.Errorf("%s has mode %04o: any user may write it, and could put a CA of their own in place of the one made here\nhint: chmod 700 %s", dir, perm.Perm(), dir)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          randSerial(),
		Subject:               pkix.Name{CommonName: "airgap local CA (" + host + ")", Organization: []string{"airgap"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := d.MakeDirAtomic(filepath.Base(caDir(dir)), []osfile.NewFile{
		{Name: caKeyFile, Data: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), Perm: 0o600},
		{Name: caCertFile, Data: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Perm: 0o644},
	}); err != nil {
		// Another process created it first: use theirs.
		if ca, rerr := readCA(dir); rerr == nil {
			return ca, nil
		}
		return nil, err
	}
	return readCA(dir)
}

func randSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

// IssuerKey implements certmagic.Issuer.
func (ca *LocalCA) IssuerKey() string {
	return "airgap-local-" + strings.ReplaceAll(CAFingerprint(ca.Cert), ":", "")[:16]
}

// Issue implements certmagic.Issuer: a 90-day server certificate for the
// CSR's names, signed by the local CA.
func (ca *LocalCA) Issue(_ context.Context, csr *x509.CertificateRequest) (*certmagic.IssuedCertificate, error) {
	leaf, err := ca.Sign(csr.PublicKey, csr.DNSNames, csr.IPAddresses, leafLife)
	if err != nil {
		return nil, err
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf}), ca.PEM...)
	return &certmagic.IssuedCertificate{Certificate: chain}, nil
}

// Sign issues a server certificate for pub.
func (ca *LocalCA) Sign(pub any, dns []string, ips []net.IP, life time.Duration) ([]byte, error) {
	cn := FirstDNSName(dns)
	if cn == "" && len(ips) > 0 {
		cn = ips[0].String()
	}
	tmpl := &x509.Certificate{
		SerialNumber: randSerial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(life),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	return x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
}

// filesTLS serves --cert/--key, reloading them when either file changes.
func filesTLS(opt Options) (*Setup, error) {
	if opt.CertFile == "" || opt.KeyFile == "" {
		return nil, errors.New("--tls files needs --cert and --key")
	}
	r := &reloader{cert: opt.CertFile, key: opt.KeyFile, log: opt.Logger}
	if _, err := r.get(); err != nil {
		return nil, err
	}
	return &Setup{files: r, Config: &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return r.get() },
	}}, nil
}

type reloader struct {
	cert, key string
	log       *slog.Logger
	mu        sync.Mutex
	cur       *tls.Certificate
	stamp     string
	checked   time.Time
}

func (r *reloader) get() (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil && time.Since(r.checked) < time.Second {
		return r.cur, nil
	}
	r.checked = time.Now()
	stamp, err := filestamp.Of(r.cert, r.key)
	if err != nil {
		if r.cur != nil {
			return r.cur, nil
		}
		return nil, err
	}
	if stamp == r.stamp && r.cur != nil {
		return r.cur, nil
	}
	c, err := loadPair(r.cert, r.key)
	if err != nil {
		if r.cur != nil {
			if r.log != nil {
				r.log.Warn("keeping the previous certificate: reload failed", "err", err)
			}
			return r.cur, nil
		}
		return nil, fmt.Errorf("loading --cert/--key: %w", err)
	}
	if r.cur != nil && r.log != nil {
		r.log.Info("reloaded certificate", "cert", r.cert)
	}
	r.cur, r.stamp = &c, stamp
	return r.cur, nil
}

// SetNames makes certmagic maintain certificates for exactly names.
func (t *Setup) SetNames(ctx context.Context, names []string) (added, removed []string, err error) {
	for _, n := range names {
		if !slices.Contains(t.names, n) {
			added = append(added, n)
		}
	}
	var gone []certmagic.SubjectIssuer
	for _, n := range t.names {
		if !slices.Contains(names, n) {
			removed = append(removed, n)
			gone = append(gone, certmagic.SubjectIssuer{Subject: n})
		}
	}
	if len(added) > 0 {
		mctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := t.magic.ManageSync(mctx, added); err != nil {
			return nil, nil, fmt.Errorf("obtaining certificates for %s: %w", strings.Join(added, ", "), err)
		}
	}
	if len(gone) > 0 {
		t.cache.RemoveManaged(gone)
	}
	t.names = append([]string(nil), names...)
	if t.covered.Load() != nil {
		t.setCovered(t.names)
	}
	return added, removed, nil
}

// loadPair loads --cert and --key, the key only on a path no user but
// root and serve's own could change (osfile.CheckSafePath): serve, run as
// root, would otherwise serve with whatever key that user linked in.
func loadPair(cert, key string) (tls.Certificate, error) {
	keyPEM, err := osfile.ReadSafe(key, "it is the TLS server's private key", maxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM, err := os.ReadFile(cert)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// force loads cert and key now and serves them from the next handshake.
func (r *reloader) force(cert, key string) error {
	c, err := loadPair(cert, key)
	if err != nil {
		return fmt.Errorf("loading %s and %s: %w", cert, key, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cert, r.key, r.cur = cert, key, &c
	r.stamp, r.checked = "", time.Time{}
	if st, err := filestamp.Of(cert, key); err == nil {
		r.stamp, r.checked = st, time.Now()
	}
	return nil
}

func (r *reloader) notAfter() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil || r.cur.Leaf == nil {
		return time.Time{}
	}
	return r.cur.Leaf.NotAfter
}

// FromFiles reports whether the certificate comes from files (ModeFiles).
func (t *Setup) FromFiles() bool { return t.files != nil }

// Managed reports whether certmagic maintains the certificates (ModeLocal
// and ModeACME), whose names SetNames changes.
func (t *Setup) Managed() bool { return t.magic != nil }

// ReloadFiles loads the certificate files now (SIGHUP) and serves them from
// the next handshake.
func (t *Setup) ReloadFiles(cert, key string) error { return t.files.force(cert, key) }

// NotAfter is the expiry of the certificate loaded from files.
func (t *Setup) NotAfter() time.Time { return t.files.notAfter() }
