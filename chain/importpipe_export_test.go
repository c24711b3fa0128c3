package chain

// SetImportPrefetch turns the import pipeline's trie prefetch on or off
// (by default on only with more than two CPUs) until restore is called.
func SetImportPrefetch(on bool) (restore func()) {
	old := importPrefetch
	importPrefetch = on
	return func() { importPrefetch = old }
}
