package server

// RenderedEntries is the number of answers in the cache of the current
// catalog snapshot, and what they are counted as (for tests).
func (s *Server) RenderedEntries() int64 { return s.current().nRender.Load() }

// RenderedBytes is what the cache of the current snapshot is counted as.
func (s *Server) RenderedBytes() int64 { return s.current().nBytes.Load() }
