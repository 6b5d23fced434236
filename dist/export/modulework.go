package export

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// isTmpName reports whether name is one tmpPath makes: 16 hex digits.
func isTmpName(name string) bool {
	if len(name) != 16 {
		return false
	}
	for _, r := range name {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// Module sources are fetched and unpacked in <cache>/tmp/module-<pid>-*,
// removed when the module is done or fails. A killed export cannot remove
// its own, so each run removes, when it starts, every module-<pid>-*
// directory whose process no longer exists (another export sharing the
// cache keeps its own while it runs), and any module-* directory untouched
// for staleModuleWork (a PID reused by an unrelated process, or a name
// without a PID from an older airgap). The files of tmpPath a killed
// export left are removed once untouched for abandonedAfter.
const staleModuleWork = 24 * time.Hour

func moduleWorkDir(cacheDir string) (string, error) {
	return os.MkdirTemp(filepath.Join(cacheDir, "tmp"), fmt.Sprintf("module-%d-", os.Getpid()))
}

func tidyModuleWork(cacheDir string, now time.Time) {
	dir := filepath.Join(cacheDir, "tmp")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if isTmpName(ent.Name()) && ent.Type().IsRegular() {
			// A file of tmpPath: a download or document not yet checked
			// and admitted (up to MaxPackageSize: a mirror's package with
			// an h1: hash only), left by a killed export. A live export
			// writes its own without pause (a download idle for minutes
			// is cut off) and renames or removes it at once.
			if fi, err := ent.Info(); err == nil && now.Sub(fi.ModTime()) > abandonedAfter {
				os.Remove(filepath.Join(dir, ent.Name()))
			}
			continue
		}
		rest, ok := strings.CutPrefix(ent.Name(), "module-")
		if !ok {
			rest, ok = strings.CutPrefix(ent.Name(), "gate-") // a gate's version command (toolVersion)
		}
		if !ok || !ent.IsDir() {
			continue
		}
		stale := false
		if p, _, ok := strings.Cut(rest, "-"); ok {
			if pid, err := strconv.Atoi(p); err == nil && pid > 0 && pid != os.Getpid() && !processAlive(pid) {
				stale = true
			}
		}
		if fi, err := ent.Info(); err == nil && now.Sub(fi.ModTime()) > staleModuleWork {
			stale = true
		}
		if stale {
			os.RemoveAll(filepath.Join(dir, ent.Name()))
		}
	}
}

// staleGateWork is how old a gate's work tree must be to be taken as left
// by a killed export: longer than any run may take (MaxGateTimeout).
const staleGateWork = MaxGateTimeout + time.Hour

// tidyGateWork removes the gate work trees (<cache>/gates/GATE/KEY, see
// runGate) that a killed export left and no run has reused since: a
// gate's next run on the same entry removes its own at once, this catches
// the trees of gates or entries that do not come back.
func tidyGateWork(cacheDir string, now time.Time) {
	gates, _ := filepath.Glob(filepath.Join(cacheDir, "gates", "*", "*"))
	for _, p := range gates {
		fi, err := os.Lstat(p)
		if err == nil && fi.IsDir() && now.Sub(fi.ModTime()) > staleGateWork {
			removeTree(p)
		}
	}
}
