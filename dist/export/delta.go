package export

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// MaxHaveSize bounds the 'airgap inventory --json' document --have reads
// (store.MaxInventorySize: about 80 bytes per blob, over three million
// blobs; the set of digests it becomes takes at most about 500 MiB).
const MaxHaveSize = store.MaxInventorySize

// haveJSON bounds --have: MaxHaveSize, values nested at most 16 deep (an
// inventory nests 9).
var haveJSON = dist.JSONLimit{MaxBytes: MaxHaveSize, MaxDepth: 16}

// DeltaBase is what the offline side already has: the blobs of a previous
// bundle (--since) or of an offline store's inventory (--have).
type DeltaBase struct {
	Desc    string // for messages
	base    string
	bundles []string
	have    map[verify.Digest]bool
	imports []store.ImportEntry // --have: the inventory's import history
}

// ReadDeltaBase reads the blobs of a previous bundle (since, which must be
// signed by key) or of an offline store's inventory (have: ReadHave).
// Only the previous bundle's manifest is read, not its blobs.
func ReadDeltaBase(since, have string, key *openpgp.Entity) (*DeltaBase, error) {
	if since != "" {
		return readSince(since, key)
	}
	ds, _, err := ReadHave(have)
	return ds, err
}

// ReadHave reads an offline store's inventory ('airgap inventory --json'):
// what a delta may omit (DeltaBase), and what the store withdrew and pins
// (Offline).
func ReadHave(have string) (*DeltaBase, *Offline, error) {
	f, err := os.Open(have)
	if err != nil {
		return nil, nil, fmt.Errorf("--have: %w", err)
	}
	defer f.Close()
	ds := &DeltaBase{have: map[verify.Digest]bool{}, base: "inventory"}
	o := newOffline(have)
	if err := ds.readHave(f, o); err != nil {
		return nil, nil, fmt.Errorf("--have %s: not an 'airgap inventory --json' document: %w", have, err)
	}
	ds.Desc = fmt.Sprintf("the inventory %s (%d blobs)", filepath.Base(have), len(ds.have))
	return ds, o, nil
}

// readHave streams what --have needs of an inventory (within haveJSON):
// its blob digests and the bundles its imports came from (with when: an
// export from a store compares them with its own, notOwnStore), one at a
// time, and into o its withdrawals, publisher keys, revocations and how
// new keys are approved; the rest is skipped token by token.
func (ds *DeltaBase) readHave(r io.Reader, o *Offline) error {
	js := haveJSON.Stream(r)
	err := js.Object(func(key string) error {
		if o.wants(key) {
			return o.decode(key, js.Decode)
		}
		switch key {
		case "blobs":
			return js.Array(func() error {
				var d verify.Digest
				if err := js.Decode(&d); err != nil {
					return err
				}
				ds.have[d] = true
				return nil
			})
		case "imports":
			return js.Array(func() error {
				var e store.ImportEntry
				err := js.Object(func(key string) error {
					switch key {
					case "bundle":
						return js.Decode(&e.Bundle)
					case "time":
						return js.Decode(&e.Time)
					}
					return js.Skip()
				})
				ds.bundles = append(ds.bundles, string(e.Bundle))
				ds.imports = append(ds.imports, e)
				return err
			})
		}
		return js.Skip()
	})
	if err != nil {
		return err
	}
	return js.End()
}

func readSince(since string, key *openpgp.Entity) (*DeltaBase, error) {
	kr := openpgp.EntityList{key}
	rc, err := bundle.Open(since, kr)
	if err != nil {
		return nil, fmt.Errorf("--since: %w", err)
	}
	defer rc.Close()
	br, err := bundle.NewReader(rc, kr)
	if err != nil {
		return nil, fmt.Errorf("--since %s: %w\nhint: --since takes a bundle signed by the same --sign-key", since, err)
	}
	defer br.Close()
	pm := br.Manifest()
	ds := &DeltaBase{have: map[verify.Digest]bool{}, base: string(br.ID()),
		Desc:    fmt.Sprintf("%s (bundle %s)", filepath.Base(since), br.ID().Short()),
		bundles: []string{filepath.Base(since) + " (" + string(br.ID()) + ")"}}
	for _, b := range pm.Blobs {
		ds.have[b.Digest] = true
	}
	if pm.Delta != nil {
		ds.bundles = append(ds.bundles, pm.Delta.BaseBundles...)
	}
	return ds, nil
}

// Apply marks the blobs the base has as omitted, makes m a delta, and
// returns how many blobs it omitted.
//
// A provider version's SHA256SUMS is carried whenever its signature is,
// even if the base has it: after a publisher's key rotation the version
// is re-signed over the same SHA256SUMS, and without those bytes the
// station could check neither the new signature nor whose key made it
// (so it could neither forecast the key change nor approve the key). It
// costs one small file per re-signed version. Bundles that carry a blob
// their base has are nothing new: every airgap reads them.
func (ds *DeltaBase) Apply(m *bundle.Manifest) int {
	keep := map[verify.Digest]bool{}
	for _, p := range m.Catalog.Providers {
		if !ds.have[p.ShasumsSig] {
			keep[p.Shasums] = true
		}
	}
	n := 0
	for i := range m.Blobs {
		if d := m.Blobs[i].Digest; ds.have[d] && !keep[d] {
			m.Blobs[i].Omitted = true
			n++
		}
	}
	m.Delta = &bundle.Delta{Base: ds.base, BaseBundles: ds.bundles}
	return n
}
