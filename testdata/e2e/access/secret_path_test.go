package access

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestClientSecretPathOthersCanWrite: serve reads the identity
// provider's client secret only on a path that no user but root and its
// own may change (OpenSSH's StrictModes). As root, a client_secret_file
// in a directory another user owns, where that user linked /etc/shadow
// (root's, readable by its group: the file's own rule takes it), is
// refused naming the directory and its owner; so is one in a directory
// anyone may write (no sticky bit), and one reached through a link into
// such a directory. A sticky /tmp-like directory and a root-owned one its
// group (this process's) may write, as a Kubernetes volume under an
// fsGroup, are accepted: serve goes on to the identity provider.
func TestClientSecretPathOthersCanWrite(t *testing.T) {
	rootOnly(t)
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	base := t.TempDir()
	check := func(secretFile string) (string, int) {
		t.Helper()
		access := filepath.Join(t.TempDir(), "access.hcl")
		os.WriteFile(access, []byte(loginAccess(dexIssuer(harness.FreePort(t), false), secretFile, "", "12h")), 0o600)
		_, stderr, code := harness.RunSplit(t, "", nil, "serve", "--store", root, "--access", access, "--listen", "127.0.0.1:8443", "--check-config")
		return stderr, code
	}
	mkdir := func(name string, mode os.FileMode, uid, gid int) string {
		d := filepath.Join(base, name)
		os.Mkdir(d, 0o700)
		os.Chown(d, uid, gid)
		os.Chmod(d, mode)
		return d
	}
	const nobody = 65534

	// Another user's directory, with /etc/shadow linked in as the secret.
	theirs := mkdir("theirs", 0o755, nobody, nobody)
	os.Symlink("/etc/shadow", filepath.Join(theirs, "secret"))
	os.Lchown(filepath.Join(theirs, "secret"), nobody, nobody)
	if stderr, code := check(filepath.Join(theirs, "secret")); code != 1 || !strings.Contains(stderr, theirs+" on the way to it is owned by uid 65534") ||
		!strings.Contains(stderr, "hint: keep it in a directory only root and the user airgap runs as") {
		t.Errorf("a client secret linked to /etc/shadow in another user's directory: %d\n%s", code, stderr)
	}

	// A directory anyone may write, named directly and through a link.
	open := mkdir("open", 0o777, 0, 0)
	os.WriteFile(filepath.Join(open, "secret"), []byte("s\n"), 0o600)
	if stderr, code := check(filepath.Join(open, "secret")); code != 1 || !strings.Contains(stderr, open+" on the way to it has mode 0777") {
		t.Errorf("a client secret in a directory anyone may write: %d\n%s", code, stderr)
	}
	os.Symlink(filepath.Join(open, "secret"), filepath.Join(base, "link"))
	if stderr, code := check(filepath.Join(base, "link")); code != 1 || !strings.Contains(stderr, open+" on the way to it has mode 0777") {
		t.Errorf("a client secret reached through a link into a directory anyone may write: %d\n%s", code, stderr)
	}

	// Accepted: sticky, and root's with a group this process is in. The
	// check then reaches the (absent) identity provider.
	sticky := mkdir("sticky", os.ModeSticky|0o777, 0, 0)
	group := mkdir("group", os.ModeSetgid|0o770, 0, os.Getegid())
	for _, d := range []string{sticky, group} {
		os.WriteFile(filepath.Join(d, "secret"), []byte("s\n"), 0o600)
		if stderr, code := check(filepath.Join(d, "secret")); code != 1 || strings.Contains(stderr, "on the way to it") || !strings.Contains(stderr, "login: discovery at") {
			t.Errorf("a client secret in %s: %d\n%s", d, code, stderr)
		}
	}
}

// TestSecretPathsOthersCanWrite: every file serve trusts by path — the
// access file, the TLS key of --tls files, the login block's ca_file (the
// identity provider's trust anchor) and the store's URL keys — is read,
// as root, only on a path no user but root and serve's own could change
// (OpenSSH's StrictModes, as for the client secret above). Each reached
// through a directory another user owns, or one anyone may write without
// the sticky bit, keeps serve from starting (or --check-config from
// passing), naming the directory and with a hint; the same files in a
// directory of root's are taken.
func TestSecretPathsOthersCanWrite(t *testing.T) {
	rootOnly(t)
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	base := t.TempDir()
	const nobody = 65534
	mkdir := func(name string, mode os.FileMode, uid int) string {
		d := filepath.Join(base, name)
		os.Mkdir(d, 0o700)
		os.Chown(d, uid, uid)
		os.Chmod(d, mode)
		return d
	}
	theirs, open, ours := mkdir("theirs", 0o755, nobody), mkdir("open", 0o777, 0), mkdir("ours", 0o755, 0)
	// serve runs to its refusal, or is stopped after 20 s.
	serve := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, harness.Bin, append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}, args...)...).CombinedOutput()
		if ctx.Err() != nil {
			return string(out), -1
		}
		return string(out), harness.ExitCode(err)
	}
	refused := func(what, out string, code int, dir, why string) {
		t.Helper()
		if code <= 0 || !strings.Contains(out, dir+" on the way to it "+why) || !strings.Contains(out, "hint: keep it in a directory only root and the user airgap runs as") {
			t.Errorf("%s: exit %d, want a refusal naming %s (%s) with a hint:\n%s", what, code, dir, why, out)
		}
	}

	// The access file.
	for _, d := range []string{theirs, open, ours} {
		harness.CreateToken(t, filepath.Join(d, "access.hcl"), "ci", "**")
	}
	out, code := serve("--store", root, "--access", filepath.Join(theirs, "access.hcl"), "--check-config")
	refused("an access file in another user's directory", out, code, theirs, "is owned by uid 65534")
	out, code = serve("--store", root, "--access", filepath.Join(open, "access.hcl"), "--check-config")
	refused("an access file in a directory anyone may write", out, code, open, "has mode 0777")
	os.Symlink(filepath.Join(theirs, "access.hcl"), filepath.Join(ours, "link.hcl"))
	out, code = serve("--store", root, "--access", filepath.Join(ours, "link.hcl"), "--check-config")
	refused("an access file linked from root's directory into another user's", out, code, theirs, "is owned by uid 65534")
	if out, code := serve("--store", root, "--access", filepath.Join(ours, "access.hcl"), "--check-config"); code != 0 {
		t.Errorf("an access file in root's directory: exit %d\n%s", code, out)
	}

	// The TLS key of --tls files.
	tlsPair(t, filepath.Join(ours, "cert.pem"), filepath.Join(ours, "key.pem"))
	key, _ := os.ReadFile(filepath.Join(ours, "key.pem"))
	os.WriteFile(filepath.Join(theirs, "key.pem"), key, 0o600)
	out, code = serve("--store", root, "--tls", "files", "--cert", filepath.Join(ours, "cert.pem"), "--key", filepath.Join(theirs, "key.pem"))
	refused("a TLS key in another user's directory", out, code, theirs, "is owned by uid 65534")

	// The login block's ca_file.
	secret := filepath.Join(ours, "secret")
	os.WriteFile(secret, []byte("s\n"), 0o600)
	for _, d := range []string{theirs, ours} {
		os.WriteFile(filepath.Join(d, "ca.pem"), []byte("not yet read\n"), 0o644)
		os.WriteFile(filepath.Join(d, "login.hcl"), []byte(loginAccess(dexIssuer(harness.FreePort(t), false), secret, filepath.Join(d, "ca.pem"), "12h")), 0o600)
	}
	out, code = serve("--store", root, "--access", filepath.Join(ours, "login.hcl"), "--check-config")
	if !strings.Contains(out, "holds no PEM certificate") {
		t.Errorf("a ca_file in root's directory: read as a CA file (it holds none)? exit %d\n%s", code, out)
	}
	os.Rename(filepath.Join(theirs, "login.hcl"), filepath.Join(ours, "login-theirs.hcl"))
	out, code = serve("--store", root, "--access", filepath.Join(ours, "login-theirs.hcl"), "--check-config")
	refused("a ca_file in another user's directory", out, code, theirs, "is owned by uid 65534")

	// The URL keys: a store reached through another user's directory.
	moved := filepath.Join(theirs, "store")
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	out, code = serve("--store", moved, "--access", filepath.Join(ours, "access.hcl"))
	refused("URL keys in a store in another user's directory", out, code, theirs, "is owned by uid 65534")
}

// tlsPair writes a self-signed certificate for 127.0.0.1 and its key.
func tlsPair(t *testing.T, certPath, keyPath string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(k)
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}
