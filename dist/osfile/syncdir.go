package osfile

import "os"

// SyncDir fsyncs the directory dir, so that a rename or link into it is
// on disk (the last step of an atomic write).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
