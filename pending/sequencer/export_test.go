package sequencer

// CutTries is the open block builder's count of cut state trie updates
// (pending.Builder.CutTries), for the external tests.
func (s *Sequencer) CutTries() uint64 { return s.b.CutTries() }
