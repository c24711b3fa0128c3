package sched

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestNetYieldPollsNetwork: on one P, a request that arrived while a
// goroutine computes is served at that goroutine's next yield (the poll
// readies both, and the request runs first), nearly always, and always
// within three. runtime.Gosched alone would not: the scheduler runs the
// yielding goroutine again from the global run queue without polling the
// network.
func TestNetYieldPollsNetwork(t *testing.T) {
	y, err := NewNetYield()
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	const rounds = 20
	first := 0 // rounds served at the first yield
	for round := range rounds {
		var served atomic.Bool
		parked := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			close(parked)
			var b [1]byte
			if _, err := server.Read(b[:]); err == nil {
				served.Store(true)
			}
		}()
		<-parked
		for range 3 { // let the reader reach its wait in the poller
			runtime.Gosched()
		}
		// From here the goroutine never blocks: only its yields can let
		// the runtime see the byte.
		if _, err := client.Write([]byte{byte(round)}); err != nil {
			t.Fatal(err)
		}
		yields := 0
		for !served.Load() && yields < 3 {
			y.Yield()
			yields++
		}
		if !served.Load() {
			t.Fatalf("round %d: the request was not served within %d yields", round, yields)
		}
		if yields == 1 {
			first++
		}
		<-done
	}
	// The runtime takes the global run queue first at one schedule in 61.
	if first < rounds-2 {
		t.Fatalf("the request was served at the first yield in %d of %d rounds, want %d or more", first, rounds, rounds-2)
	}
}

// TestNetYieldNil: without a pipe, yield is runtime.Gosched.
func TestNetYieldNil(t *testing.T) {
	var y *NetYield
	y.Yield()
	y.Close()
}
