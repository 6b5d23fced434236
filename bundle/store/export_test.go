package store

import "bytes"

// SetTestHooks sets the import's fault-injection points for the duration of
// a test: before is called when every blob is staged and checked, just before
// the new index is written; beforeCommit when every new blob has been placed,
// just before the index is renamed into place.
func SetTestHooks(before, beforeCommit func()) (reset func()) {
	testHookBeforeIndex, testHookBeforeCommit = before, beforeCommit
	return func() { testHookBeforeIndex, testHookBeforeCommit = nil, nil }
}

// SetRoomHook runs fn once an import found room for its blobs, before it
// stages them (another writer filling the disk meanwhile).
func SetRoomHook(fn func()) (reset func()) {
	testHookAfterRoom = fn
	return func() { testHookAfterRoom = nil }
}

// DecodeUsage and EncodeUsage are the usage file's reader and writer,
// without the file (the fuzz target).
func DecodeUsage(data []byte) (*Usage, error) {
	return decodeUsage(bytes.NewReader(data), "usage.json")
}

// EncodeUsage is encodeUsage.
func EncodeUsage(u *Usage) ([]byte, error) { return encodeUsage(u) }
