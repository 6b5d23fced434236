package registrytest

import (
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist/getter/archivetest"
)

// The hostile archive builders live in archivetest (the getter's own tests
// use them and cannot import this package); these names keep them here too.
type Entry = archivetest.Entry

var (
	LinkChain = archivetest.LinkChain
	Tar       = archivetest.Tar
	TarGz     = archivetest.TarGz
	Zip       = archivetest.Zip
	Snapshot  = archivetest.Snapshot
	Changed   = archivetest.Changed
)

// AddRawArchive publishes data, as is, at https://archives.example.com/name.
func (in *Internet) AddRawArchive(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(in.Dir, "archives", name)
	bundletest.WriteFile(t, p, data)
	in.mu.Lock()
	in.files["archives.example.com/"+name] = p
	in.mu.Unlock()
	return "https://archives.example.com/" + name
}
