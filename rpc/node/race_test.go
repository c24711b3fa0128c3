//go:build race

package node_test

// raceEnabled: the race detector slows the EVM about tenfold; the load
// tests scale their work by it.
const raceEnabled = true
