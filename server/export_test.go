package server

import (
	"os"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// RenderedEntries is the number of answers in the cache of the current
// catalog snapshot, and what they are counted as (for tests).
func (s *Server) RenderedEntries() int64 { n, _ := s.answers.Cached(); return n }

// RenderedBytes is what the cache of the current snapshot is counted as.
func (s *Server) RenderedBytes() int64 { _, b := s.answers.Cached(); return b }

// catStore serves a catalog and no blobs (the route table's tests).
type catStore struct{ cat *dist.Catalog }

func (c catStore) Catalog() *dist.Catalog                   { return c.cat }
func (c catStore) OpenBlob(verify.Digest) (*os.File, error) { return nil, os.ErrNotExist }
