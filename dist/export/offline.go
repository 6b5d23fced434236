package export

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	version "github.com/hashicorp/go-version"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// Offline is what the offline store's inventory (--have) tells an export
// beyond the blobs it has: the versions it has withdrawn, which the export
// leaves out of version constraints (a bundle carrying one is refused
// whole by the import), and the publisher keys it pins, retired and
// revoked, so that a provider signed by another key is flagged here, not
// found out across the gap.
type Offline struct {
	Desc        string
	withdrawn   map[string]store.Withdrawn // by dist.VersionKey
	keys        map[string]*dist.NamespaceKeys
	revoked     map[string]store.RevokedKey
	stationOnly bool
}

func newOffline(path string) *Offline {
	return &Offline{Desc: "the offline store's inventory " + filepath.Base(path), withdrawn: map[string]store.Withdrawn{},
		keys: map[string]*dist.NamespaceKeys{}, revoked: map[string]store.RevokedKey{}}
}

// wants reports whether key is an inventory field Offline reads.
func (o *Offline) wants(key string) bool {
	switch key {
	case "withdrawn", "publisher_keys", "revoked_keys", "policy":
		return true
	}
	return false
}

// decode reads the inventory field key with decode (the bounded stream's).
func (o *Offline) decode(key string, decode func(any) error) error {
	switch key {
	case "withdrawn":
		var ws []store.Withdrawn
		if err := decode(&ws); err != nil {
			return err
		}
		for _, w := range ws {
			o.withdrawn[w.Key()] = w
		}
	case "publisher_keys":
		var ns []dist.NamespaceKeys
		if err := decode(&ns); err != nil {
			return err
		}
		for i := range ns {
			o.keys[ns[i].Namespace] = &ns[i]
		}
	case "revoked_keys":
		var rs []store.RevokedKey
		if err := decode(&rs); err != nil {
			return err
		}
		for _, r := range rs {
			o.revoked[r.Fingerprint] = r
		}
	case "policy":
		var p struct {
			PublisherKeyApprovals string `json:"publisher_key_approvals"`
		}
		if err := decode(&p); err != nil {
			return err
		}
		o.stationOnly = p.PublisherKeyApprovals == store.KeyApprovalsStation
	}
	return nil
}

// withdrawnOf splits the versions of addr into those the offline store
// has not withdrawn and those it has (unless the request reinstates
// them), sorted.
func (o *Offline) withdrawnOf(kind, addr string, versions []string, reinstated map[string]bool) (keep []string, out []store.Withdrawn) {
	if o == nil || len(o.withdrawn) == 0 {
		return versions, nil
	}
	for _, v := range versions {
		k := dist.VersionKey(addr, v)
		if w, ok := o.withdrawn[k]; ok && w.Kind == kind && !reinstated[k] {
			out = append(out, w)
			continue
		}
		keep = append(keep, v)
	}
	return keep, out
}

// leaveOutWithdrawn takes the versions the offline store withdrew out of
// a request's candidates, noting each that the constraint would have
// matched; it fails, naming the withdrawals, when that leaves nothing.
func (e *exporter) leaveOutWithdrawn(kind, addr, why, at string, versions []string, r selector) ([]string, error) {
	keep, out := e.opt.Offline.withdrawnOf(kind, addr, versions, e.reinstated())
	if len(out) == 0 {
		return versions, nil
	}
	byVersion := map[string]store.Withdrawn{}
	var names []string
	for _, w := range out {
		byVersion[w.Version] = w
		names = append(names, w.Version)
	}
	matched := selectVersions(names, r.constraints, 0, true)
	for _, v := range matched {
		w := byVersion[v]
		line := fmt.Sprintf("%s %s %s: the offline store withdrew it (%s); left out of %s", kind, addr, v, w.Reason, constraintString(r.constraints))
		e.opt.Log("notice: %s", dist.Printable(line))
		e.mu.Lock()
		e.res.LeftOut = append(e.res.LeftOut, line)
		e.mu.Unlock()
	}
	if len(matched) == 0 || len(selectVersions(keep, r.constraints, r.latest, r.all)) > 0 {
		return keep, nil
	}
	where := why
	if at != "" {
		where = at
	}
	var lines, hints []string
	for _, v := range matched {
		w := byVersion[v]
		lines = append(lines, fmt.Sprintf("%s: %s (withdrawn %s by bundle %s)", v, w.Reason, w.Time.UTC().Format(time.DateOnly), w.Bundle.Short()))
		hints = append(hints, store.ReinstateHint(w))
	}
	return nil, fmt.Errorf("%s: %s %s: every version matching %s is withdrawn in %s:\n  %s\nhint: change the versions (the store keeps withdrawn versions out), or, if the version is safe again, add to the manifest:\n%s\nnothing was downloaded",
		where, kind, addr, constraintString(r.constraints), e.opt.Offline.Desc, dist.PrintableLines(strings.Join(lines, "\n  ")), strings.Join(hints, "\n"))
}

// selector is what selects a request's versions.
type selector struct {
	constraints version.Constraints
	latest      int
	all         bool
}

// reinstated is the set of versions the request's reinstate blocks lift.
func (e *exporter) reinstated() map[string]bool {
	out := map[string]bool{}
	for _, r := range e.req.Reinstate {
		for _, k := range r.Keys() {
			out[k] = true
		}
	}
	return out
}

// keyWarnings flags each key of the export that the offline store will
// not accept without an approval: new for a namespace that has another
// publisher key (unless declared and the store takes declarations), the
// first for its namespace in a store that takes keys only from the
// station, or retired or revoked there.
func (o *Offline) keyWarnings(keys []PublisherKey) []string {
	if o == nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		fp := verify.GroupFingerprint(k.Fingerprint)
		if r, ok := o.revoked[k.Fingerprint]; ok {
			out = append(out, fmt.Sprintf("the offline side has seen key %s revoked (%s); it will refuse the providers this key signs for %s", fp, r.Revoked.UTC().Format(time.DateOnly), k.Namespace))
			continue
		}
		n := o.keys[k.Namespace]
		if n == nil || !n.HasTier(dist.TrustPublisher) {
			if o.stationOnly && k.Trust == dist.TrustPublisher {
				// Such a store pins no first key by first use.
				out = append(out, fmt.Sprintf("the offline side has no publisher key for %s yet and takes its first one only from the station; this bundle will be refused unless approved there (key %s signs %s: once checked with the publisher, run 'airgap approve --key STATION.key.asc --accept-publisher-key %s BUNDLE' there)",
					k.Namespace, fp, strings.Join(k.Providers, ", "), k.Fingerprint))
			}
			continue // first use (or a namespace of site re-signed providers only)
		}
		if pin := n.Find(k.Fingerprint); pin != nil {
			if pin.Retired != nil {
				out = append(out, fmt.Sprintf("the offline side retired key %s for %s on %s; it will refuse the providers this key signs anew", fp, k.Namespace, pin.Retired.UTC().Format(time.DateOnly)))
			}
			continue
		}
		if k.Declared && !o.stationOnly {
			continue
		}
		var pinned []string
		for _, p := range n.Keys {
			if p.Tier == dist.TrustPublisher && p.Retired == nil {
				pinned = append(pinned, verify.GroupFingerprint(p.Fingerprint))
			}
		}
		sort.Strings(pinned)
		out = append(out, fmt.Sprintf("the offline side pins %s for %s; this bundle will be refused unless approved at the station (key %s signs %s: once checked with the publisher, run 'airgap approve --key STATION.key.asc --accept-publisher-key %s BUNDLE' there)",
			strings.Join(pinned, ", "), k.Namespace, fp, strings.Join(k.Providers, ", "), k.Fingerprint))
	}
	return out
}
