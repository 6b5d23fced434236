package server

// RenderedEntries is the number of answers in the cache of the current
// catalog snapshot (for tests).
func (s *Server) RenderedEntries() int64 { return s.current().nRender.Load() }
