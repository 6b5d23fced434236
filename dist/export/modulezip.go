package export

import (
	"io"
	"os"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/modzip"
	"github.com/airgap/airgap/verify"
)

// moduleZip writes the deterministic zip of a module archive into the cache
// and adds it to the bundle (role module-zip), so that the offline side can
// offer the module to OpenTofu's oci:// sources without converting anything.
func (e *exporter) moduleZip(archive string) (verify.Digest, int64, error) {
	in, err := os.Open(archive)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	tmp := e.tmpPath()
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", 0, err
	}
	// No fsync: like every cache file it is hashed again when the bundle
	// is written.
	dg := verify.NewDigester()
	err = modzip.ZipFromTarGz(in, io.MultiWriter(out, dg))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", 0, err
	}
	d, n := dg.Digest(), dg.Size()
	p, err := e.admit(tmp, d) // over whatever the cache holds under d
	if err != nil {
		return "", 0, err
	}
	e.addBlob(d, n, dist.RoleModuleZip, p)
	return d, n, nil
}
