// Package load drives JSON-RPC load against one node for cmd/benchgeth.
//
// # Model
//
// A Job is a list of request bodies (one JSON-RPC message each, drawn in
// turn), a transport (HTTP POSTs over kept-alive connections, or
// websocket messages) and a Check that decides whether a response is a
// success. Every response that is not (an HTTP status other than 200, a
// JSON-RPC error where a result is expected, a batch element in error, a
// simulated call that failed, a timeout) is counted as a failure.
//
// OpenLoop sends at a fixed rate whatever the server does: request i is due
// at start + i/rate and its latency is measured from that intended time, so
// time spent queued behind a slow server (in the client or the server) is
// part of the latency instead of being hidden by a client that waits. A
// request that cannot be sent or answered before the run's deadline
// (Duration + Grace) is a failure. ClosedLoop keeps Connections requests in
// flight, each sent as soon as the previous answer arrived: its rate is the
// saturation throughput.
//
// Server CPU is read from /proc/PID/stat before and after the measured
// window; CPU per request is its delta over the responses received.
//
// # Concurrency
//
// A run owns its connections and goroutines and returns only after every
// goroutine has finished. Latencies go to per-worker HdrHistograms merged at
// the end; counters are per worker too, so workers share nothing but the
// ticket channel.
package load
